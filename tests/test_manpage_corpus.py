"""The man page corpus and its questions are what tests/fixtures/manpages/README.md promises (no database)."""

import json
import re
from collections import Counter

import pytest

from bench.manpage_quality import (
    CORPUS,
    collapse,
    corpus_files,
    evaluate,
    held_out_sha256,
    questions,
    sections,
)

ANSWERABLE = ("paraphrase", "words")


@pytest.fixture(scope="module")
def pages():
    return {name: data.decode("utf-8") for name, data in corpus_files().items()}


def test_the_corpus_is_at_least_90_markdown_pages_under_3_mb(pages):
    assert len(pages) >= 90
    assert sum(len(data) for data in corpus_files().values()) < 3_000_000
    for name, text in pages.items():
        title = re.fullmatch(r"(.+)\.(\d)\.md", name)
        assert text.startswith(f"# {title[1]}({title[2]})\n"), name
        assert "NAME" in sections(text), name


def test_every_quote_is_under_its_heading_in_its_file_and_in_no_other_file(pages):
    collapsed = {name: collapse(text) for name, text in pages.items()}
    for q in questions():
        if q.style == "unanswerable":
            continue
        quote = collapse(q.quote)
        assert q.filename in pages, q.id
        assert q.heading in sections(pages[q.filename]), (q.id, q.heading)
        assert quote in collapse(sections(pages[q.filename])[q.heading]), (q.id, q.quote)
        assert [name for name, text in collapsed.items() if quote in text] == [q.filename], q.id
        assert 5 <= len(quote.split()) <= 15, (q.id, q.quote)


def test_ids_are_unique_and_fields_are_as_documented():
    items = json.loads((CORPUS / "questions.json").read_text(encoding="utf-8"))
    ids = [item["id"] for item in items]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"q\d{3}", i) for i in ids)
    assert len({item["question"] for item in items}) == len(items)
    for item in items:
        assert set(item) == {"id", "question", "style", "filename", "heading", "quote", "split"}, item["id"]
        assert item["split"] in ("tune", "held_out"), item["id"]
        answerable = item["style"] in ANSWERABLE
        assert answerable or item["style"] == "unanswerable", item["id"]
        assert (item["filename"] is not None) == (item["heading"] is not None) == (item["quote"] is not None)
        assert (item["filename"] is not None) == answerable, item["id"]


def test_counts_per_style_and_split_are_as_promised():
    qs = questions()
    styles = Counter(q.style for q in qs)
    assert styles["paraphrase"] >= 48 and styles["words"] >= 48 and styles["unanswerable"] >= 12
    assert len({q.filename for q in qs if q.filename}) >= 60
    for style, count in styles.items():
        held_out = sum(1 for q in qs if q.style == style and q.split == "held_out")
        assert held_out == count // 2, style
    assert len(questions(split="tune")) + len(questions(split="held_out")) == len(qs)


def test_the_split_follows_the_fixed_rule():
    # Within each style, in id order: 1st, 3rd, … tune; 2nd, 4th, … held out.
    for style in (*ANSWERABLE, "unanswerable"):
        in_order = sorted(questions(style=style), key=lambda q: q.id)
        assert [q.split for q in in_order] == ["tune" if i % 2 == 0 else "held_out" for i in range(len(in_order))]


def test_the_held_out_questions_are_frozen():
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    recorded = re.search(r"held-out sha256: `([0-9a-f]{64})`", readme)[1]
    assert held_out_sha256() == recorded


def test_evaluate_ranks_the_first_result_that_holds_the_quote(pages):
    by_question = {q.question: q for q in questions(split="tune")}

    def oracle(question):
        q = by_question[question]
        other = "cp.1.md" if q.filename != "cp.1.md" else "mv.1.md"
        return [
            (other, pages[other]),
            (q.filename, "## NAME only"),
            (q.filename, sections(pages[q.filename])[q.heading]),
        ]

    result = evaluate(oracle, k=5)
    assert result["questions"] == sum(1 for q in by_question.values() if q.style in ANSWERABLE)
    assert {q["rank"] for q in result["per_question"]} == {3}
    assert result["recall_at_5"] == 1.0 and result["mrr"] == 0.333
    assert set(result["by_style"]) == set(ANSWERABLE)

    nothing = evaluate(lambda question: [], k=5, style="words", split="held_out")
    assert nothing["recall_at_5"] == 0.0 and nothing["mrr"] == 0.0 and set(nothing["by_style"]) == {"words"}
    with pytest.raises(ValueError):
        evaluate(oracle, style="unanswerable")
