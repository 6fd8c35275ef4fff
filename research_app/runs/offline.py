"""Offline research tasks: what the `offline` provider answers to the six tasks of a research run.

A documented product mode (it runs when no API key is configured), not a test
double. No model, no network, no randomness, no clock: the same prompt always
gives the same JSON, and that JSON passes the task's schema (prompts/schemas/).
Every handler reads the prompt it is given (`read_task`, `evidence_chunks`) and
answers from that alone. research_app's AppConfig.ready() registers the
handlers with the offline provider (context_app.llm.offline.register).

The common tool is token overlap. A text's content terms are its lower-cased
words without English stop words (and, for questions, without question words),
stemmed with the Snowball English stemmer, so "losses" meets "loss" and
"reduced" meets "reduce" (context_app.terms).

- NODE_QUERIES: the question itself, its keywords, then its quoted phrases and
  its runs of two or more content words (a crude noun phrase).
- NODE_FINDINGS: from each numbered search result, the sentences that share the
  most terms with the question, in the source's own words; the same sentence in
  several results becomes one finding citing all of them.
- NODE_SUFFICIENCY: the share of the question's terms that some finding or
  context item mentions; enough evidence and 75 % coverage make it sufficient,
  and every uncovered run of terms is a gap.
- NODE_DECOMPOSE: a question of several clauses splits into its clauses;
  otherwise the gaps' terms are partitioned among the children, one group each.
- CONTEXT_SPLIT: each item goes to the child question(s) it shares the most
  terms with, or to none (split.py's `split_by_token_overlap`, also the engine's
  fallback when a model's split is malformed).
- REPORT: the findings grouped by node, the context items that bear on the
  question with their SourceRefs, the file summaries and the open gaps. Nothing
  is paraphrased, so nothing is made up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from context_app.ir.budget import SUMMARY_PREFIX
from context_app.llm.base import ProviderError
from context_app.llm.task_envelope import EvidenceChunk, evidence_chunks, read_task
from context_app.terms import (
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    comparison_key,
    content_terms,
    cut_text,
    is_content_word,
    question_terms,
    quote_list,
    split_sentences,
    stem,
    surface_words,
)

from .split import plural, split_and_count

# --- limits --------------------------------------------------------------------------

MAX_QUERIES = 8  # node_queries.schema.json
DEFAULT_MAX_QUERIES = 4
MAX_QUERY_CHARS = 300
MAX_FINDINGS = 8
MAX_SENTENCES_PER_RESULT = 2
MAX_FINDING_CHARS = 600
SUFFICIENT_COVERAGE = 0.75
MAX_GAPS = 10  # node_sufficiency.schema.json
MAX_REASONING_CHARS = 2000
MAX_CHILDREN = 8  # node_decompose.schema.json
DEFAULT_MAX_CHILDREN = 4
MAX_CHILD_QUESTION_CHARS = 500
MAX_RATIONALE_CHARS = 800
MAX_SUBJECT_WORDS = 5
MAX_REPORT_SECTIONS = 20  # report.schema.json
MAX_REPORT_ITEMS = 12  # paragraphs of "From your files"
MAX_UNMATCHED_REPORT_ITEMS = 5  # shown when no item shares a term with the question
MAX_FILE_SUMMARIES = 30
MAX_SUMMARY_SENTENCES = 3
MAX_TITLE_CHARS = 300
MAX_PARAGRAPH_CHARS = 4000
MAX_OPEN_QUESTIONS = 15
MAX_OPEN_QUESTION_CHARS = 500

FROM_FILES_HEADING = "From your files"
FILES_HEADING = "Files in this context"
SEARCHED_HEADING = "What was searched"
FURTHER_HEADING = "Further findings"
ITEM_KINDS = frozenset({"fact", "uncertainty", "analysis", "constraint", "case", "definition", "lead", "conflict"})

# --- terms ---------------------------------------------------------------------------

# Words of a gap's wording ("No evidence yet on …") that are not its subject.
GAP_WORDS = frozenset(
    "evidence yet information missing unclear unknown lack lacking lacks found finding findings gap gaps "
    "need needed needs still source sources known data".split()
)

_WORD = re.compile(r"[^\W_]+")
_RESULT_NUMBER = re.compile(r"^\s*\[(\d+)\]")
# What the degrade ladder wraps a summarised chunk in (context_app.ir.budget.extractive_summary).
_SUMMARY_POINTER = re.compile(r"\s*\[see \S+ for full content\]\s*$")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{3,200})[\"“”]")


def _stem(word: str) -> str:
    return stem(word.lower())


def _term_set(text: str) -> frozenset[str]:
    return frozenset(content_terms(text))


# --- reading inputs --------------------------------------------------------------------


def _text(value: object) -> str:
    return re.sub(r"\s+", " ", value).strip() if isinstance(value, str) else ""


def _bounded(value: object, default: int, high: int) -> int:
    """An int input clamped to 1..high; `default` when absent or not a number."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else default
    return max(1, min(number, high))


