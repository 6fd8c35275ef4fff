"""Offline chat turns: what the `offline` provider answers to CHAT_TURN (SPEC §5, seed 003).

A documented product mode (it runs when no API key is configured), not a test
double. No model, no network, no randomness, no clock: the same prompt always
gives the same JSON, and that JSON passes prompts/schemas/chat_turn.schema.json.
CHAT_TURN (services.py) names `chat_turn` as its `offline_handler`, which registers
it with the offline provider (llm_platform.offline).

The evidence chunks are the library's best passages of the session's files for the
question and the session's artifacts (artifacts.py), each titled with its key in
brackets ("[passage:ops.md::S2] ops.md › Staffing", "[digest:aggregate] Aggregate
digest", "[report:<uuid>] Report: …", "[supply:<uuid>] Note from alice"). Every line
of a digest ("[fact] … (a.txt::S1)") and every sentence of the other chunks and of
the context supplied for this turn is a candidate (the terms of llm_platform.terms).

- The message has no content terms ("hi", "thanks"): a fixed sentence saying
  what the assistant does with this session.
- Unless a person supplied context for this turn, when one or two candidates
  answer the question (`answer_scores`: what it asks for, the figures it names,
  enough of its rarer terms): the answer is those sentences in their own words,
  citing their SourceRefs or else their chunk's key.
- Otherwise, when context was supplied for this turn (even if every slot was
  skipped: it is never asked for twice), or the turn may not ask (`may_request`
  false: forced, or the request expired): the best three candidates by shared
  terms, the best of what a person supplied among them; below half of the
  terms, it first says what the session does not cover.
- Otherwise: no answer, and `needs` ask a person for a note on the uncovered
  terms, and for the document the message names unless the prompt carries it
  whole. A need is anchored to the most relevant report, findings or supply only
  when the prompt lacks part of it (omitted, cut or summarised by the token
  budget): the system attaches what it holds itself, and re-attaching what was
  read whole would keep the request from ever reaching a person.

A bare follow-up ("and in 2023?", fewer than two terms) borrows the terms of
the previous user message in `history`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from context_app.digests.items import ITEM_KINDS
from llm_platform.base import ProviderError
from llm_platform.extractive import chunk_text, uncovered_phrases
from llm_platform.ir.budget import SUMMARY_PREFIX
from llm_platform.ir.render import CONTENT_HEADER, TRUNCATED_MARKER
from llm_platform.task_envelope import evidence_chunks, read_task
from llm_platform.terms import (
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    STOP_WORDS,
    base_term,
    comparison_key,
    content_terms,
    cut_text,
    question_terms,
    quote_list,
    split_sentences,
    stem,
)

from ..turn_text import FOLLOW_UP_TERMS, sentence_key

# --- limits (chat_turn.schema.json) ------------------------------------------------------

ANSWER_COVERAGE = 0.5  # share of the message's terms the session must mention to answer unasked
MAX_ANSWER_SENTENCES = 3
MAX_SENTENCE_CHARS = 500
MAX_ANSWER_CHARS = 6000
MAX_CITATIONS = 20
MAX_CITATION_CHARS = 300
MAX_NEEDS = 5
MAX_NEED_CHARS = 500
MAX_ANCHOR_CHARS = 300

GREETING = (
    "I answer questions about this session from its files, digests and reports, citing where each point comes "
    "from; when the session holds nothing on a question, I ask for the missing context instead of guessing."
)

# --- words -------------------------------------------------------------------------------

# A message made only of these (and stop words) is small talk: "hi", "thanks a lot", "ok, great".
COURTESY_WORDS = frozenset(
    """hi hello hey hiya howdy greetings thanks thank thx ty cheers ok okay alright great good nice cool perfect
    fine sure yes yeah yep no nope bye goodbye morning afternoon evening please welcome got lot""".split()
)
# Words about the conversation or the session's artifacts, not about the topic asked: they never count as terms.
_TALK_WORDS = """hi hello hey thanks thank thx please ok okay say says said tell told explain describe show give
    mention mentions mentioned summarise summarize summary session sessions digest digests report reports finding
    findings note notes source sources""".split()
_DOCUMENT_WORD = re.compile(r"\b(spreadsheet|attachment|attached|file|document)s?\b", re.I)
_DOCUMENT_NOUNS = ("spreadsheet", "document", "file", "attachment")  # the most specific the message uses names it
_EXTENSIONS = ("pdf", "docx", "xlsx", "csv", "md", "txt")
_FILENAME = re.compile(r"(?<![\w.-])([\w][\w.-]*\.(?:" + "|".join(_EXTENSIONS) + r"))\b", re.I)
_IGNORED_TERMS = frozenset(
    content_terms(" ".join([*_TALK_WORDS, "spreadsheet", "attachment", "attached", "file", "document", *_EXTENSIONS]))
)

_WORD = re.compile(r"[^\W_]+")
_KEY = re.compile(r"^\[(?P<key>[^\]]+)\]\s*")
_ITEM_LINE = re.compile(r"^\[(?P<kind>[a-z]+)\]\s+(?P<text>\S.*)$")
_REF_GROUP = re.compile(r"\(([^()]*::S[0-9]+[^()]*)\)")
_REF = re.compile(r"^(?P<ref>.+?::S[0-9]+)(?:::.*)?$")
_BARE_REF = re.compile(r"(?<![\w.-])([\w][\w.-]*::S[0-9]+)")
_REFS_ONLY = re.compile(r"^\([^()]*::S[0-9]+[^()]*\)[.;,]?$")
_INDEX_LINE = re.compile(r'^\[\d+\] (?P<sid>\S+) \| [^|\n]+ \| (?P<title>"(?:[^"\\\n]|\\.)*")', re.M)
_ITEM_INSIDE = re.compile(r"\s+(?=\[(?:" + "|".join(sorted(ITEM_KINDS)) + r")\]\s)")
PASSAGE_KEY = "passage:"  # conversation_app.artifacts.question_passages
_FILE_KEYS = ("digest:", PASSAGE_KEY)  # artifacts made of the session's files (see _relevant_key)
_CLOSED = tuple(".!?…)]\"”'’")


# --- candidates --------------------------------------------------------------------------


@dataclass
class _Candidate:
    text: str  # as the answer shows it: a digest line without its "[kind] " marker
    terms: frozenset[str]
    order: int  # supplies first (given for this turn), then the evidence in rank order
    supplied: bool  # in the context supplied for this turn
    given: bool  # supplied by a person (not "auto" by the system): used even when it shares no term
    keys: list[str] = field(default_factory=list)  # keys of the chunks that hold it, in order
    # Terms of what surrounds it where it stands: its chunk's title (a passage's section heading), the
    # sentence before it ("The cause was a corroded joint." after "A main burst on Harbour Road …") and the
    # earlier sentences of its paragraph (span).
    context: frozenset[str] = frozenset()
    # A passage sentence that ends with a colon announces what follows ("… run the venv module as a script
    # with the directory path:" before "python3 -m venv tutorial-env"): the next one, said with it.
    announced: str = ""
    before: frozenset[str] = frozenset()  # terms of the sentence before it in a passage (part of `context`)
    prior: str = ""  # that sentence


def chunk_key(title: str) -> str:
    """The bracketed key a chunk title starts with ("[report:1f…] Report: …" → "report:1f…"), or ""."""
    match = _KEY.match(title.strip())
    return match.group("key").strip() if match else ""


def _pieces(text: str) -> list[str]:
    """A chunk's or supply's candidates: each digest item line whole, the other lines' sentences."""
    # A chunk the token budget summarised holds its digest items on one line: one line each again.
    text = _ITEM_INSIDE.sub("\n", text)
    pieces: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        for sentence in split_sentences("\n".join(prose)):
            if pieces and prose and _REFS_ONLY.match(sentence):
                pieces[-1] = f"{pieces[-1]} {sentence}"  # "… fell. (a.txt::S4)": the refs belong to the sentence
            else:
                pieces.append(sentence)
        prose.clear()

    for line in text.split("\n"):
        item = _ITEM_LINE.match(line.strip())
        if item and item.group("kind") in ITEM_KINDS:
            flush()
            pieces.append(re.sub(r"\s+", " ", item.group("text")).strip())
        else:
            prose.append(line)
    flush()
    return pieces


