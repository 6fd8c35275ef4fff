"""Offline research tasks: what the `offline` provider answers to the six tasks of a research run.

A documented product mode (it runs when no API key is configured), not a test
double. No model, no network, no randomness, no clock: the same prompt always
gives the same JSON, and that JSON passes the task's schema (prompts/schemas/).
Every handler reads the prompt it is given (`read_task`, `evidence_chunks`) and
answers from that alone. Each research task names its handler here
(`offline_handler` in model_tasks.py), which registers it with the offline
provider (llm_platform.offline).

The common tool is token overlap. A text's content terms are its lower-cased
words without English stop words (and, for questions, without question words),
stemmed with the Snowball English stemmer, so "losses" meets "loss" and
"reduced" meets "reduce" (llm_platform.terms).

- NODE_QUERIES: the question itself, its keywords, then its quoted phrases and
  its runs of two or more content words (a crude noun phrase).
- NODE_FINDINGS: from each numbered search result, the statements (never a heading
  or a label) that best answer the question by BM25 (the library's terms and
  parameters, llm_platform.terms.bm25_rank), in the source's own words; the same
  sentence in several results becomes one finding citing all of them.
- NODE_SUFFICIENCY: the share of the question's terms that some finding or
  context item mentions; enough evidence and 75 % coverage make it sufficient,
  and every uncovered run of terms is a gap.
- NODE_DECOMPOSE: a question of several clauses splits into its clauses;
  otherwise the gaps' terms are partitioned among the children, one group each,
  each asked as a well-formed question about the parent's subject (the parent's
  verb is not asked about as a thing: "risks", not "risks threaten").
- CONTEXT_SPLIT: each item goes to the child question(s) it shares the most
  terms with, or to none (split.py's `split_by_token_overlap`, also the engine's
  fallback when a model's split is malformed).
- REPORT: a summary of the statements that best answer the question (BM25), the
  findings grouped by node, the context items that bear on the question with their
  SourceRefs, the file summaries and the open gaps; each sentence told once (one
  that is both a finding and an item cites both), headings never. Nothing is
  paraphrased, so nothing is made up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from context_app.digests.items import ITEM_KINDS
from llm_platform.base import ProviderError
from llm_platform.extractive import chunk_text, content_runs, uncovered_phrases
from llm_platform.task_envelope import EvidenceChunk, evidence_chunks, read_task
from llm_platform.terms import (
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    bm25_rank,
    comparison_key,
    content_terms,
    cut_text,
    question_terms,
    quote_list,
    split_sentences,
    surface_words,
)

from ..split import plural, split_and_count

# --- limits --------------------------------------------------------------------------

MAX_QUERIES = 8  # node_queries.schema.json
DEFAULT_MAX_QUERIES = 4
MAX_QUERY_CHARS = 300
MAX_FINDINGS = 8
MAX_SENTENCES_PER_RESULT = 2
MIN_UNPUNCTUATED_WORDS = 12  # a line this long without a full stop is prose, not a heading
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

# --- terms ---------------------------------------------------------------------------

# Words of a gap's wording ("No evidence yet on …") that are not its subject.
GAP_WORDS = frozenset(
    "evidence yet information missing unclear unknown lack lacking lacks found finding findings gap gaps "
    "need needed needs still source sources known data".split()
)

_WORD = re.compile(r"[^\W_]+")
_RESULT_NUMBER = re.compile(r"^\s*\[(\d+)\]")
_STATEMENT_END = re.compile(r"[.!…][\"'”’)\]]*$")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{3,200})[\"“”]")


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
    candidates += [" ".join(run) for run in content_runs(question) if len(run) >= 2]
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


# --- NODE_FINDINGS -----------------------------------------------------------------------


def node_findings(prompt: str) -> dict:
    """Extractive findings: per result, its statements that best answer the question; equal ones merged.

    Every statement of every result is ranked by BM25 for the question (the library's
    terms and parameters, the statements as the collection: a rare shared term weighs
    more than one every result repeats); each result gives its best two that score at
    all. Headings, labels and other lines that state nothing are never findings. Ranked
    by score, then the lowest result number citing them, then position; at most MAX_FINDINGS.
    """
    _, inputs = read_task(prompt)
    question = _required_question(inputs, "NODE_FINDINGS")
    candidates: list[tuple[int, int, str]] = []  # (result number, position, statement)
    for chunk in evidence_chunks(prompt):
        number, text = result_number(chunk), chunk_text(chunk)
        if number is None or not text:
            continue  # not a numbered result, or its text was omitted by the token budget
        candidates += [(number, position, sentence) for position, sentence in enumerate(statements(text))]
    by_result: dict[int, list[tuple[float, int, str]]] = {}
    for (number, position, sentence), score in zip(
        candidates, bm25_rank(question, [c[2] for c in candidates]), strict=True
    ):
        if score > 0:
            by_result.setdefault(number, []).append((score, position, sentence))
    merged: dict[str, dict] = {}  # normalised statement → {"text", "citations", "rank"}
    for number, scored in by_result.items():
        for score, position, sentence in sorted(scored, key=lambda s: (-s[0], s[1]))[:MAX_SENTENCES_PER_RESULT]:
            key = comparison_key(sentence)
            if key in merged:
                if number not in merged[key]["citations"]:
                    merged[key]["citations"].append(number)
                continue
            merged[key] = {
                "text": cut_text(sentence, MAX_FINDING_CHARS),
                "citations": [number],
                "rank": (-score, position),
            }
    ranked = sorted(merged.values(), key=lambda f: (f["rank"][0], min(f["citations"]), f["rank"][1]))
    return {"findings": [{"text": f["text"], "citations": sorted(f["citations"])} for f in ranked[:MAX_FINDINGS]]}


def statements(text: str) -> list[str]:
    """The sentences of a text that state something (`is_statement`), in order."""
    return [sentence for sentence in split_sentences(text) if is_statement(sentence)]


def is_statement(text: str) -> bool:
    """A sentence that states something: it ends as a sentence does (".", "!", "…"), or runs long
    enough to be prose whose full stop was lost. A heading ("Costs and maintenance"), a label
    ("Corrosion"), a title in capitals or a question is not one."""
    text = text.strip()
    if not text or text.endswith("?"):
        return False
    return bool(_STATEMENT_END.search(text)) or len(_WORD.findall(text)) >= MIN_UNPUNCTUATED_WORDS


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
# Words that end a subject without being part of it ("Is the budget *sufficient* …", "… the valves *late*?").
_PREDICATE_WORDS = frozenset(
    """able accurate adequate available better correct different due early effective enough higher late
    likely lower necessary possible ready reliable responsible safe similar still successful sufficient true
    worse worth""".split()
)
# Prepositions the stop lists keep: a gap's phrase does not start or end with one ("shared *outside*").
_PREPOSITIONS = frozenset(
    "across along among around behind beside beyond despite inside near outside per towards".split()
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
    subject, verbs = question_parts(question)
    children = _clause_children(question, subject, gaps, limit) or _gap_children(question, subject, verbs, gaps, limit)
    unique: list[dict] = []
    seen = {comparison_key(question)}
    for child in children:
        key = comparison_key(child["question"])
        if key not in seen:
            seen.add(key)
            unique.append(child)
    if not unique:
        unique = [_narrowing_child(question, subject, verbs, gaps)]
        if comparison_key(unique[0]["question"]) == comparison_key(question):
            unique = [_narrowing_child(question, subject, verbs, [])]
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
    """A question's subject, heuristically: "Did the valve programme reduce losses?" → "the valve programme"."""
    return question_parts(question)[0]