def _required_question(inputs: dict, task: str) -> str:
    question = _text(inputs.get("question"))
    if not question:
        raise ProviderError(f"{task}: INPUT_JSON has no question", retryable=False)
    return question


def _context_items(value: object) -> list[dict]:
    """Well-formed context items (a known kind, some text, a list of string sources), in input order."""
    items = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict) or item.get("kind") not in ITEM_KINDS:
            continue
        if not isinstance(item.get("text"), str) or not item["text"].strip():
            continue
        sources = item.get("sources")
        if not isinstance(sources, list) or not all(isinstance(ref, str) for ref in sources):
            continue
        items.append(item)
    return items


def _citations(value: object) -> list[int]:
    """Positive result numbers, each once, ascending."""
    numbers = value if isinstance(value, list) else []
    return sorted({n for n in numbers if isinstance(n, int) and not isinstance(n, bool) and n >= 1})


def _dicts(value: object) -> list[dict]:
    return [item for item in (value if isinstance(value, list) else []) if isinstance(item, dict)]


def _strings(value: object) -> list[str]:
    return [text for text in (_text(v) for v in (value if isinstance(value, list) else [])) if text]


def result_text(chunk: EvidenceChunk) -> str:
    """A result chunk's own text: "" when omitted, a budget summary's marker and pointer removed."""
    text = chunk.text.strip()
    if text.startswith(SUMMARY_PREFIX):
        text = _SUMMARY_POINTER.sub("", text.removeprefix(SUMMARY_PREFIX)).strip()
    return text


def result_number(chunk: EvidenceChunk) -> int | None:
    """The [n] a search result's chunk title starts with ("[3] report.pdf, Page 4" → 3), or None."""
    match = _RESULT_NUMBER.match(chunk.title)
    return int(match.group(1)) if match else None


# --- NODE_QUERIES ------------------------------------------------------------------------


def node_queries(prompt: str) -> dict:
    """The question, its keywords, then its quoted phrases and multi-word phrases: distinct, at most max_queries."""
    _, inputs = read_task(prompt)
    question = _required_question(inputs, "NODE_QUERIES")
    limit = _bounded(inputs.get("max_queries"), DEFAULT_MAX_QUERIES, MAX_QUERIES)
    candidates = [question, _keywords(question)]
    candidates += [f'"{phrase}"' for phrase in _quoted_phrases(question)]
    candidates += [" ".join(run) for run in _content_runs(question) if len(run) >= 2]
    queries: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        query = cut_text(candidate, MAX_QUERY_CHARS)
        key = comparison_key(query)
        if query and key and key not in seen:
            seen.add(key)
            queries.append(query)
    return {"queries": queries[:limit]}


def _keywords(question: str) -> str:
    """The question's content words, each stem once, as written."""
    return " ".join(surface_words(question).values())


def _quoted_phrases(text: str) -> list[str]:
    return [_text(match.group(1)) for match in _QUOTED.finditer(text) if _text(match.group(1))]


def _content_runs(text: str, ignored: frozenset[str] = OVERLAP_STOP_WORDS | QUESTION_WORDS) -> list[list[str]]:
    """Maximal runs of consecutive content words; a stop word or punctuation other than "-" ends a run."""
    runs: list[list[str]] = []
    for segment in re.split(r"[^\w\s-]+", text):
        run: list[str] = []
        for word in _WORD.findall(segment):
            if is_content_word(word, ignored):
                run.append(word)
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
    return runs