def source_refs(text: str) -> list[str]:
    """The SourceRefs (name::S<n>, any "::hint" dropped) a candidate contains, each once, in order."""
    refs: list[str] = []
    for group in _REF_GROUP.findall(text):
        for piece in group.split(","):
            match = _REF.match(piece.strip())
            if match:
                refs.append(match.group("ref"))
    refs += _BARE_REF.findall(_REF_GROUP.sub(" ", text))
    return list(dict.fromkeys(refs))


def _supplies(value: object) -> tuple[list[tuple[str, bool]], bool]:
    """The texts supplied for this turn (skips left out), each with whether a person gave it; and whether
    anything was supplied at all (a request was answered, if only by skipping)."""
    entries = [s for s in (value if isinstance(value, list) else []) if isinstance(s, dict)]
    texts = [
        (s["text"].strip(), s.get("kind") != "auto")
        for s in entries
        if s.get("kind") != "skip" and isinstance(s.get("text"), str) and s["text"].strip()
    ]
    return texts, bool(entries)


def _chunk_texts(prompt: str) -> list[tuple[str, str, str]]:
    """(key, title without its key, text) of the evidence chunks that carry text: omitted ones and title-only
    placeholders left out."""
    chunks = []
    for chunk in evidence_chunks(prompt):
        text = chunk_text(chunk)
        title = _KEY.sub("", chunk.title.strip(), count=1)
        if text and comparison_key(text) != comparison_key(title):
            chunks.append((chunk_key(chunk.title), title, text))
    return chunks


