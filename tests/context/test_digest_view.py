"""context_app.digest_view: what the parsed-context pane shows of a stored digest."""

from context_app.digest_view import DigestCards
from context_app.models import StoredDigest


def summary_paragraphs(content: dict) -> list[str]:
    return DigestCards(
        StoredDigest(content=content, provider="offline", model="extractive"), {}, False
    ).summary_paragraphs


def test_an_aggregates_summary_tells_each_file_in_a_paragraph_of_its_own():
    summary = "2 files. 1 conflict between files. report.pdf: Losses fell (see memo.docx: p. 2). memo.docx: Costs rose."
    documents = [
        {"filename": "report.pdf", "summary": "Losses fell."},
        {"filename": "memo.docx", "summary": "Costs rose."},
    ]
    assert summary_paragraphs({"summary": summary, "documents": documents}) == [
        "2 files. 1 conflict between files.",
        "report.pdf: Losses fell (see memo.docx: p. 2).",
        "memo.docx: Costs rose.",
    ]


def test_a_summary_that_does_not_tell_its_files_by_name_stays_one_paragraph():
    documents = [{"filename": "report.pdf", "summary": "Losses fell."}]
    assert summary_paragraphs({"summary": "Losses fell in 2022 across the network.", "documents": documents}) == [
        "Losses fell in 2022 across the network."
    ]
    assert summary_paragraphs({"summary": "A file's digest: no documents."}) == ["A file's digest: no documents."]