# --- NODE_FINDINGS -----------------------------------------------------------------------


def node_findings(prompt: str) -> dict:
    """Extractive findings: per result, its sentences sharing the most question terms; equal sentences merged.

    Ranked by overlap, then by the lowest result number citing them, then by
    position in the result; at most MAX_FINDINGS.
    """
    _, inputs = read_task(prompt)
    wanted = set(question_terms(_required_question(inputs, "NODE_FINDINGS")))
    merged: dict[str, dict] = {}  # normalised sentence → {"text", "citations", "rank"}
    for chunk in evidence_chunks(prompt):
        number, text = result_number(chunk), result_text(chunk)
        if number is None or not text:
            continue  # not a numbered result, or its text was omitted by the token budget
        for position, overlap, sentence in _best_sentences(text, wanted):
            key = comparison_key(sentence)
            if key in merged:
                if number not in merged[key]["citations"]:
                    merged[key]["citations"].append(number)
                continue
            merged[key] = {
                "text": cut_text(sentence, MAX_FINDING_CHARS),
                "citations": [number],
                "rank": (-overlap, position),
            }
    ranked = sorted(merged.values(), key=lambda f: (f["rank"][0], min(f["citations"]), f["rank"][1]))
    return {"findings": [{"text": f["text"], "citations": sorted(f["citations"])} for f in ranked[:MAX_FINDINGS]]}


def _best_sentences(text: str, wanted: set[str]) -> list[tuple[int, int, str]]:
    """(position, overlap, sentence) of the sentences sharing the most terms with `wanted` (overlap > 0)."""
    scored = []
    for position, sentence in enumerate(split_sentences(text)):
        overlap = len(wanted & _term_set(sentence))
        if overlap > 0:
            scored.append((position, overlap, sentence))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:MAX_SENTENCES_PER_RESULT]


# --- NODE_SUFFICIENCY --------------------------------------------------------------------


def node_sufficiency(prompt: str) -> dict:
    """Sufficient iff there is some evidence and the evidence mentions ≥ 75 % of the question's terms."""
    _, inputs = read_task(prompt)
    question = _required_question(inputs, "NODE_SUFFICIENCY")
    findings = [f for f in _dicts(inputs.get("findings")) if _text(f.get("text"))]
    items = _context_items(inputs.get("context_items"))
    terms = question_terms(question)
    from_findings = set().union(*(_term_set(f["text"]) for f in findings))
    from_items = set().union(*(_term_set(item["text"]) for item in items))
    covered = [term for term in terms if term in from_findings or term in from_items]
    coverage = len(covered) / len(terms) if terms else 1.0
    has_evidence = bool(findings or items)
    is_sufficient = has_evidence and coverage >= SUFFICIENT_COVERAGE

    gaps = [f"No evidence yet on “{phrase}”." for phrase in uncovered_phrases(question, set(covered))]
    if not has_evidence and not gaps:
        gaps = ["No search findings and no items from the user's files bear on this question yet."]
    words = surface_words(question)
    reasoning = _sufficiency_reasoning(
        findings_count=len(findings),
        items_count=len(items),
        covered=[words[t] for t in covered],
        total=len(terms),
        by_files=[words[t] for t in covered if t in from_items],
        gaps_count=len(gaps),
        coverage=coverage,
        is_sufficient=is_sufficient,
    )
    return {"is_sufficient": is_sufficient, "reasoning": reasoning, "gaps": gaps[:MAX_GAPS]}


def uncovered_phrases(question: str, covered: set[str]) -> list[str]:
    """Runs of adjacent uncovered question terms, as written ("maintenance cost"); each term in one phrase."""
    phrases: list[str] = []
    used: set[str] = set()
    for run in _content_runs(question):
        phrase: list[str] = []
        for word in [*run, ""]:  # "" closes the last phrase
            stem = _stem(word) if word else ""
            if word and stem not in covered and stem not in used:
                phrase.append(word)
                used.add(stem)
            elif phrase:
                phrases.append(" ".join(phrase))
                phrase = []
    return phrases