def _candidates(chunks: list[tuple[str, str, str]], supplied: list[tuple[str, bool]]) -> list[_Candidate]:
    """Every distinct candidate; one that appears in several places is one candidate with all their keys."""
    by_text: dict[str, _Candidate] = {}
    normal_chunks = [(key, comparison_key(text)) for key, _title, text in chunks]

    def add(piece: str, key: str, *, supplied: bool, given: bool, context: str = "", before: str = "") -> None:
        normal = comparison_key(piece)
        if not normal:
            return
        candidate = by_text.get(normal)
        if candidate is None:
            terms = frozenset(content_terms(_REF_GROUP.sub(" ", piece)))  # its words, not its references
            candidate = by_text[normal] = _Candidate(piece, terms, len(by_text), supplied, given)
        candidate.given = candidate.given or given
        candidate.context |= frozenset(content_terms(_REF_GROUP.sub(" ", context)))  # words, not references
        candidate.before |= frozenset(content_terms(_REF_GROUP.sub(" ", before)))
        candidate.prior = candidate.prior or before
        if key and key not in candidate.keys:
            candidate.keys.append(key)

    for text, given in supplied:
        for piece in _pieces(text):
            # A supply the session also holds as a chunk ([supply:<uuid>] …) is cited by that chunk's key.
            holders = [key for key, normal in normal_chunks if key and comparison_key(piece) in normal]
            for key in holders or [""]:
                add(piece, key, supplied=True, given=given)
    for key, title, text in chunks:
        previous = ""
        paragraph: list[str] = []  # the sentences before this one in its span (a paragraph or list item)
        span: list[str] = []
        for piece in _pieces(text):
            refs = source_refs(piece)
            if refs != span:
                paragraph, span = [], refs
            announcing = by_text.get(comparison_key(previous)) if _announces(previous) else None
            if announcing is not None and not announcing.announced:
                announcing.announced = piece
            context = "\n".join([title, previous, *paragraph])
            add(piece, key, supplied=False, given=False, context=context, before=previous)
            # In a passage a sentence continues the one before, and the sentences of a paragraph share its
            # subject ("A main burst on Harbour Road … The cause was … Repairs cost …"); a digest's items
            # stand alone.
            if key.startswith(PASSAGE_KEY):
                previous = piece
                if refs:
                    paragraph.append(piece)
            else:
                previous = ""
    return list(by_text.values())


def _announces(sentence: str) -> bool:
    """Whether a sentence ends with a colon (its SourceRefs aside): it introduces what comes next."""
    return _REF_GROUP.sub(" ", sentence).strip().rstrip(" .").endswith(":")


def _index_titles(prompt: str) -> dict[str, str]:
    """source id → title, from the Context Index (it names every source, also those whose text was omitted)."""
    index = prompt.partition(CONTENT_HEADER)[0]
    titles: dict[str, str] = {}
    for match in _INDEX_LINE.finditer(index):
        try:
            title = json.loads(match.group("title"))
        except ValueError:
            continue
        if isinstance(title, str):
            titles[match.group("sid")] = title
    return titles


# --- terms -------------------------------------------------------------------------------


