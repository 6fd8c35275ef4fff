"""How well a statement answers a question, offline: its terms (BM25) and, with embeddings, its meaning.

A colleague asks in their own words ("where do I put a colleague's key so they can log in?")
and the files answer in theirs ("add it to ~/.ssh/authorized_keys"): terms alone miss that
answer, meaning alone takes a sentence on the same subject for one. So both count, each on its
own scale: BM25 over its best, the cosine over its range among the candidates, at least
MIN_COSINE_SPREAD (library search
measures its rankings in standard deviations since 2026-11-27; this was not re-tuned), KEYWORD_WEIGHT
and 1 - KEYWORD_WEIGHT. A statement is relevant when it shares a weighted term with the question or
is MEANING_FLOOR close to it in meaning; of the relevant ones, those that hold what the question asks
for (a sum of money, a date, a count of what it counts) come first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import embeddings
from .answer_types import asks_answer_type, can_answer
from .prose import csv_row_fields
from .terms import bm25_rank

KEYWORD_WEIGHT = 0.4
# The cosine of all-MiniLM-L6-v2 above which a sentence is about what the question asks, though
# it shares no term with it (tuned on the man-page questions' tune split: bench/research_quality_bench.py).
MEANING_FLOOR = 0.45
# The cosines' range counts as at least this much: of texts all about as near the question (a few
# hundredths apart, within what the model tells apart), the hundredths must not outweigh the terms. A
# byline under the document's title outranked the sentence holding the question's rare term. Any value
# from 0.1 to 0.3 left bench/research_quality_bench.py's tune split as it was (docs/decisions.md).
MIN_COSINE_SPREAD = 0.2
# A statement's section heading says what it is about ("Root cause: A configuration change …"), so it may
# make the statement relevant; but every statement of the section shares it, and read under a heading that
# matches the question a byline or a line with little of its own ("Reminder pilot plan 2027: Prepared by
# …") came as near the question as the section's answer. So a statement ranks by its own terms and meaning,
# and its heading's share of them counts this much (the chat's CONTEXT_WEIGHT is the same idea).
HEADING_WEIGHT = 0.4
# What holding the question's answer type adds to a relevant text's score (in (0, 1]): a score above it holds it.
ANSWERS = 1.0


def under_heading(heading: str, text: str) -> str:
    """A statement read after the heading of its section, which says what it is about."""
    return f"{heading}: {text}" if heading else text


def relevance(question: str, texts: Sequence[str], headings: Sequence[str] | None = None) -> list[float]:
    """One score a text, in order: 0 for a text that bears on the question neither by terms nor by meaning;
    above 1 for one that also holds what the question asks for (llm_platform.answer_types: an amount of
    money for "what did it cost", a date for "when did"), so it ranks before every one that does not.
    `headings`, one a text ("" for none): each text's section heading (see HEADING_WEIGHT)."""
    scores = nearness(question, texts, headings)
    if not asks_answer_type(question):  # its terms and meaning alone: on the scale of a typed question's
        return scores
    read = texts if headings is None else _headed(texts, headings)
    return [
        score + ANSWERS if score > 0 and can_answer(question, text) else score
        for score, text in zip(scores, read, strict=True)
    ]


def nearness(question: str, texts: Sequence[str], headings: Sequence[str] | None = None) -> list[float]:
    """How near each text is to the question in terms and meaning, in [0, 1]: 0 for one that bears on it in
    neither. What the question asks for is not weighed: a sentence nearest a question the files cannot
    answer (a chat card's suggestion) is about its subject, not any sum of money. With `headings`, a text
    bears on the question when it does read under its heading, and ranks by itself with HEADING_WEIGHT of
    what the heading adds."""
    texts, headings = _rows_by_their_values(texts, headings)
    headed = headings is not None and any(headings)
    read = _headed(texts, headings) if headed else []
    keyword = bm25_rank(question, list(texts))
    both = embeddings.closeness(question, [*texts, *read])  # one call for the two readings
    cosines = None if both is None else both[: len(texts)]
    keyword_gate, cosines_gate = keyword, cosines
    if headed:
        keyword_read = bm25_rank(question, read)
        keyword_gate = [max(own, under) for own, under in zip(keyword, keyword_read, strict=True)]
        keyword = [own + HEADING_WEIGHT * (under - own) for own, under in zip(keyword, keyword_read, strict=True)]
        if both is not None:
            cosines_read = both[len(texts) :]
            cosines_gate = np.maximum(cosines, cosines_read)
            cosines = cosines + HEADING_WEIGHT * (cosines_read - cosines)
    best = max(keyword, default=0.0) or 1.0
    if cosines is None:
        return [float(score) / best if gate > 0 else 0.0 for score, gate in zip(keyword, keyword_gate, strict=True)]
    low, high = float(cosines.min()), float(cosines.max())
    spread = max(high - low, MIN_COSINE_SPREAD)
    return [
        # (a relevant text never scores 0, which says "irrelevant")
        max(KEYWORD_WEIGHT * score / best + (1 - KEYWORD_WEIGHT) * (float(cosine) - low) / spread, 1e-6)
        if gate > 0 or gate_cosine >= MEANING_FLOOR
        else 0.0
        for score, cosine, gate, gate_cosine in zip(keyword, cosines, keyword_gate, cosines_gate, strict=True)
    ]


def _rows_by_their_values(
    texts: Sequence[str], headings: Sequence[str] | None
) -> tuple[Sequence[str], Sequence[str] | None]:
    """The texts with each table row said by its values, its column names joining its heading: every row of a
    table has them, as every sentence of a section its heading ("booking_id: B-2306; instrument: XRD; …" is
    no answer to what a new student needs to know about booking instruments)."""
    rows = [csv_row_fields(text) for text in texts]
    if not any(rows):
        return texts, headings
    headings = headings or [""] * len(texts)
    return (
        ["; ".join(value for _name, value in row) if row else text for row, text in zip(rows, texts, strict=True)],
        [
            " ".join([heading, *(name for name, _value in row)]).strip() if row else heading
            for row, heading in zip(rows, headings, strict=True)
        ],
    )


def _headed(texts: Sequence[str], headings: Sequence[str]) -> list[str]:
    return [under_heading(heading, text) for heading, text in zip(headings, texts, strict=True)]