def _sufficiency_reasoning(
    *,
    findings_count: int,
    items_count: int,
    covered: list[str],
    total: int,
    by_files: list[str],
    gaps_count: int,
    coverage: float,
    is_sufficient: bool,
) -> str:
    against = (
        f"Judged against {plural(findings_count, 'search finding')} and "
        f"{plural(items_count, 'item')} from the user's files"
    )
    if total:
        terms = f"{len(covered)} of {plural(total, 'key term')} covered"
        if covered:
            terms += f" ({quote_list(covered)})"
    else:
        terms = "the question has no key terms to check"
    parts = [f"{against}: {terms}"]
    if by_files:
        parts.append(f"the user's files cover {quote_list(by_files)}")
    if gaps_count:
        parts.append(f"{plural(gaps_count, 'gap')} {'remains' if gaps_count == 1 else 'remain'}")
    threshold = f"{round(SUFFICIENT_COVERAGE * 100)} %"
    if not findings_count and not items_count:
        verdict = "Not sufficient: there is no evidence yet."
    elif is_sufficient:
        verdict = f"Sufficient: coverage {round(coverage * 100)} % reaches {threshold}."
    else:
        verdict = f"Not sufficient: coverage {round(coverage * 100)} % is below {threshold}."
    return cut_text("; ".join(parts) + ". " + verdict, MAX_REASONING_CHARS)


# --- NODE_DECOMPOSE ----------------------------------------------------------------------

_DO_AND_MODALS = frozenset("do does did can could will would should shall may might must".split())
_AUXILIARIES = _DO_AND_MODALS | frozenset("is are was were has have had".split())
_WH_WORDS = QUESTION_WORDS - {"much", "many"}
_DETERMINERS = frozenset("the a an this that these those its their our his her my your".split())
# Verbs that commonly follow the subject of a do- or modal question ("Did the programme *reduce* …").
# Only used to find where the subject ends; a miss just gives a longer subject.
_COMMON_VERBS = frozenset(
    """achieve affect apply become cause change compare contribute cost cut decline decrease deliver differ drop
    exceed fail fall fund gain get grow happen help improve include increase influence lead limit lose lower make
    mean meet need occur pay perform prevent produce provide raise reach reduce remain replace require result
    rise save show spend succeed support take use work""".split()
)
_CLAUSE_SEPARATOR = re.compile(r"\s*[;,]\s*(?:and\s+)?|\s+and\s+", re.I)
_PRONOUN_IT = re.compile(r"\bit\b", re.I)
_PRONOUN_ITS = re.compile(r"\bits\b", re.I)


def node_decompose(prompt: str) -> dict:
    """Children that close the gaps: the question's clauses, else one child per group of gap terms."""
    _, inputs = read_task(prompt)
    question = _required_question(inputs, "NODE_DECOMPOSE")
    gaps = _strings(inputs.get("gaps"))
    items = _context_items(inputs.get("context_items"))
    limit = _bounded(inputs.get("max_children"), DEFAULT_MAX_CHILDREN, MAX_CHILDREN)
    subject = question_subject(question)
    children = _clause_children(question, subject, gaps, limit) or _gap_children(question, subject, gaps, limit)
    unique: list[dict] = []
    seen = {comparison_key(question)}
    for child in children:
        key = comparison_key(child["question"])
        if key not in seen:
            seen.add(key)
            unique.append(child)
    if not unique:
        unique = [_narrowing_child(question, subject, gaps)]
        if comparison_key(unique[0]["question"]) == comparison_key(question):
            unique = [_narrowing_child(question, subject, [])]
    for child in unique:
        child["rationale"] = cut_text(
            child["rationale"] + _files_note(child["question"], subject, items), MAX_RATIONALE_CHARS
        )
    return {"children": unique[:limit]}