def _is_small_talk(message: str) -> bool:
    words = [word.lower() for word in _WORD.findall(message)]
    return all(word in COURTESY_WORDS or word in OVERLAP_STOP_WORDS or word in QUESTION_WORDS for word in words)


# "What happens to …", "what goes wrong if …": the verbs frame the question, as "what" does; a sentence that
# answers says what happens, in its own words ("… will not be interpreted correctly").
_FRAMING = re.compile(
    r"\bwhat (?:happens|happened|will happen|would happen|goes wrong|went wrong|can go wrong)\b", re.I
)


def _message_terms(message: str) -> list[str]:
    return [term for term in question_terms(_FRAMING.sub("what", message)) if term not in _IGNORED_TERMS]


def _previous_user_message(history: object, message: str) -> str:
    """The last user message of `history` before this one (the current message, if repeated there, skipped)."""
    turns = [t for t in (history if isinstance(history, list) else []) if isinstance(t, dict)]
    texts = [t["content"].strip() for t in turns if t.get("role") == "user" and isinstance(t.get("content"), str)]
    texts = [text for text in texts if text]
    if texts and comparison_key(texts[-1]) == comparison_key(message):
        texts.pop()
    return texts[-1] if texts else ""


# --- the turn ----------------------------------------------------------------------------


def chat_turn(prompt: str) -> dict:
    """One chat turn from the prompt alone: an answer from the session's artifacts, or what to ask a person for."""
    _, inputs = read_task(prompt)
    message = inputs.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ProviderError("CHAT_TURN: INPUT_JSON has no message", retryable=False)
    message = re.sub(r"\s+", " ", message).strip()

    terms = _message_terms(message)
    asked = message
    if len(terms) < FOLLOW_UP_TERMS and not _is_small_talk(message):
        previous = _previous_user_message(inputs.get("history"), message)
        if previous:
            terms = list(dict.fromkeys([*terms, *_message_terms(previous)]))
            asked = f"{message}; {previous}"  # ";" keeps the two messages' phrases apart
    if not terms or _is_small_talk(message):
        return {"answer": GREETING, "citations": [], "needs": []}

    supplied, resumed = _supplies(inputs.get("supplied"))
    candidates = _candidates(_chunk_texts(prompt), supplied)
    wanted = set(terms)
    mentioned = set().union(*(c.terms for c in candidates)) if candidates else set()
    covered = wanted & mentioned
    coverage = len(covered) / len(wanted)
    uncovered = uncovered_phrases(asked, covered | _IGNORED_TERMS) or [message]

    may_request = inputs.get("may_request") is not False
    answering = [] if any(c.given for c in candidates) else _answering(candidates, terms, asked)
    if answering:
        return _answer(answering, [])
    if resumed or not may_request:
        return _answer(_best(candidates, wanted), uncovered if coverage < ANSWER_COVERAGE else [])
    return {"answer": "", "citations": [], "needs": _needs(message, uncovered, candidates, wanted, prompt)}


def _answer(used: list[_Candidate], uncovered: list[str]) -> dict:
    """The candidates `used` in their own words; led by what the session lacks when `uncovered` is given."""
    body = " ".join(_closed(cut_text(c.text, MAX_SENTENCE_CHARS)) for c in _said(used))
    if uncovered:
        quoted = quote_list(uncovered)
        if not used:
            return {
                "answer": f"This session's files, digests and reports say nothing about {quoted}.",
                "citations": [],
                "needs": [],
            }
        from_supply, from_session = any(c.supplied for c in used), any(not c.supplied for c in used)
        if from_supply and from_session:
            closest = "here is what was supplied for it and the closest they hold:"
        elif from_supply:
            closest = "here is what was supplied for it:"
        else:
            closest = "the closest they hold:"
        body = f"This session's files and reports say nothing about {quoted}; {closest} {body}"
    return {"answer": cut_text(body, MAX_ANSWER_CHARS), "citations": _citations(used), "needs": []}


# --- does a candidate answer the question? ----------------------------------------------------
# Calibrated on bench/chat_quality.py's labelled set (bench/results/chat.json); see docs/decisions.md.

ANSWER_SCORE = 0.5  # the weighted share of the question's terms a sentence must hold to answer on its own
CONTEXT_WEIGHT = 0.4  # a term only in the sentence's section heading or the sentence before counts this much
MAX_ANSWERING = 2  # sentences an answer quotes: the answering one, and a second that also answers