def question_parts(question: str) -> tuple[str, frozenset[str]]:
    """A question's subject and its main verb(s) (lower-cased, as written), heuristically:

    - "Did the valve programme reduce losses?" → ("the valve programme", {"reduce"}): after
      "do"/"did" or a modal the main verb is bare, so a common verb ends the subject, or else
      the last word of the subject's run of content words ("did maintenance staffing *change*");
    - "Is the maintenance cost of the valves rising?" → a participle ("-ed", "-ing") ends it;
    - "Who must consent before the report is shared?" (the question word is the subject):
      the word after the auxiliary is the verb, the subject the first determiner-led phrase after it;
    - "What risks threaten the valve programme?" (no auxiliary): the verb is the word before
      the first stop word, the subject the name or determiner-led phrase after it ("the valve
      programme"), else the words between the question word and the verb ("What *water losses*
      occurred in 2022?").

    The verbs keep sub-questions well-formed: "What is known about risks for the valve
    programme?", never "… about risks threaten?". ("", ∅) when nothing fits.
    """
    clauses = split_clauses(question)
    words = _WORD.findall(clauses[0]) if clauses else []
    start = 0
    while start < len(words) and words[start].lower() in QUESTION_WORDS:
        start += 1
    auxiliary = next((i for i in range(start, len(words)) if words[i].lower() in _AUXILIARIES), None)
    if auxiliary is None:
        if start == 0:
            return _noun_phrase(words, start, bare_verbs=False)[0], frozenset()
        stop = next((i for i in range(start, len(words)) if words[i].lower() in OVERLAP_STOP_WORDS), len(words))
        verb = stop - 1
        if verb < start:
            return _noun_phrase(words, start, bare_verbs=False)[0], frozenset()
        named = _noun_phrase(words, verb + 1, bare_verbs=False)[0] if verb + 1 < len(words) else ""
        return named or " ".join(words[start:verb]), frozenset({words[verb].lower()})
    after = auxiliary + 1
    if (
        start > 0
        and auxiliary == start
        and after < len(words)
        and words[auxiliary].lower() not in ("do", "does", "did")
        and words[after].lower() not in _DETERMINERS
        and not words[after][0].isupper()
    ):
        led = next((i for i in range(after + 1, len(words)) if words[i].lower() in _DETERMINERS), None)
        subject = _noun_phrase(words, led, bare_verbs=False)[0] if led is not None else ""
        return subject, frozenset({words[after].lower()})
    bare_verbs = words[auxiliary].lower() in _DO_AND_MODALS
    subject, end = _noun_phrase(words, after, bare_verbs=bare_verbs)
    if not subject:
        return _noun_phrase(words[:auxiliary], start, bare_verbs=False)[0], frozenset()
    if end < len(words) and words[end].lower() not in OVERLAP_STOP_WORDS:
        return subject, frozenset({words[end].lower()})
    if bare_verbs and len(subject.split()) > 1 and subject.split()[-1].lower() not in _DETERMINERS:
        # No common verb ended it: the run's last word is the bare verb ("did maintenance staffing change").
        *kept, verb = subject.split()
        return " ".join(kept), frozenset({verb.lower()})
    return subject, frozenset()