def split_clauses(question: str) -> list[str]:
    """The clauses a question joins with "and", ";" or ",": a piece starts a clause only when it opens
    with a question word or an auxiliary and names something ("what did it cost"); other pieces
    ("costs and savings") stay with the clause before them. Trailing punctuation dropped.
    """
    body = question.strip().rstrip("?.!").strip()
    clauses: list[str] = []
    position = 0
    for match in _CLAUSE_SEPARATOR.finditer(body):
        rest = body[match.end() :]
        words = _WORD.findall(rest[:40])
        opens_clause = bool(words) and words[0].lower() in _WH_WORDS | _AUXILIARIES
        next_piece = _CLAUSE_SEPARATOR.split(rest, maxsplit=1)[0]
        if opens_clause and question_terms(next_piece) and question_terms(body[position : match.start()]):
            clauses.append(body[position : match.start()].strip())
            position = match.end()
    clauses.append(body[position:].strip())
    return [clause for clause in clauses if clause]


def question_subject(question: str) -> str:
    """A question's subject, heuristically: "Did the valve programme reduce losses?" → "the valve programme".

    Skips the opening question words and the auxiliary; then takes a name (its
    capitalised words), or a determiner and the words up to the first stop word
    ("of the" continues the phrase) or verb-like word. After "do"/"did" or a modal the
    main verb is bare, so a common verb ends the subject ("reduce"); after "is" or
    "has" only a participle does ("-ed", "-ing"), so "the maintenance cost of
    the valves" stays whole. If nothing follows the auxiliary, the words between
    the question word and the auxiliary ("Which *programmes* have …"). "" when
    nothing fits.
    """
    clauses = split_clauses(question)
    words = _WORD.findall(clauses[0]) if clauses else []
    start = 0
    while start < len(words) and words[start].lower() in QUESTION_WORDS:
        start += 1
    auxiliary = next((i for i in range(start, len(words)) if words[i].lower() in _AUXILIARIES), None)
    if auxiliary is None:
        return _noun_phrase(words, start, bare_verbs=False)
    bare_verbs = words[auxiliary].lower() in _DO_AND_MODALS
    return _noun_phrase(words, auxiliary + 1, bare_verbs=bare_verbs) or _noun_phrase(
        words[:auxiliary], start, bare_verbs=False
    )


def _noun_phrase(words: Sequence[str], index: int, *, bare_verbs: bool) -> str:
    """The name or determiner-led phrase starting at words[index] (see `question_subject`)."""
    if index >= len(words):
        return ""
    if index > 0 and words[index][0].isupper() and words[index].lower() not in OVERLAP_STOP_WORDS:
        end = index
        while end < len(words) and words[end][0].isupper() and end - index < MAX_SUBJECT_WORDS:
            end += 1
        return " ".join(words[index:end])
    phrase = [words[index]] if words[index].lower() in _DETERMINERS else []
    index += len(phrase)
    nouns = 0
    while index < len(words) and nouns < MAX_SUBJECT_WORDS:
        lower = words[index].lower()
        after_of = bool(phrase) and phrase[-1].lower() == "of" and lower in _DETERMINERS
        stop_word = lower in OVERLAP_STOP_WORDS and lower != "of" and not after_of
        if stop_word or _looks_like_verb(lower, bare_verbs=bare_verbs):
            break
        phrase.append(words[index])
        nouns += lower != "of" and lower not in _DETERMINERS
        index += 1
    while phrase and phrase[-1].lower() in _DETERMINERS | {"of"}:
        phrase.pop()
    return " ".join(phrase) if any(w.lower() not in _DETERMINERS for w in phrase) else ""


def _looks_like_verb(word: str, *, bare_verbs: bool) -> bool:
    if bare_verbs and word in _COMMON_VERBS:
        return True
    return len(word) > 5 and (word.endswith("ed") or word.endswith("ing"))


def _ended(text: str) -> str:
    """`text` ending with sentence punctuation (a full stop added when it has none)."""
    text = text.strip()
    return text if not text or text[-1] in ".!?…" else f"{text}."


def _as_question(text: str) -> str:
    text = text.strip().rstrip("?.!,;:").strip()
    return cut_text(text[:1].upper() + text[1:] + "?", MAX_CHILD_QUESTION_CHARS)