_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty hundred "
    "thousand million billion dozen few several"
)
_NUMBER = rf"(?:\d+(?:[.,]\d+)*|an?|{'|'.join(_NUMBER_WORDS.split())})"
_UNIT = r"(?:second|minute|hour|day|night|week|month|year|decade)s?"
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")
_YEAR = r"\b(?:1[5-9]|20)\d\d\b"
_COUNT = rf"(?!{_YEAR}){_NUMBER}"  # a figure that is not a year (nor, see below, a percentage)
_MONEY_WORDS = r"(?:cost|costs|spend|spent|pay|paid|price|budget|worth|charge|fee)"
_CURRENCY = r"(?:[€$£]|(?:euros?|dollars?|pounds?|eur|usd|gbp)\b)"
_MONEY = rf"[€$£]\s?\d|\b\d[\d.,]*\s*(?:k|m|bn|million|billion|thousand)?\s*{_CURRENCY}"
_SHARE = r"\b\d[\d.,]*\s*(?:%|percent\b|per cent\b)"
# "Which months", "what year": asks for a date; the noun names what the answer is, not a word it holds.
_DATE_KIND = re.compile(r"\b(?:what|which) (year|date|month)s?\b", re.I)
_CAUSE_WORDS = r"(?:because|due to|owing to|since|so that|in order to|as a result|caus\w*|reasons?|advantages?)"
_WHY = re.compile(r"^\W*why\b|\bwhat (?:caused|causes|(?:was|is) the (?:cause|reason))\b", re.I)
# What the question asks for, and what a sentence that answers it must hold. A question of another
# kind ("what", "which", "how do I") names no answer type: its terms decide alone.
_ANSWER_TYPES = (
    (re.compile(r"\bhow (?:long|much time)\b", re.I), re.compile(rf"\b{_NUMBER} {_UNIT}\b", re.I)),
    (
        re.compile(r"\bhow (?:often|frequently)\b", re.I),
        re.compile(r"\b(?:every|each|per|daily|weekly|monthly|yearly|annually|hourly|once|twice)\b", re.I),
    ),
    # "How much did it cost": an amount of money; "how many", "how much": a count or quantity (not a year).
    # "By how much did it rise": a change, as a share ("6 percent"), an amount of money or a count.
    (re.compile(r"\bby how much\b", re.I), re.compile(rf"{_SHARE}|{_MONEY}|\b{_COUNT}\b", re.I)),
    (re.compile(rf"\bhow much\b(?=.*\b{_MONEY_WORDS}\b)", re.I), re.compile(_MONEY, re.I)),
    (re.compile(r"\bhow (?:many|much)\b", re.I), re.compile(rf"\b{_COUNT}\b(?!\s*(?:%|percent))", re.I)),
    (_WHY, re.compile(rf"\b{_CAUSE_WORDS}\b", re.I)),
    # "When did/was/will …" asks for a date; "when does the else clause run" for a condition.
    (
        re.compile(rf"\bwhen (?:did|was|were|will|is the next|are the next)\b|{_DATE_KIND.pattern}", re.I),
        re.compile(rf"\b{_MONTH}\b|{_YEAR}"),
    ),
    (re.compile(r"^\W*who\b|\bname of\b", re.I), None),  # a name: see _names
)
_HOW_MANY = re.compile(r"\bhow many ([^\W\d_]+)", re.I)
_COUNT_RE = re.compile(rf"\b{_COUNT}\b(?!\s*(?:%|percent))", re.I)
_COUNTED_WITHIN = 3  # words between a count and what it counts ("42 gate valves")
_CAPITALISED = re.compile(r"\b[A-Z][\w-]+")
_NOT_NAMES = re.compile(rf"^(?:{_MONTH}|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)$")


def _names(text: str, asked: set[str]) -> bool:
    """Whether `text` names someone the question does not: a capitalised word past its first word, or two
    capitalised words in a row, that is not one of the question's own terms."""
    words = [(m.start(), m.group()) for m in _CAPITALISED.finditer(_REF_GROUP.sub("", text))]
    new = [
        (start, word)
        for start, word in words
        if stem(word.lower()) not in asked and word.lower() not in STOP_WORDS and not _NOT_NAMES.match(word)
    ]
    return any(start > 0 for start, _ in new) or len(new) >= 2


_WH_WORD = re.compile(r"\b(?:how|what|which|who|whom|whose|when|where|why)\b", re.I)


