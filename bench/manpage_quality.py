"""Retrieval quality of library search on a larger real corpus: man pages with hand-written questions.

The corpus is tests/fixtures/manpages: 117 Debian 12 man pages rendered to Markdown by build.py there
(each page under its own package's licence, see README.md there). questions.json holds 170 answerable
questions, each labelled with the file, the `##` section and a short verbatim quote that answers it,
in two styles ("paraphrase": everyday words that avoid the page's own terms; "words": the page's own
terms, as someone who knows them would search), and 15 "unanswerable" questions that no page answers.
Every question has a fixed split: "tune" may be looked at while tuning search; "held_out" is frozen
(its sha256 is in README.md) and is for the final figures only.

A hit is a result from the labelled file whose text contains the quote, both whitespace-collapsed:
the result may be a whole section, a paragraph or a chunk, as long as it holds the answer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "manpages"
SPLITS = ("tune", "held_out")
STYLES = ("paraphrase", "words", "unanswerable")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    style: str
    filename: str | None
    heading: str | None
    quote: str | None
    split: str


def collapse(text: str) -> str:
    return " ".join(text.split())


def corpus_files() -> dict[str, bytes]:
    """The pages, `<name>.<section>.md` → bytes (README.md and questions.json are not pages)."""
    return {path.name: path.read_bytes() for path in sorted(CORPUS.glob("*.[0-9].md"))}


def questions(split: str | None = None, style: str | None = None) -> list[Question]:
    if split not in (None, *SPLITS):
        raise ValueError(f"split must be one of {SPLITS} or None, not {split!r}")
    if style not in (None, *STYLES):
        raise ValueError(f"style must be one of {STYLES} or None, not {style!r}")
    items = [Question(**item) for item in json.loads((CORPUS / "questions.json").read_text(encoding="utf-8"))]
    return [q for q in items if split in (None, q.split) and style in (None, q.style)]


def sections(markdown: str) -> dict[str, str]:
    """`## heading` → the text under it up to the next `## ` line (### subsections included); a heading
    that occurs twice in a page gets both parts."""
    parts: dict[str, list[str]] = {}
    current = None
    for line in markdown.split("\n"):
        if line.startswith("## "):
            current = parts.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {heading: "\n".join(lines) for heading, lines in parts.items()}


def held_out_sha256() -> str:
    """sha256 of the canonical JSON of the held-out questions (sorted by id), as recorded in README.md."""
    items = [asdict(q) for q in sorted(questions(split="held_out"), key=lambda q: q.id)]
    return hashlib.sha256(json.dumps(items, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _rank(item: Question, ranked) -> int | None:
    quote = collapse(item.quote)
    return next(
        (
            i
            for i, (filename, text) in enumerate(ranked, start=1)
            if filename == item.filename and quote in collapse(text)
        ),
        None,
    )


def _scores(per_question: list[dict], k: int) -> dict:
    total = len(per_question)
    return {
        "questions": total,
        f"recall_at_{k}": round(sum(1 for q in per_question if q["rank"] and q["rank"] <= k) / total, 3),
        "mrr": round(sum(1 / q["rank"] for q in per_question if q["rank"]) / total, 3),
    }


def evaluate(search, k: int = 5, split: str | None = "tune", style: str | None = None) -> dict:
    """recall@k and MRR of `search(question) -> [(filename, text), …]` (ranked) over the answerable
    questions of one split (the tune split unless asked; split=None for both) and style (both unless
    asked). The rank of a question is that of the first result that holds its answer."""
    if style == "unanswerable":
        raise ValueError("unanswerable questions have no answer to rank")
    items = [q for q in questions(split=split, style=style) if q.style != "unanswerable"]
    if not items:
        raise ValueError(f"no answerable questions for split={split!r}, style={style!r}")
    per_question = []
    for item in items:
        ranked = list(search(item.question))
        per_question.append(
            {
                "id": item.id,
                "question": item.question,
                "style": item.style,
                "rank": _rank(item, ranked),
                "top": [filename for filename, _ in ranked[:3]],
            }
        )
    by_style = {
        name: _scores([q for q in per_question if q["style"] == name], k)
        for name in ("paraphrase", "words")
        if any(q["style"] == name for q in per_question)
    }
    return {**_scores(per_question, k), "split": split, "by_style": by_style, "per_question": per_question}
