"""Does a cited text support a statement? The check every cited claim passes before it is stored or shown.

The test is lexical and documented, not a model's opinion: a statement is
supported by a text when

1. every figure it states (numbers, years, percentages; "1,200" = "1200"; a
   number written as a word, "six" = "6") occurs in the text, and
2. at least SUPPORT_THRESHOLD of its content words (stemmed, stop words out;
   llm_platform.terms) occur in the text.

The threshold is calibrated on a hand-labelled set of statements and cited
texts (tests/fixtures/grounding/labelled.json; `bench/grounding_bench.py`
prints precision and recall at every threshold). A paraphrase that shares few
words with its source can fail the test: the citation is then dropped and
recorded, never shown as support it does not visibly give.

No Django here: the offline provider's handlers may use it in any process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_platform.prose import csv_row_fields
from llm_platform.sourcerefs import SPAN
from llm_platform.terms import analyze, written_numbers

SUPPORT_THRESHOLD = 0.5
# A sentence with fewer content words ("See [2].") says too little to vouch for a citation alone.
MIN_CONTENT_TERMS = 2

_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:[ ,]\d{3})+(?:\.\d+)?(?![\w])|\d+(?:\.\d+)?")
_CITATION_MARK = re.compile(rf"\[\d+(?:\s*[,–-]\s*\d+)*\]|\b[^\s:]+::{SPAN}\b")
# A sentence ends at . ! or ? before the next one's capital or digit; citation marks right after
# the stop ("… budget. (valves.md::S2)", "… fell. [3]") still belong to the sentence they close. A
# stop right after a citation mark ends its sentence whatever follows: a table's row quoted next
# starts with its first column's name ("… (fees.csv::S2). month: 2026-09; …").
_SENTENCE_END = re.compile(
    rf"(?:(?<=[.!?])(?:\s*(?:\([^()]*::{SPAN}[^()]*\)|\[[^\[\]]+\]))*(?=\s+[\"'(\[]?[A-Z0-9])"
    rf"|\([^()]*::{SPAN}[^()]*\)[.!?])(?P<gap>\s+)"
)


@dataclass(frozen=True)
class Support:
    score: float  # share of the statement's content words found in the text
    missing_figures: tuple[str, ...]  # figures the statement states and the text does not

    @property
    def supported(self) -> bool:
        return self.passes(SUPPORT_THRESHOLD)

    def passes(self, threshold: float) -> bool:
        return not self.missing_figures and self.score >= threshold


def support(statement: str, text: str) -> Support:
    """How well `text` supports `statement` (citation marks in the statement are ignored)."""
    statement = _CITATION_MARK.sub(" ", statement)
    figures = _figures(statement)
    missing = tuple(sorted(figures - _figures(text)))
    wanted = set(analyze(statement)) - {f.replace(".", "") for f in figures}
    wanted = {term for term in wanted if not term.isdigit()}
    if not wanted:  # nothing but figures (or nothing at all): the figures decide
        return Support(score=1.0 if figures and not missing else 0.0, missing_figures=missing)
    found = wanted & set(analyze(text))
    return Support(score=round(len(found) / len(wanted), 4), missing_figures=missing)


def supports(statement: str, text: str) -> bool:
    return support(statement, text).supported


def sentences(text: str) -> list[str]:
    """The sentences of a paragraph, each with its citation marks."""
    text, found, start = text.strip(), [], 0
    for end in _SENTENCE_END.finditer(text):
        found.append(text[start : end.start("gap")])
        start = end.end("gap")
    found.append(text[start:])
    return [part.strip() for part in found if part.strip()]


def _clauses(statement: str) -> list[str]:
    """Sentences, and the parts of a sentence between semicolons or after a colon."""
    return [
        part for sentence in sentences(statement) for part in dict.fromkeys([sentence, *re.split(r"[;:]\s", sentence)])
    ]


def _content_terms(text: str) -> int:
    return len(set(analyze(_CITATION_MARK.sub(" ", text))))


def _figures(text: str) -> set[str]:
    digits = {re.sub(r"[ ,]", "", match.group()) for match in _NUMBER.finditer(text)}
    # Numbers written as words are figures too: "checked every six months" is not supported by "every three months".
    return digits | {str(number) for number in written_numbers(text)}


def supporting(statement: str, cited: dict) -> tuple[list, list]:
    """(kept, dropped) keys of `cited` ({key: cited text}): a key is kept when its text supports the
    statement or one of its sentences or clauses, so a paragraph that weaves two sources keeps both. A
    table's row is one record, also beside another source's sentence: only the whole row is supported
    ("model: ProBook Fortis 14" is no support of the row whose price changed)."""
    clauses = [
        part
        for sentence in sentences(statement)
        for part in ([sentence] if csv_row_fields(_CITATION_MARK.sub(" ", sentence).strip()) else _clauses(sentence))
    ]
    parts = [statement] + [part for part in clauses if _content_terms(part) >= MIN_CONTENT_TERMS]
    kept, dropped = [], []
    for key, text in cited.items():
        (kept if any(supports(part, text or "") for part in parts) else dropped).append(key)
    return kept, dropped


# A report's citation marks: "[3]", "[2, 5]" (the reference numbers in group 1).
CITATION_MARKS = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def mark_numbers(mark: re.Match) -> list[int]:
    """The reference numbers of one CITATION_MARKS match, in order."""
    return [int(n) for n in mark.group(1).split(",")]


def keeping_marks(text: str, allowed: set[int]) -> str:
    """`text` with every [n] citation mark whose n is not `allowed` taken out ("[2, 5]" keeps what stays)."""

    def keep_allowed(match: re.Match) -> str:
        left = [str(n) for n in mark_numbers(match) if n in allowed]
        return f"[{', '.join(left)}]" if left else ""

    cleaned = CITATION_MARKS.sub(keep_allowed, text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()