def _clause_children(question: str, subject: str, gaps: list[str], limit: int) -> list[dict]:
    """One child per clause (the subject standing in for "it"); [] when the question is one clause."""
    clauses = split_clauses(question)
    if len(clauses) < 2:
        return []
    if subject:
        clauses = clauses[:1] + [_with_subject(clause, subject) for clause in clauses[1:]]
    gap_terms = [set(_gap_words(gap)) for gap in gaps]
    if limit == 1:  # the narrowest useful child: the first clause with an open gap
        with_gap = [c for c in clauses if any(terms & set(question_terms(c)) for terms in gap_terms)]
        clauses = (with_gap or clauses)[:1]
    elif len(clauses) > limit:
        clauses = clauses[: limit - 1] + [" and ".join(clauses[limit - 1 :])]
    children = []
    for clause in clauses:
        terms = set(question_terms(clause))
        open_gaps = [gap for gap, g_terms in zip(gaps, gap_terms, strict=True) if g_terms & terms]
        rationale = f"Covers the parent's clause “{clause}”."
        if open_gaps:
            rationale += f" Open gaps here: {_ended('; '.join(open_gaps))}"
        children.append({"question": _as_question(clause), "rationale": rationale})
    return children


def _with_subject(clause: str, subject: str) -> str:
    """The subject in place of "it": "what did it cost" → "what did the valve programme cost"."""
    clause = _PRONOUN_ITS.sub(f"{subject}'s", clause)
    return _PRONOUN_IT.sub(subject, clause)


def _gap_words(gap: str) -> dict[str, str]:
    """stem → word of what a gap is about: its quoted phrase(s) if any, else its content words minus gap wording."""
    quoted = _quoted_phrases(gap)
    if quoted:
        return surface_words(" ".join(quoted))
    return surface_words(gap, OVERLAP_STOP_WORDS | QUESTION_WORDS | GAP_WORDS)


def _gap_children(question: str, subject: str, gaps: list[str], limit: int) -> list[dict]:
    """One child per gap, its terms taken by no other child (a partition); the overflow merged into the last."""
    groups: list[tuple[str, str]] = []  # (phrase, gap)
    taken: set[str] = set()
    for gap in gaps:
        words = {stem: word for stem, word in _gap_words(gap).items() if stem not in taken}
        if words:
            taken.update(words)
            groups.append((" ".join(words.values()), gap))
    if limit == 1:
        groups = groups[:1]
    elif len(groups) > limit:
        tail = groups[limit - 1 :]
        groups = groups[: limit - 1] + [(_and_list([p for p, _ in tail]), " ".join(_ended(g) for _, g in tail))]
    return [
        {"question": _narrowed(question, subject, phrase), "rationale": f"Covers the gap: {_ended(gap)}"}
        for phrase, gap in groups
    ]


