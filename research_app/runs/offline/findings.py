"""NODE_FINDINGS offline: from each numbered search result, the statements (never a heading
or a label) that best answer the question by terms and meaning (relevance.py), in the
source's own words; the same sentence in several results becomes one finding citing all of them.
"""

from __future__ import annotations

import re

from context_app.library import SECTION_LOCATION
from extraction.blocks import SECTION_PATH_SEPARATOR, opening_heading
from llm_platform.answer_types import answer_type_terms
from llm_platform.extractive import chunk_text
from llm_platform.relevance import ANSWERS, relevance
from llm_platform.statements import statements
from llm_platform.task_envelope import EvidenceChunk, evidence_chunks, read_task
from llm_platform.terms import BACK_REFERENCES, comparison_key, cut_text, question_terms, split_leading_heading

from .inputs import required_question, strings_of
from .questions import own_part

MAX_FINDINGS = 8
MAX_SENTENCES_PER_RESULT = 2
MAX_FINDING_CHARS = 600
# A result gives findings only when its nearest statement comes at least this near the question, as a share of
# the nearest statement of all (relevance.nearness), or holds what the question asks for: a result that bears on
# the question by one word ("new" of "new parents", in an onboarding plan) gave its best two statements, however
# far from what was asked. The statements of a result that does are weighed as before: a section's second item
# bears on the question by its heading alone. On bench/research_quality_bench.py's tune split 0.65 put the
# answering page among the first three citations more often than no floor (0.812 against 0.792), citing it
# as often; 0.5 changed nothing, 0.8 cited it less (0.75).
FINDING_FLOOR = 0.65
_RESULT_NUMBER = re.compile(r"^\s*\[(\d+)\]")
_TITLE_SECTION = f", {SECTION_LOCATION}"  # a result's title: "[3] notes.md, Section: Causes > Housing" (evidence.py)


def result_number(chunk: EvidenceChunk) -> int | None:
    """The [n] a search result's chunk title starts with ("[3] report.pdf, Page 4" → 3), or None."""
    match = _RESULT_NUMBER.match(chunk.title)
    return int(match.group(1)) if match else None


def page_sections(heading: str, text: str) -> list[tuple[str, str]]:
    """(heading, text) of each section of a result's text under `heading`: a paragraph that opens with a
    heading line starts one ("Root cause" of a PDF's page: its reader opens a span at a numbered heading or a
    line set larger than the text), whose statements stand under `heading > Root cause`; the text before the
    first stands under `heading`."""
    sections: list[tuple[str, list[str]]] = [(heading, [])]
    for paragraph in text.split("\n\n"):
        opens = opening_heading(paragraph)
        if opens and opens != heading:
            under = SECTION_PATH_SEPARATOR.join(filter(None, [heading, opens]))
            if sections[-1][1]:
                sections.append((under, []))
            else:  # the page's first paragraph too: "2. Vehicle checks" heads the span it opens
                sections[-1] = (under, [])
        sections[-1][1].append(paragraph)
    return [(under, "\n\n".join(paragraphs)) for under, paragraphs in sections]


def numbered_results(prompt: str) -> list[tuple[int, str, str]]:
    """(n, heading, text) of each numbered search result whose text the prompt carries: its heading is its
    section's path ("killall(1) > OPTIONS": the page's title says what its options are of), else the line
    its text starts with ("Root cause"), or ""."""
    results = []
    for chunk in evidence_chunks(prompt):
        number, text = result_number(chunk), chunk_text(chunk)
        if number is not None and text:  # not a numbered result, or its text omitted by the token budget
            section = chunk.title.partition(_TITLE_SECTION)[2].strip()
            results.append((number, section or split_leading_heading(text)[0], text))
    return results


def refers_back(statement: str) -> bool:
    """Whether a statement opens with a word that takes up the one before it (BACK_REFERENCES): quoted alone,
    it would not say what it is about."""
    first = statement.split(maxsplit=1)[0].strip("\"'“‘(").lower() if statement.strip() else ""
    return first in BACK_REFERENCES


def whole_statements(text: str) -> list[str]:
    """A text's statements, one that refers back said with the one before it ("Sam estimated the work at 26
    weeks. He proposed hiring a contractor …"): apart, "He proposed …" names no one."""
    said: list[str] = []
    for sentence in statements(text) or [text]:
        if said and refers_back(sentence):
            said[-1] = f"{said[-1]} {sentence}"
        else:
            said.append(sentence)
    return said