def _asks(pattern: re.Pattern, question: str) -> re.Match | None:
    """`pattern`'s match in `question` when it is what the question asks: a wh-word the pattern starts with must
    be the question's first ("Which module measures how long snippets take?" asks for a module, not a
    duration: "how long" there only begins a clause inside it)."""
    match = pattern.search(question)
    if match is None:
        return None
    first = _WH_WORD.search(question)
    wh = _WH_WORD.match(match.group().lstrip(" \t\"'“‘(["))
    if wh and first is not None and not match.start() <= first.start() < match.end():
        return None
    return match


def _holds_answer_type(question: str, text: str, asked: set[str]) -> bool:
    counted = _asks(_HOW_MANY, question)
    if counted:  # "how many households": a count of households ("230 households"), not of something else
        noun = stem(counted.group(1).lower())
        return any(
            noun in [stem(word.lower()) for word in _WORD.findall(text[match.end() :])[:_COUNTED_WITHIN]]
            for match in _COUNT_RE.finditer(text)
        )
    for asks, holds in _ANSWER_TYPES:
        if _asks(asks, question):
            return _names(text, asked) if holds is None else bool(holds.search(text))
    return True


# "How do I …", "how can we …", "how to …" ask for a means: among the sentences that answer, those that give
# one come first — an instruction ("To create a virtual environment, … run …", "by passing -i", "use …") or
# a sentence that introduces a command (it ends with a colon).
_MEANS_ASKED = re.compile(r"\bhow (?:do|can|could|should|would|may|might|must) (?:i|we|you|one)\b|\bhow to\b", re.I)
_MEANS = re.compile(r"^\W*to [^\W\d_]+\b[^,.;]*,|\bby [^\W\d_]+ing\b|\b(?:run|use|type|call|pass|invoke|enter)\b", re.I)


def _gives_means(text: str) -> bool:
    return bool(_MEANS.search(_REF_GROUP.sub(" ", text))) or _announces(text)


def _answering(candidates: list[_Candidate], terms: list[str], question: str) -> list[_Candidate]:
    """The sentences that answer `question` on their own, best first (at most MAX_ANSWERING); [] when none does."""
    scored = [(score, c) for score, c in answer_scores(candidates, terms, question) if score >= ANSWER_SCORE]
    if _MEANS_ASKED.search(question):  # a stable sort: by score within each group
        scored.sort(key=lambda item: not _gives_means(item[1].text))
    distinct: dict[str, _Candidate] = {}
    for _score, candidate in scored:
        distinct.setdefault(sentence_key(candidate.text), candidate)
    return list(distinct.values())[:MAX_ANSWERING]


_DEMONSTRATIVE = re.compile(r"\b(?:this|these|that|those|such) ([^\W\d_]+)", re.I)
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")


def _refers_back(candidate: _Candidate) -> bool:
    """Whether the sentence names a thing of the sentence before it with a demonstrative ("this list").
    Quoted words are left out: in quoted speech ("write this data …") a demonstrative points within the quote."""
    text = _QUOTED.sub(" ", candidate.text)
    return any(stem(noun.lower()) in candidate.before for noun in _DEMONSTRATIVE.findall(text))


_DO_SUPPORT = re.compile(r"\b(?:do|does|did)(?:n[’']?t)?\b", re.I)


# Words of a pair that tell two things apart: a sentence about the night crew does not answer a question
# about the day crew, however much else the two share.
_OPPOSITES = """day night; morning evening; summer winter; spring autumn; north south; east west; upper lower;
    inner outer; first last; old new; public private; internal external; input output; minimum maximum;
    increase decrease; import export; success failure; upstream downstream; weekday weekend; inbound outbound;
    indoor outdoor; domestic foreign; male female"""
_OPPOSITE = {
    stem(one): stem(other) for pair in _OPPOSITES.split(";") for one, other in [pair.split(), reversed(pair.split())]
}


def _contrasts(asked: list[str], held: frozenset[str]) -> bool:
    """Whether a sentence lacks a term of the question and holds its opposite ("night crew" for "day crew")."""
    return any(term not in held and _OPPOSITE.get(term) in held for term in asked)


class _Forms(NamedTuple):
    """A candidate's terms, before and context (see _Candidate) with verbs in their base form."""

    terms: frozenset[str]
    before: frozenset[str]
    context: frozenset[str]