def _noun_phrase(words: Sequence[str], index: int, *, bare_verbs: bool) -> tuple[str, int]:
    """The name or determiner-led phrase starting at words[index] (see `question_parts`), and the
    index of the word that ended it."""
    if index >= len(words):
        return "", index
    if index > 0 and words[index][0].isupper() and words[index].lower() not in OVERLAP_STOP_WORDS:
        end = index
        while end < len(words) and words[end][0].isupper() and end - index < MAX_SUBJECT_WORDS:
            end += 1
        return " ".join(words[index:end]), end
    phrase = [words[index]] if words[index].lower() in _DETERMINERS else []
    index += len(phrase)
    nouns = 0
    while index < len(words) and nouns < MAX_SUBJECT_WORDS:
        lower = words[index].lower()
        after_of = bool(phrase) and phrase[-1].lower() == "of" and lower in _DETERMINERS
        stop_word = lower in OVERLAP_STOP_WORDS and lower != "of" and not after_of
        if stop_word or lower in _PREDICATE_WORDS or _looks_like_verb(lower, bare_verbs=bare_verbs):
            break
        phrase.append(words[index])
        nouns += lower != "of" and lower not in _DETERMINERS
        index += 1
    while phrase and phrase[-1].lower() in _DETERMINERS | {"of"}:
        phrase.pop()
        index -= 1
    return (" ".join(phrase) if any(w.lower() not in _DETERMINERS for w in phrase) else ""), index