def _and_list(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _narrowed(question: str, subject: str, phrase: str) -> str:
    """A full question about `phrase` that keeps the parent's subject."""
    if subject and set(question_terms(phrase)) <= set(question_terms(subject)):
        return _as_question(f"What is known about {subject}")
    if subject and set(question_terms(subject)) <= set(question_terms(phrase)):
        return _as_question(f"What is known about {phrase}")  # the phrase already names the subject
    if subject:
        return _as_question(f"What is known about {phrase} for {subject}")
    return _as_question(f"{question.rstrip('?.! ')}, specifically regarding {phrase}")


def _narrowing_child(question: str, subject: str, gaps: list[str]) -> dict:
    """The one child when nothing splits: narrowed to the first gap, or to the question's own key terms."""
    if gaps:
        phrase = " ".join(_gap_words(gaps[0]).values()) or gaps[0].rstrip(".")
        return {
            "question": _narrowed(question, subject, phrase),
            "rationale": f"Narrows to the first gap: {_ended(gaps[0])}",
        }
    keywords = _keywords(question) or question.rstrip("?.! ")
    return {
        "question": _as_question(f"What do sources state directly about {keywords}"),
        "rationale": "No gap was named; narrows the question to direct statements on its key terms.",
    }


def _files_note(child_question: str, subject: str, items: list[dict]) -> str:
    """ " The user's files bear on it: …" when context items share the child's own terms."""
    own = set(question_terms(child_question)) - set(question_terms(subject))
    terms = own or set(question_terms(child_question))
    mentioning = [item for item in items if terms & _term_set(item["text"])]
    if not mentioning:
        return ""
    shared = set().union(*(terms & _term_set(item["text"]) for item in mentioning))
    words = surface_words(child_question)
    named = [words[t] for t in question_terms(child_question) if t in shared]
    return (
        f" The user's files bear on it: {plural(len(mentioning), 'context item')} "
        f"{'mentions' if len(mentioning) == 1 else 'mention'} {quote_list(named)}."
    )


# --- CONTEXT_SPLIT -----------------------------------------------------------------------


def context_split(prompt: str) -> dict:
    """CONTEXT_SPLIT answered by the token-overlap split, with a note on what went where."""
    _, inputs = read_task(prompt)
    children = _strings(inputs.get("children"))
    items = _context_items(inputs.get("parent_items"))
    contexts, targets = split_and_count(children, items)
    assigned = sum(1 for count in targets if count)
    note = (
        f"Deterministic token-overlap split of {plural(len(items), 'item')} among "
        f"{plural(len(children), 'child question')}: {assigned} assigned"
    )
    tied = sum(1 for count in targets if count > 1)
    if tied:
        note += f" ({tied} tied and went to several children)"
    if assigned < len(items):
        note += f"; {len(items) - assigned} shared no term with any child and went to none"
    return {"child_contexts": contexts, "overall_note": note + "."}


# --- REPORT ------------------------------------------------------------------------------

_SOURCE_REF = re.compile(r"^(?P<ref>.+?::S[0-9]+)(?:::.*)?$")


def report(prompt: str) -> dict:
    """The report from the inputs alone: findings by node, the relevant context items, files, open gaps."""
    _, inputs = read_task(prompt)
    question = _text(inputs.get("question"))
    wanted = set(question_terms(question))
    findings = _report_findings(inputs.get("findings"))
    items = _relevant_items(_context_items(inputs.get("context_items")), wanted)
    summaries = [s for s in _dicts(inputs.get("file_summaries")) if _text(s.get("filename"))][:MAX_FILE_SUMMARIES]
    stats = inputs.get("search_stats") if isinstance(inputs.get("search_stats"), dict) else {}

    sections: list[dict] = []
    if items:
        sections.append({"heading": FROM_FILES_HEADING, "paragraphs": [_item_paragraph(item) for item in items]})
    files_section = _files_section(summaries, items)
    searched = [] if findings else [_searched_section(stats)]
    room = MAX_REPORT_SECTIONS - len(sections) - bool(files_section) - len(searched)
    sections += _node_sections(findings, room)
    sections += ([files_section] if files_section else []) + searched

    return {
        "title": cut_text(question, MAX_TITLE_CHARS) or "Research report",
        "summary": _report_summary(findings, items, wanted, stats),
        "sections": sections,
        "open_questions": _open_questions(inputs.get("open_gaps")),
    }


def _report_findings(value: object) -> list[dict]:
    findings = []
    for finding in _dicts(value):
        if _text(finding.get("text")):
            findings.append(
                {
                    "node": _text(finding.get("node")),
                    "question": _text(finding.get("question")) or "Findings",
                    "text": cut_text(finding["text"], MAX_PARAGRAPH_CHARS),
                    "citations": _citations(finding.get("citations")),
                }
            )
    return findings


def _relevant_items(items: list[dict], wanted: set[str]) -> list[dict]:
    """The items sharing the most terms with the question (input order breaks ties); if none shares any,
    the first few, so the report still shows what the user's files hold."""
    scored = [(len(wanted & _term_set(item["text"])), index, item) for index, item in enumerate(items)]
    matching = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:MAX_REPORT_ITEMS]
    if not matching:
        return items[:MAX_UNMATCHED_REPORT_ITEMS]
    return [item for _, _, item in matching]