def answer_scores(candidates: list[_Candidate], terms: list[str], question: str) -> list[tuple[float, _Candidate]]:
    """The candidates that could answer `question`, with their score, best first.

    A sentence could when it holds what the question asks for (a duration for "how long",
    a count of households for "how many households", a date for "when did", a name for
    "who") and every figure the question names. Its score is the share of the question's
    terms it holds, each weighted by its rarity among the candidates (inverse document
    frequency): a rare term the files never use ("mayor") weighs more than the common ones
    a near miss shares.
    """
    if not candidates or not terms:
        return []
    # Figures must occur as written (see below). A question with "did"/"does" puts its verb in the base form
    # ("did costs rise?" of "costs rose"): then a verb matches in any form. Without one, the question keeps
    # the statement's form ("who wrote …" of "… wrote …"), and "wrote" is no match for "written a package".
    base = base_term if _DO_SUPPORT.search(question) else str
    # "Which months": the answer says "March", not "month" (_DATE_KIND).
    kind = {stem(noun.lower()) for noun in _DATE_KIND.findall(question)}
    terms = list(dict.fromkeys(base(term) for term in terms if not term.isdigit() and term not in kind))
    if not terms:
        return []
    total = len(candidates)
    forms = {id(c): _Forms(*(frozenset(map(base, t)) for t in (c.terms, c.before, c.context))) for c in candidates}
    frequency = Counter(term for f in forms.values() for term in f.terms if term in terms)
    weight = {t: math.log(1 + (total - frequency[t] + 0.5) / (frequency[t] + 0.5)) for t in terms}
    whole = sum(weight.values())
    asked = set(terms)
    figures = set(_FIGURE.findall(question))
    # A reason is given right after the claim it explains ("It is good practice to use the with keyword … The
    # advantage is that the file is properly closed …"): for a why question, the sentence before a sentence
    # that gives a cause is that claim, and its terms count in full.
    # Likewise a sentence that takes up a noun of the one before with a demonstrative ("… a similar list of the
    # installed packages." then "A common convention is to put this list in a requirements.txt file"): the two
    # say one thing.
    why = bool(_WHY.search(question))
    scored = []
    for candidate in candidates:
        form = forms[id(candidate)]
        own = form.terms | form.before if why or _refers_back(candidate) else form.terms
        held = sum(weight[t] for t in terms if t in own)
        held += CONTEXT_WEIGHT * sum(weight[t] for t in terms if t in form.context - own)
        if (
            figures <= set(_FIGURE.findall(candidate.text))
            and _holds_answer_type(question, candidate.text, asked)
            and not _contrasts(terms, form.terms)
        ):
            scored.append((held / whole, candidate))
    scored.sort(key=lambda item: (-item[0], item[1].order))
    return scored


def _best(candidates: list[_Candidate], wanted: set[str]) -> list[_Candidate]:
    """The top candidates by shared terms, then order. What a person supplied counts even when it shares no
    term, and the best of it is always among those used: they gave it for this question."""
    eligible = [c for c in candidates if c.given or wanted & c.terms]
    ranked = sorted(eligible, key=lambda c: (-len(wanted & c.terms), c.order))
    # The same sentence held by a digest, the report and a node's findings is told once.
    distinct: dict[str, _Candidate] = {}
    for candidate in ranked:
        distinct.setdefault(sentence_key(candidate.text), candidate)
    ranked = list(distinct.values())
    used = ranked[:MAX_ANSWER_SENTENCES]
    best_given = next((c for c in ranked if c.given), None)
    if best_given is not None and best_given not in used:
        used = [*used[: MAX_ANSWER_SENTENCES - 1], best_given]
    return used


def _closed(sentence: str) -> str:
    return sentence if sentence.endswith(_CLOSED) else f"{sentence}."


def _said(used: list[_Candidate]) -> list[_Candidate]:
    """The candidates `used`, each preceded by the sentence it refers back to ("… a similar list …" before "…
    put this list in a requirements.txt file") and followed by the one it announces (_Candidate.announced)."""
    said: list[_Candidate] = []
    keys = {sentence_key(c.text) for c in used}

    def say(text: str, candidate: _Candidate) -> None:
        if sentence_key(text) not in keys:
            keys.add(sentence_key(text))
            said.append(_Candidate(text, frozenset(), candidate.order, False, False, candidate.keys))

    for candidate in used:
        if candidate.prior and _refers_back(candidate):
            say(candidate.prior, candidate)
        said.append(candidate)
        if candidate.announced:
            say(candidate.announced, candidate)
    return said