def _looks_like_verb(word: str, *, bare_verbs: bool) -> bool:
    """After "do" or a modal the verb is bare: a common one ("reduce"), never a participle, so
    "staffing" stays a noun; after "is" or "has" a participle ("-ed", "-ing") is the verb."""
    if bare_verbs:
        return word in _COMMON_VERBS
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


def _gap_children(question: str, subject: str, verbs: frozenset[str], gaps: list[str], limit: int) -> list[dict]:
    """One child per gap, its terms taken by no other child (a partition); the overflow merged into the last."""
    groups: list[tuple[str, str]] = []  # (phrase, gap)
    taken: set[str] = set()
    for gap in gaps:
        words = {stem: word for stem, word in _gap_words(gap).items() if stem not in taken}
        if words:
            taken.update(words)
            groups.append((_without_verbs(" ".join(words.values()), question, verbs), gap))
    if limit == 1:
        groups = groups[:1]
    elif len(groups) > limit:
        tail = groups[limit - 1 :]
        phrases = [p for p, _ in tail if p]
        merged = _and_list(phrases) if phrases else ""
        groups = groups[: limit - 1] + [(merged, " ".join(_ended(g) for _, g in tail))]
    return [
        {"question": _narrowed(question, subject, verbs, phrase), "rationale": f"Covers the gap: {_ended(gap)}"}
        for phrase, gap in groups
    ]


