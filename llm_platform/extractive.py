"""What the extractive answers of several apps share: a chunk's own text, and the phrases of a question.

The offline research tasks and the offline chat turn both read an envelope's
chunks (`chunk_text`) and name what the evidence leaves uncovered in the
question's own words (`uncovered_phrases`, built on `content_runs`). Terms are
llm_platform.terms's: lower-cased, stop words out, Snowball-stemmed.

No Django here: the offline provider's handlers use it in any process.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from llm_platform.ir.budget import SUMMARY_PREFIX
from llm_platform.task_envelope import EvidenceChunk
from llm_platform.terms import (
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    WORD,
    is_content_word,
    stem,
    without_relative_time,
)

# What the degrade ladder wraps a summarised chunk in (llm_platform.ir.budget.extractive_summary).
_SUMMARY_POINTER = re.compile(r"\s*\[see \S+ for full content\]\s*$")


def chunk_text(chunk: EvidenceChunk) -> str:
    """A chunk's own text: "" when omitted, a budget summary's marker and pointer removed."""
    text = chunk.text.strip()
    if text.startswith(SUMMARY_PREFIX):
        text = _SUMMARY_POINTER.sub("", text.removeprefix(SUMMARY_PREFIX)).strip()
    return text


def content_runs(text: str, ignored: frozenset[str] = OVERLAP_STOP_WORDS | QUESTION_WORDS) -> list[list[str]]:
    """Maximal runs of consecutive content words; a stop word or punctuation other than "-" ends a run."""
    runs: list[list[str]] = []
    for segment in re.split(r"[^\w\s-]+", text):
        run: list[str] = []
        for word in WORD.findall(segment):
            if is_content_word(word, ignored):
                run.append(word)
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
    return runs


def uncovered_phrases(question: str, covered: set[str]) -> list[str]:
    """Runs of adjacent uncovered question terms, as written ("maintenance cost"); each term in one phrase."""
    return _phrases(question, lambda term: term not in covered)


def covered_phrases(question: str, covered: set[str]) -> list[str]:
    """Runs of adjacent covered question terms, as written ("smart meters"); each term in one phrase."""
    return _phrases(question, lambda term: term in covered)


def _phrases(question: str, wanted: Callable[[str], bool]) -> list[str]:
    phrases: list[str] = []
    used: set[str] = set()
    for run in content_runs(without_relative_time(question)):  # "this week" is when it is asked, not a subject
        phrase: list[str] = []
        for word in [*run, ""]:  # "" closes the last phrase
            term = stem(word.lower()) if word else ""
            if word and wanted(term) and term not in used:
                phrase.append(word)
                used.add(term)
            elif phrase:
                phrases.append(" ".join(phrase))
                phrase = []
    return phrases