def _nearness(score: float) -> float:
    """How near a statement is to the question (relevance.nearness), whether or not it holds the answer's type."""
    return score - ANSWERS if score > ANSWERS else score


def node_findings(prompt: str) -> dict:
    """Extractive findings: per result, its statements that best answer the question; equal ones merged.

    Every statement of every result is scored for the question by terms (BM25, the
    statements as the collection: a rare shared term weighs more than one every result
    repeats) and meaning (relevance.py); each result near enough (FINDING_FLOOR) gives its best two that score at
    all, and its next best while MAX_FINDINGS leaves room (the highest first, whatever result they come from).
    A statement that opens by referring back ("Its roadmap …") is quoted with the one before it.
    Headings, labels and other lines that state nothing are never findings. Ranked by score,
    then the lowest result number citing them, then position; at most MAX_FINDINGS.
    """
    _, inputs = read_task(prompt)
    question = required_question(inputs, "NODE_FINDINGS")
    candidates: list[tuple[int, int, str]] = []  # (result number, position, statement)
    headings: list[str] = []  # each statement's section heading, which says what it is about (relevance.py)
    said: dict[int, list[str]] = {}  # each result's statements, in order
    for number, heading, text in numbered_results(prompt):
        # A title that reads as a statement ("Retro call: invoice export outage of 18 November", a label and its
        # date) heads the result and states nothing.
        title = split_leading_heading(text)[0]
        said[number] = []
        for under, section in page_sections(heading, text):
            for sentence in statements(section):
                if sentence != title:
                    candidates.append((number, len(said[number]), sentence))
                    headings.append(under)
                    said[number].append(sentence)
    by_result: dict[int, list[tuple[float, int, str]]] = {}
    texts = [sentence for _number, _position, sentence in candidates]
    scores = relevance(question, texts, headings)
    part = own_part(question, strings_of(inputs.get("other_parts")))
    if part:
        # A statement that bears on the frame every part shares alone answers a sibling's part as well as this
        # one: "programme_officer: Leah Morgan" for "… need to know about payments?" beside "… about expenses?".
        # Where the part names the kind of answer the question asks for ("…: cost"), a statement that holds it
        # bears on the part whatever its words ("the lowest compliant tender was from Kellaway Lifts at £186,000").
        own_terms = set(question_terms(part))
        kind = bool(own_terms) and own_terms <= answer_type_terms(question)
        focused = [
            score if near > 0 or (kind and score > ANSWERS) else 0.0
            for score, near in zip(scores, relevance(part, texts, headings), strict=True)
        ]
        scores = focused if any(focused) else scores
    for (number, position, sentence), score in zip(candidates, scores, strict=True):
        if score > 0:
            by_result.setdefault(number, []).append((score, position, sentence))
    floor = FINDING_FLOOR * max(
        (_nearness(score) for scored in by_result.values() for score, _p, _s in scored), default=0
    )
    by_result = {
        number: scored
        for number, scored in by_result.items()
        if any(score > ANSWERS or _nearness(score) >= floor for score, _p, _s in scored)
    }
    merged: dict[str, dict] = {}  # normalised statement → {"text", "citations", "rank"}
    ranked_by_result = {number: sorted(scored, key=lambda s: (-s[0], s[1])) for number, scored in by_result.items()}
    # Each result gives its best two, or every one that holds what the question asks for where more do (a cause
    # for "why": a win/loss analysis's "Why we lose" section gives three): they rank first, best first.
    picked = {
        number: scored[: max(MAX_SENTENCES_PER_RESULT, sum(score > ANSWERS for score, _p, _s in scored))]
        for number, scored in ranked_by_result.items()
    }
    # Slots the results' best two leave free go to their next best, highest first: a contract's one span holds
    # every clause a question about it needs.
    free = MAX_FINDINGS - sum(map(len, picked.values()))
    rest = sorted(
        ((item, number) for number, scored in ranked_by_result.items() for item in scored[len(picked[number]) :]),
        key=lambda pair: (-pair[0][0], pair[1], pair[0][1]),
    )
    for item, number in rest[: max(free, 0)]:
        picked[number].append(item)
    for number, chosen in picked.items():
        positions = {position for _score, position, _sentence in chosen}
        for score, position, sentence in chosen:
            if position + 1 in positions and refers_back(said[number][position + 1]):
                continue  # said with the statement after it, which refers back to it
            if position > 0 and refers_back(sentence):
                sentence = f"{said[number][position - 1]} {sentence}"
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