def _and_list(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _without_verbs(phrase: str, question: str, verbs: frozenset[str]) -> str:
    """A gap's phrase as something to ask about. Where the phrase is the question's own words
    around its verb ("risks threaten", "water losses occurred"), the verb and participles go;
    a one-word phrase that is the verb stays when the verb is also a noun ("cost", "change").
    Auxiliaries and predicate words ("late", "sufficient"), and prepositions at either end, always go."""
    words = phrase.split()
    from_question = len(words) > 1 and phrase.lower() in question.lower()

    def verb_like(word: str) -> bool:
        lower = word.lower()
        participle = len(lower) > 4 and lower.endswith("ed")
        if len(words) == 1:
            return lower in verbs and (participle or lower not in _COMMON_VERBS)
        return from_question and (lower in verbs or participle)

    kept = [w for w in words if w.lower() not in _AUXILIARIES | _PREDICATE_WORDS and not verb_like(w)]
    while kept and kept[-1].lower() in _PREPOSITIONS | {"and"}:
        kept.pop()
    while kept and kept[0].lower() in _PREPOSITIONS | {"and"}:
        kept.pop(0)
    return " ".join(kept)


def _narrowed(question: str, subject: str, verbs: frozenset[str], phrase: str) -> str:
    """A full, well-formed question about `phrase` that keeps the parent's subject."""
    if subject and (not phrase or set(question_terms(phrase)) <= set(question_terms(subject))):
        return _as_question(f"What is known about {subject}")
    if subject and set(question_terms(subject)) <= set(question_terms(phrase)):
        return _as_question(f"What is known about {phrase}")  # the phrase already names the subject
    if subject:
        return _as_question(f"What is known about {phrase} for {subject}")
    if phrase:
        return _as_question(f"What is known about {phrase}")
    return _as_question(f"What do sources state directly about {_keywords(question) or question.rstrip('?.! ')}")


def _narrowing_child(question: str, subject: str, verbs: frozenset[str], gaps: list[str]) -> dict:
    """The one child when nothing splits: narrowed to the first gap, or to the question's own key terms."""
    if gaps:
        phrase = _without_verbs(" ".join(_gap_words(gaps[0]).values()) or gaps[0].rstrip("."), question, verbs)
        return {
            "question": _narrowed(question, subject, verbs, phrase),
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
    findings = _report_findings(inputs.get("findings"))
    # A sentence both a finding and an item of the user's files is told once, under its node,
    # citing both its search results and its SourceRefs.
    distinct = _distinct_items(inputs.get("context_items"))
    repeated = {comparison_key(item["text"]): item for item in distinct}
    for finding in findings:
        item = repeated.get(comparison_key(finding["text"]))
        if item is not None:
            finding["sources"] = _source_refs(item)
    told = {comparison_key(f["text"]) for f in findings}
    items = _relevant_items([item for item in distinct if comparison_key(item["text"]) not in told], question)
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
        "summary": _report_summary(findings, items, question, stats),
        "sections": sections,
        "open_questions": _open_questions(inputs.get("open_gaps")),
    }


def _report_findings(value: object) -> list[dict]:
    """The findings that state something (a heading or a label a model took for one is left out)."""
    findings = []
    for finding in _dicts(value):
        if is_statement(_text(finding.get("text"))):
            findings.append(
                {
                    "node": _text(finding.get("node")),
                    "question": _text(finding.get("question")) or "Findings",
                    "text": cut_text(finding["text"], MAX_PARAGRAPH_CHARS),
                    "citations": _citations(finding.get("citations")),
                }
            )
    return findings


def _distinct_items(value: object) -> list[dict]:
    """The context items that state something, each text once (a repeat adds its SourceRefs to the first)."""
    items: dict[str, dict] = {}
    for item in _context_items(value):
        if not is_statement(item["text"]):
            continue
        key = comparison_key(item["text"])
        if key in items:
            items[key]["sources"] += [ref for ref in item["sources"] if ref not in items[key]["sources"]]
        else:
            items[key] = {**item, "sources": list(item["sources"])}
    return list(items.values())


def _relevant_items(items: list[dict], question: str) -> list[dict]:
    """The items that best answer the question, by BM25 (input order breaks ties); if none shares
    a term with it, the first few, so the report still shows what the user's files hold."""
    scores = bm25_rank(question, [item["text"] for item in items])
    matching = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: (-scores[i], i))
    if not matching:
        return items[:MAX_UNMATCHED_REPORT_ITEMS]
    return [items[i] for i in matching[:MAX_REPORT_ITEMS]]


def _item_paragraph(item: dict) -> dict:
    return {"text": cut_text(item["text"], MAX_PARAGRAPH_CHARS), "sources": _source_refs(item)}


def _source_refs(item: dict) -> list[str]:
    sources: list[str] = []
    for ref in item["sources"]:
        match = _SOURCE_REF.match(ref)
        if match and match.group("ref") not in sources:
            sources.append(match.group("ref"))  # a "::hint" suffix is dropped (schema: file::S4)
    return sources


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
        if finding.get("sources"):
            paragraph["sources"] = finding["sources"]
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


def _report_summary(findings: list[dict], items: list[dict], question: str, stats: dict) -> str:
    """1–3 sentences that best answer the question (BM25 over every statement of the findings and
    items; more citations, then order, break ties), each once, as written."""
    candidates = [
        (sentence, len(f["citations"])) for f in findings for sentence in (statements(f["text"]) or [f["text"]])
    ] + [(sentence, 0) for item in items for sentence in (statements(item["text"]) or [item["text"]])]
    scores = bm25_rank(question, [text for text, _ in candidates])
    ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], -candidates[i][1], i))
    sentences: list[str] = []
    seen: set[str] = set()
    for index in ranked:
        sentence = candidates[index][0].strip()
        if sentence and comparison_key(sentence) not in seen:
            seen.add(comparison_key(sentence))
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
