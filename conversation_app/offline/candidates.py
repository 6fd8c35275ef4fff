"""The candidates of a chat turn: every sentence the offline answer may quote, and where it stands.

The evidence chunks are the library's best passages of the session's files for the
question and the session's artifacts (artifacts.py), each titled with its key in
brackets ("[passage:ops.md::S2] ops.md › Staffing", "[digest:aggregate] Aggregate
digest", "[report:<uuid>] Report: …", "[supply:<uuid>] Note from alice"). Every line
of a digest ("[fact] … (a.txt::S1)") and every sentence of the other chunks and of
the context supplied for this turn is a candidate (the terms of llm_platform.terms);
one that appears in several places is one candidate with all their keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from digests.items import ITEM_KINDS
from extraction.blocks import SECTION_PATH_SEPARATOR
from llm_platform.extractive import chunk_text
from llm_platform.ir.render import CONTENT_HEADER
from llm_platform.prose import speaker
from llm_platform.sourcerefs import REF_GROUP, SPAN, ref_key
from llm_platform.task_envelope import evidence_chunks
from llm_platform.terms import comparison_key, content_terms, split_sentences

TITLE_KEY = re.compile(r"^\[(?P<key>[^\]]+)\]\s*")
_ITEM_LINE = re.compile(r"^\[(?P<kind>[a-z]+)\]\s+(?P<text>\S.*)$")
_BARE_REF = re.compile(rf"(?<![\w.-])([\w][\w.-]*::{SPAN})")
_REFS_ONLY = re.compile(rf"^\([^()]*::{SPAN}[^()]*\)[.;,]?$")
_INDEX_LINE = re.compile(r'^\[\d+\] (?P<sid>\S+) \| [^|\n]+ \| (?P<title>"(?:[^"\\\n]|\\.)*")', re.M)
_ITEM_INSIDE = re.compile(r"\s+(?=\[(?:" + "|".join(sorted(ITEM_KINDS)) + r")\]\s)")
PASSAGE_KEY = "passage:"  # conversation_app.artifacts.question_passages


@dataclass
class Candidate:
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
    # Where a passage sentence stands, in words ("postmortem.md › Checkout outage > What went well"): the
    # subject its section is about, which the sentence itself often leaves unsaid.
    heading: str = ""
    # Terms of the question its passage's heading asks (an FAQ's "How do I get my test results?"): what is
    # said under it answers that question, so they count as its own.
    answers: frozenset[str] = frozenset()


def chunk_key(title: str) -> str:
    """The bracketed key a chunk title starts with ("[report:1f…] Report: …" → "report:1f…"), or ""."""
    match = TITLE_KEY.match(title.strip())
    return match.group("key").strip() if match else ""


def _pieces(text: str, *, sentence_lines: bool = False) -> list[str]:
    """A chunk's or supply's candidates: each digest item line whole, the other lines' sentences; each line
    whole where the text is a sentence a line already (`sentence_lines`: a passage's, split from its file's
    text, where a bold lead still showed what it leads: '**"It's too expensive."** Show the calculator …')."""
    # A chunk the token budget summarised holds its digest items on one line: one line each again.
    text = _ITEM_INSIDE.sub("\n", text)
    pieces: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        said = [line.strip() for line in prose if line.strip()] if sentence_lines else split_sentences("\n".join(prose))
        for sentence in said:
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
    for group in REF_GROUP.findall(text):
        for piece in group.split(","):
            key = ref_key(piece.strip())
            if key:
                refs.append(key)
    refs += _BARE_REF.findall(REF_GROUP.sub(" ", text))
    return list(dict.fromkeys(refs))


def read_supplies(value: object) -> tuple[list[tuple[str, bool]], bool]:
    """The texts supplied for this turn (skips left out), each with whether a person gave it; and whether
    anything was supplied at all (a request was answered, if only by skipping)."""
    entries = [s for s in (value if isinstance(value, list) else []) if isinstance(s, dict)]
    texts = [
        (s["text"].strip(), s.get("kind") != "auto")
        for s in entries
        if s.get("kind") != "skip" and isinstance(s.get("text"), str) and s["text"].strip()
    ]
    return texts, bool(entries)


def chunk_texts(prompt: str) -> list[tuple[str, str, str]]:
    """(key, title without its key, text) of the evidence chunks that carry text: omitted ones and title-only
    placeholders left out."""
    chunks = []
    for chunk in evidence_chunks(prompt):
        text = chunk_text(chunk)
        title = TITLE_KEY.sub("", chunk.title.strip(), count=1)
        if text and comparison_key(text) != comparison_key(title):
            chunks.append((chunk_key(chunk.title), title, text))
    return chunks


def collect_candidates(chunks: list[tuple[str, str, str]], supplied: list[tuple[str, bool]]) -> list[Candidate]:
    """Every distinct candidate; one that appears in several places is one candidate with all their keys."""
    by_text: dict[str, Candidate] = {}
    normal_chunks = [(key, comparison_key(text)) for key, _title, text in chunks]

    def add(piece: str, key: str, *, supplied: bool, given: bool, context="", before="", heading="", asked="") -> None:
        """`heading`: a passage's title, under which the piece stands; `asked`: the question in its text that the
        piece follows (an FAQ's question written as a paragraph above its answer)."""
        normal = _sentence_key(piece)
        if not normal or is_question(piece):  # a question answers nothing (an FAQ's heading, a rhetorical one)
            return
        candidate = by_text.get(normal)
        if candidate is None:
            terms = frozenset(content_terms(REF_GROUP.sub(" ", piece)))  # its words, not its references
            candidate = by_text[normal] = Candidate(piece, terms, len(by_text), supplied, given)
        elif source_refs(piece) and not source_refs(candidate.text):
            candidate.text = piece  # said again with the sources it stands on (a report's summary, then its body)
        candidate.given = candidate.given or given
        candidate.context |= frozenset(content_terms(REF_GROUP.sub(" ", context)))  # words, not references
        candidate.before |= frozenset(content_terms(REF_GROUP.sub(" ", before)))
        candidate.prior = candidate.prior or before
        candidate.heading = candidate.heading or heading
        candidate.answers |= frozenset(content_terms(heading_question(heading) or asked))
        if key and key not in candidate.keys:
            candidate.keys.append(key)

    for text, given in supplied:
        for piece in _pieces(text):
            # A supply the session also holds as a chunk ([supply:<uuid>] …) is cited by that chunk's key.
            holders = [key for key, normal in normal_chunks if key and comparison_key(piece) in normal]
            for key in holders or [""]:
                add(piece, key, supplied=True, given=given)
    for key, title, text in chunks:
        heading = title if key.startswith(PASSAGE_KEY) else ""
        previous = asked = ""
        paragraph: list[str] = []  # the sentences before this one in its span (a paragraph or list item)
        span: list[str] = []
        # A passage's lines are the file's, a blank line between two (artifacts.question_passages).
        lines = [_pieces(line, sentence_lines=key.startswith(PASSAGE_KEY)) for line in text.split("\n\n")]
        asked_on = -1  # the line of a speaker's question: it is answered on the next line, the next turn
        for piece, alone, number in ((piece, len(line) == 1, n) for n, line in enumerate(lines) for piece in line):
            refs = source_refs(piece)
            if refs != span:
                paragraph, span, asked = [], refs, ""
            # In a conversation a question is answered by the next speaker's turn, not by the turns after it
            # ("Lucy: A fixed go-live date …" answers "Sam: Would anything have changed your mind?", the action
            # items at the call's end do not).
            if asked_on >= 0 and number > asked_on + 1:
                asked, asked_on = "", -1
            # A question alone on its line in a passage's text (a FAQ's, where its entries are paragraphs: an HTML
            # <summary>, a DOCX's bold line) is what the sentences after it answer, as a heading's question is;
            # the entries above it, in the same span, are about other things. One among sentences on its line
            # is a request ("Could you price this change …? The board has set aside EUR 40,000 for it.").
            if key.startswith(PASSAGE_KEY) and is_question(piece) and alone:
                paragraph, asked = [], piece
                asked_on = number if speaker(piece) else -1
            announcing = by_text.get(_sentence_key(previous)) if announces(previous) else None
            if announcing is not None and not announcing.announced:
                announcing.announced = piece
            context = "\n".join([title, previous, *paragraph])
            add(piece, key, supplied=False, given=False, context=context, before=previous, heading=heading, asked=asked)
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


def _sentence_key(piece: str) -> str:
    """What makes two candidates one: the sentence, whatever sources it is given with."""
    return comparison_key(REF_GROUP.sub(" ", piece))


def is_question(piece: str) -> bool:
    return REF_GROUP.sub("", piece).rstrip(" .").endswith("?")


def heading_question(title: str) -> str:
    """The question a passage's innermost heading asks ("faq.html › FAQ › How do I get my test results?"),
    or ""."""
    # A passage's title: file › section > subsection › heading (conversation_app.artifacts.question_passages).
    innermost = title.strip().replace(SECTION_PATH_SEPARATOR, " › ").rpartition(" › ")[2]
    return innermost if innermost.endswith("?") else ""


def announces(sentence: str) -> bool:
    """Whether a sentence ends with a colon (its SourceRefs aside): it introduces what comes next."""
    return REF_GROUP.sub(" ", sentence).strip().rstrip(" .").endswith(":")


def index_titles(prompt: str) -> dict[str, str]:
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
