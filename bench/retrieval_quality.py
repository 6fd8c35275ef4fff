"""Retrieval quality of library search on a real corpus with hand-labelled answers.

The corpus is 22 pages of the Python 3.11 documentation (tests/fixtures/library_corpus,
PSF licence) and 20 questions, each labelled with the one section that answers
it (filename, heading). A hit is a result from that file whose own heading is
that heading. Used by tests/test_library_quality.py (the 80 % recall@5 bar) and
bench/search_bench.py (the figures).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "library_corpus"


@dataclass(frozen=True)
class Question:
    question: str
    filename: str
    heading: str


def corpus_files() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(CORPUS.glob("*.html"))}


def questions() -> list[Question]:
    items = json.loads((CORPUS / "questions.json").read_text())
    return [Question(i["question"], i["filename"], i["heading"]) for i in items]


def evaluate(search, k: int = 5) -> dict:
    """recall@k and MRR of `search(query) -> [(filename, heading), …]` (ranked) over the labelled questions."""
    per_question = []
    for item in questions():
        ranked = search(item.question)
        rank = next(
            (
                i
                for i, (filename, heading) in enumerate(ranked, start=1)
                if (filename, heading) == (item.filename, item.heading)
            ),
            None,
        )
        per_question.append({"question": item.question, "rank": rank, "top": [list(r) for r in ranked[:3]]})
    total = len(per_question)
    return {
        "questions": total,
        f"recall_at_{k}": round(sum(1 for q in per_question if q["rank"] and q["rank"] <= k) / total, 3),
        "mrr": round(sum(1 / q["rank"] for q in per_question if q["rank"]) / total, 3),
        "per_question": per_question,
    }