def _item_paragraph(item: dict) -> dict:
    sources: list[str] = []
    for ref in item["sources"]:
        match = _SOURCE_REF.match(ref)
        if match and match.group("ref") not in sources:
            sources.append(match.group("ref"))  # a "::hint" suffix is dropped (schema: file::S4)
    return {"text": cut_text(item["text"], MAX_PARAGRAPH_CHARS), "sources": sources}


def _node_sections(findings: list[dict], room: int) -> list[dict]:
    """One section per node question, in order of first appearance; past `room`, one "Further findings".

    A sentence found by a node and again by its sub-questions is told once, under
    the deepest (most specific) question that found it.
    """
    deepest: dict[str, int] = {}
    for finding in findings:
        depth = finding["node"].count(".")
        deepest[finding["text"]] = max(depth, deepest.get(finding["text"], depth))
    by_question: dict[str, list[dict]] = {}
    for finding in findings:
        paragraphs = by_question.setdefault(finding["question"], [])
        paragraph = {"text": finding["text"], "citations": finding["citations"]}
        if finding["node"].count(".") == deepest[finding["text"]] and paragraph not in paragraphs:
            paragraphs.append(paragraph)
    sections = [{"heading": cut_text(q, MAX_TITLE_CHARS), "paragraphs": p} for q, p in by_question.items() if p]
    if len(sections) <= room:
        return sections
    kept, rest = sections[: room - 1], sections[room - 1 :]
    return kept + [{"heading": FURTHER_HEADING, "paragraphs": [p for s in rest for p in s["paragraphs"]]}]


def _files_section(summaries: list[dict], items: list[dict]) -> dict | None:
    if summaries:
        paragraphs = [
            {
                "text": cut_text(
                    f"{_text(s['filename'])}: {_text(s.get('summary')) or 'no summary.'}", MAX_PARAGRAPH_CHARS
                )
            }
            for s in summaries
        ]
        return {"heading": FILES_HEADING, "paragraphs": paragraphs}
    if items:
        names: list[str] = []
        for item in items:
            for ref in item["sources"]:
                name = ref.split("::", 1)[0]
                if name and name not in names:
                    names.append(name)
        if names:
            return {"heading": FILES_HEADING, "paragraphs": [{"text": f"Items above come from: {', '.join(names)}."}]}
    return None


def _stats_line(stats: dict) -> str:
    def count(key: str) -> int:
        value = stats.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return (
        f"The search covered {plural(count('nodes'), 'research node')}, "
        f"{plural(count('queries'), 'query', 'queries')} and {plural(count('results'), 'result')}"
    )


def _searched_section(stats: dict) -> dict:
    text = f"{_stats_line(stats)}, and produced no finding that answers the question."
    return {"heading": SEARCHED_HEADING, "paragraphs": [{"text": text}]}


def _report_summary(findings: list[dict], items: list[dict], wanted: set[str], stats: dict) -> str:
    """1–3 sentences, each the opening sentence of one of the strongest findings or items, as written."""
    candidates = [(f["text"], len(f["citations"])) for f in findings] + [(item["text"], 0) for item in items]
    ranked = sorted(
        enumerate(candidates),
        key=lambda c: (-len(wanted & _term_set(c[1][0])), -c[1][1], c[0]),
    )
    sentences: list[str] = []
    for _, (text, _) in ranked:
        sentence = (split_sentences(text) or [text])[0].strip()
        if sentence and comparison_key(sentence) not in {comparison_key(s) for s in sentences}:
            sentences.append(_ended(sentence))
        if len(sentences) == MAX_SUMMARY_SENTENCES:
            break
    if not sentences:
        return f"Nothing was found on this question. {_stats_line(stats)}; the user's files hold no items on it."
    return cut_text(" ".join(sentences), MAX_PARAGRAPH_CHARS)


def _open_questions(value: object) -> list[str]:
    questions: list[str] = []
    seen: set[str] = set()
    for gap in _strings(value):
        key = comparison_key(gap)
        if key and key not in seen:
            seen.add(key)
            questions.append(cut_text(gap, MAX_OPEN_QUESTION_CHARS))
    return questions[:MAX_OPEN_QUESTIONS]