def _citations(used: list[_Candidate]) -> list[str]:
    cited: list[str] = []
    for candidate in _said(used):
        cited += source_refs(candidate.text) or candidate.keys[:1]
    cited = [ref for ref in dict.fromkeys(cited) if len(ref) <= MAX_CITATION_CHARS]
    return cited[:MAX_CITATIONS]


def _needs(message: str, uncovered: list[str], candidates: list[_Candidate], wanted: set[str], prompt: str) -> list:
    """A note on the uncovered terms, anchored to the most relevant artifact the prompt lacks in full; and the
    document the message names, unless the prompt already carries it whole."""
    quoted = quote_list(uncovered)
    pronoun = "it" if len(uncovered) == 1 else "them"
    note = {
        "kind": "note",
        "description": cut_text(
            f"Context on {quoted}: none of this session's files, digests or reports mention {pronoun}. "
            "Paste a note or attach a document.",
            MAX_NEED_CHARS,
        ),
    }
    artifacts = _artifacts(prompt)
    anchor = _relevant_key(candidates, wanted, artifacts)
    if anchor:
        note["anchor"] = anchor
    needs = [note]
    filenames = list(dict.fromkeys(_FILENAME.findall(message)))
    for name in filenames:
        holder = next((key for key in artifacts if name.lower() in key.lower()), "")
        if holder and artifacts[holder].whole:
            continue  # the session holds it and the prompt carries all of it: it was read, and says nothing
        need = {
            "kind": "file",
            "description": cut_text(f"The document the question refers to: “{name}”.", MAX_NEED_CHARS),
        }
        if holder and len(holder) <= MAX_ANCHOR_CHARS:
            need["anchor"] = holder
        needs.append(need)
    words = {word.lower().replace("attached", "attachment") for word in _DOCUMENT_WORD.findall(message)}
    noun = next((noun for noun in _DOCUMENT_NOUNS if noun in words), "")
    if noun and not filenames:
        needs.append({"kind": "file", "description": f"The {noun} the question refers to: attach it."})
    return needs[:MAX_NEEDS]


@dataclass(frozen=True)
class _Artifact:
    title: str
    whole: bool  # the prompt carries all its text (not omitted, cut or summarised by the token budget)


def _artifacts(prompt: str) -> dict[str, _Artifact]:
    """key → artifact, for every keyed source of the prompt, in the Context Index's order."""
    whole: dict[str, bool] = {}
    titles = _index_titles(prompt)
    for chunk in evidence_chunks(prompt):
        source = chunk.anchor.split("#", 1)[0]
        carried = (
            bool(chunk.text)
            and not chunk.text.startswith(SUMMARY_PREFIX)
            and f"{chunk.text}\n{TRUNCATED_MARKER}\n[/CHUNK]" not in prompt
        )
        whole[source] = whole.get(source, True) and carried
        titles.setdefault(source, chunk.title)
    artifacts: dict[str, _Artifact] = {}
    for source, title in titles.items():
        key = chunk_key(title)
        if key and key not in artifacts:
            artifacts[key] = _Artifact(title, whole.get(source, False))
    return artifacts


def _relevant_key(candidates: list[_Candidate], wanted: set[str], artifacts: dict[str, _Artifact]) -> str:
    """The key of the artifact the prompt lacks in full that shares the most terms with the message, by its
    title or the part of its text the prompt shows; "" when none does.

    An artifact the prompt carries whole is never an anchor: the system would attach what was already read,
    and the request would never reach a person. Nor is a file's digest or passage: the passages are the
    library's best spans of the session's files for this question, and a digest restates those files, so
    attaching one would answer from what was already searched instead of asking.
    """
    shown: dict[str, int] = {}
    artifacts = {key: a for key, a in artifacts.items() if not key.startswith(_FILE_KEYS)}
    for candidate in candidates:
        for key in candidate.keys:
            shown[key] = max(shown.get(key, 0), len(wanted & candidate.terms))
    best, best_score = "", 0
    for key, artifact in artifacts.items():
        if artifact.whole or len(key) > MAX_ANCHOR_CHARS:
            continue
        about = _KEY.sub("", artifact.title.strip(), count=1)
        score = max(shown.get(key, 0), len(wanted & set(content_terms(about))))
        if score > best_score:
            best, best_score = key, score
    return best
