"""Extraction and spans for every supported format, and every way a file can be bad."""

import io
import json
import random
import re
import subprocess
import zipfile
from pathlib import Path

import pypdf
import pytest

from bench.synthetic_pdf import build_pdf, report_pages
from extraction import (
    CHUNKING_VERSION,
    SPAN_MAX_CHARS,
    ExtractionError,
    ExtractionLimits,
    clean_filename,
    detect_format,
    extract_document,
    normalise_text,
)
from llm_platform.statements import statements
from llm_platform.terms import split_sentences

FIXTURES = Path(__file__).parents[1] / "fixtures"


def extract(name: str, **limits):
    return extract_document((FIXTURES / name).read_bytes(), name, None, ExtractionLimits(**limits) if limits else None)


def assert_spans_consistent(document):
    assert document.spans
    assert [s.span_id for s in document.spans] == [f"S{i}" for i in range(1, len(document.spans) + 1)]
    for span in document.spans:
        assert document.text[span.start : span.end] == span.text
        assert span.text.strip() and len(span.text) <= SPAN_MAX_CHARS * 2
    starts = [s.start for s in document.spans]
    assert starts == sorted(starts)


@pytest.mark.parametrize(
    "name, file_format, phrase",
    [
        ("report.pdf", "pdf", "Water losses fell by 18 percent"),
        ("brief.docx", "docx", "Each meter must transmit readings every 15 minutes"),
        ("notes.md", "markdown", "Night flow dropped to 210 m3/h"),
        ("page.html", "html", "keep losses below 20 percent by 2026"),
        ("data.csv", "csv", "district: Harbour"),
        ("records.json", "json", "AC-011"),
        ("legacy.txt", "text", "Coût total : 48 000 €"),
    ],
)
def test_every_format_parses(name, file_format, phrase):
    document = extract(name)
    assert document.format == file_format
    assert phrase in document.text
    assert_spans_consistent(document)
    again = extract(name)
    assert (again.extracted_text_hash, again.spans_hash) == (document.extracted_text_hash, document.spans_hash)


def test_pdf_spans_follow_pages():
    document = extract("report.pdf")
    assert document.page_count == 3
    assert [s.locator for s in document.spans] == ["p. 1", "p. 2", "p. 3"]
    assert "acoustic sensors" in document.spans[-1].text


def test_docx_heading_paths_and_table_in_body_order():
    document = extract("brief.docx")
    by_text = {s.text.split("\n")[0]: s for s in document.spans}
    assert by_text["Technical"].locator == "Procurement Brief > Requirements > Technical"
    technical = by_text["Technical"].text
    assert "North | 12000 | 2.4 million" in technical
    assert technical.index("transmit readings") < technical.index("Lot | Meters")
    assert by_text["Risks"].locator == "Procurement Brief > Requirements > Risks"


def test_a_docx_paragraph_set_bold_that_reads_as_a_heading_heads_a_section():
    """A memo written without Word's heading styles heads its sections with bold lines: its "Risks" and
    "Budget" were sentences of the title's section, and a citation of a risk opened the whole memo. A bold
    label before its text, or a bold sentence, heads nothing."""
    import docx

    memo = docx.Document()
    memo.add_heading("Regeneration Atlas: grant summary", 1)
    memo.add_paragraph("The award runs for five years from 1 April 2026.")
    for bold, plain in [
        ("Risks", ""),
        ("", "Recruiting a second postdoc may take longer than planned."),
        ("Note: ", "amounts exclude VAT."),
        ("Do not share the budget.", ""),
        ("Budget", ""),
        ("", "The total award is 2.4 million pounds."),
    ]:
        paragraph = memo.add_paragraph()
        if bold:
            paragraph.add_run(bold).bold = True
        if plain:
            paragraph.add_run(plain)
    buffer = io.BytesIO()
    memo.save(buffer)
    spans = [
        (span.locator, span.text.split("\n")[0]) for span in extract_document(buffer.getvalue(), "memo.docx").spans
    ]
    assert spans == [
        ("Regeneration Atlas: grant summary", "Regeneration Atlas: grant summary"),
        ("Regeneration Atlas: grant summary > Risks", "Risks"),
        ("Regeneration Atlas: grant summary > Budget", "Budget"),
    ], spans


def test_html_drops_scripts_styles_and_keeps_headings():
    document = extract("page.html")
    for hidden in ("alert(1)", "tracking", "font-family", "never shown", "Enable JavaScript"):
        assert hidden not in document.text
    assert "Industry groups say the target is ambitious & may be hard" in document.text
    assert any(s.locator == "Regulator sets new loss target > Reaction" for s in document.spans)
    assert "Metro Water | 24%" in document.text


def test_a_web_pages_paragraph_all_in_bold_that_reads_as_a_heading_heads_a_section():
    """A page exported from a wiki heads its sections with <p><strong>…</strong></p>: its "Budget" was a
    sentence of the "Risks" section above it. A bold label before its text, a bold sentence or a list's bold
    item heads nothing."""
    page = (
        b"<html><body><h1>Grant summary</h1><p>The award runs for five years.</p>"
        b"<p><strong>Risks</strong></p><p>Recruiting a second postdoc may take longer.</p>"
        b"<p><b>Note:</b> amounts exclude VAT.</p><ul><li><strong>Fast</strong></li><li>Slow</li></ul>"
        b"<p><strong>Do not share the budget.</strong></p>"
        b"<div><b>Budget</b></div><p>The total award is 2.4 million pounds.</p></body></html>"
    )
    spans = [(span.locator, span.text.split("\n")[0]) for span in extract_document(page, "grant.html").spans]
    assert spans == [
        ("Grant summary", "Grant summary"),
        ("Grant summary > Risks", "Risks"),
        ("Grant summary > Budget", "Budget"),
    ], spans


def test_a_line_break_keeps_its_block_and_a_definition_list_term_heads_its_definition():
    """A glossary's <dt>CAC payback</dt><dd>The months it takes …</dd> were two paragraphs: the definition lost
    what it defines ("What does CAC payback mean?" was asked back). An address's <br> lines were a paragraph
    each."""
    page = (
        "<html><body><h1>Finance glossary</h1><dl><dt>CAC payback</dt>"
        "<dd>The months it takes for a customer's margin to repay what it cost to win them.</dd></dl>"
        "<p>Berlin office<br>Torstraße 140<br/>10119 Berlin</p><p>The office opens at nine.</p></body></html>"
    )
    document = extract_document(page.encode(), "glossary.html", None)
    paragraphs = document.text.split("\n\n")
    assert "CAC payback\nThe months it takes for a customer's margin to repay what it cost to win them." in paragraphs
    assert "Berlin office\nTorstraße 140\n10119 Berlin" in paragraphs
    assert statements(document.text)[0] == (
        "CAC payback: The months it takes for a customer's margin to repay what it cost to win them."
    )


def test_a_page_that_marks_its_main_content_is_read_there_alone():
    """A cookie banner above the page and a footer below it were facts of the donor FAQ ("We use cookies to
    improve your experience."): the site's furniture, not the page's."""
    page = (
        "<html><head><title>Donor FAQ</title></head><body>"
        '<div class="banner">We use cookies to improve your experience on this website.</div>'
        "<nav><a href='/'>Home</a> <a href='/give'>Give</a></nav>"
        "<div role='main'><h1>Questions donors ask</h1><p>Gifts are deductible to the extent the law allows.</p></div>"
        "<footer><p>Our office is open on weekdays from nine to five.</p></footer></body></html>"
    )
    document = extract_document(page.encode(), "faq.html", None)
    assert "Gifts are deductible to the extent the law allows." in document.text
    assert "cookies" not in document.text and "Home" not in document.text and "weekdays" not in document.text
    assert document.spans[0].text == "Donor FAQ"  # the page's title is still its first span
    without_main = page.replace("<div role='main'>", "<div>")
    assert "weekdays" in extract_document(without_main.encode(), "faq.html", None).text  # no mark: all is read
    # A <main> around a heading alone, the article beside it: the page is read whole, nothing lost.
    misplaced = (
        "<html><body><main><h1>Annual report</h1></main><article><p>"
        + "Water losses fell from 24 percent to 19 percent after the valve programme. " * 5
        + "</p></article></body></html>"
    )
    assert "Water losses fell" in extract_document(misplaced.encode(), "report.html", None).text


def test_a_drafts_tracked_insertions_are_its_text_and_its_deletions_are_not():
    """An expense policy sent with its changes tracked read "Staff may claim mileage at  for trips outside
    Eastport.": python-docx's paragraph text skips the runs inside <w:ins>. A reader sees the draft as Word's
    "No Markup" view shows it: insertions in, deletions out."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    def tracked(kind: str, text: str):
        change = OxmlElement(f"w:{kind}")
        change.set(qn("w:id"), "1")
        change.set(qn("w:author"), "Ruth Lind")
        run, said = OxmlElement("w:r"), OxmlElement("w:t" if kind == "ins" else "w:delText")
        said.text = text
        run.append(said)
        change.append(run)
        return change

    document = docx.Document()
    paragraph = document.add_paragraph("Staff may claim mileage at ")
    paragraph._p.append(tracked("ins", "0.67 dollars a mile"))
    paragraph._p.append(tracked("del", "0.58 dollars a mile"))
    paragraph.add_run(" for trips outside Eastport.")
    cell = document.add_table(rows=1, cols=2).rows[0].cells
    cell[0].text = "Claims are filed within"
    cell[1].paragraphs[0]._p.append(tracked("ins", "60 days"))
    buffer = io.BytesIO()
    document.save(buffer)
    text = extract_document(buffer.getvalue(), "policy.docx", None).text
    assert "Staff may claim mileage at 0.67 dollars a mile for trips outside Eastport." in text
    assert "0.58" not in text
    assert "Claims are filed within | 60 days" in text


def test_a_notes_front_matter_is_one_record_and_a_thematic_break_is_no_front_matter():
    """A travel policy kept as a Markdown note opened with YAML front matter: "title: Travel policy" was a digest
    fact and ended its summary, and its author was a line of its own."""
    note = (
        "---\ntitle: Travel policy\nauthor: Ruth Lind\ntags:\n  - finance\n  - travel\n---\n\n"
        "# Travel policy\n\nHotel costs are capped at 140 EUR a night.\n"
    )
    document = extract_document(note.encode(), "travel.md", None)
    assert (document.spans[0].locator, document.spans[0].text) == (
        "front matter",
        "title: Travel policy; author: Ruth Lind; tags: finance, travel",
    )
    # YAML's quotes and a list's brackets are markup, not words: an ADR's "deciders: [Priya Nair, Tom Becker]".
    adr = "---\ntitle: \"ADR 007: Queues\"\ndeciders: [Priya Nair, 'Tom Becker']\n---\n\n# ADR 007\n\nWe use a queue.\n"
    assert extract_document(adr.encode(), "adr.md", None).spans[0].text == (
        "title: ADR 007: Queues; deciders: Priya Nair, Tom Becker"
    )
    assert "---" not in document.text and "Hotel costs are capped at 140 EUR a night." in document.text
    ruled = "---\n\nThe pumps were checked on Monday.\n\n---\n\nThe valves were checked on Tuesday.\n"
    assert extract_document(ruled.encode(), "log.md", None).text.count("checked") == 2


def test_markdown_heading_paths():
    document = extract("notes.md")
    locators = [s.locator for s in document.spans]
    assert "Field notes > Northgate" in locators
    assert "Field notes > Setext heading below" in locators


def test_csv_row_ranges():
    document = extract("data.csv")
    assert document.spans[0].locator == "header"
    assert document.spans[1].locator.startswith("rows 2-")
    assert document.spans[-1].locator.endswith("-51")


def test_each_span_of_a_wide_csv_names_its_own_rows():
    # Rows of ~190 characters: forty of them would not fit one span.
    header = "month,site,appointment_type,booked_count,attended_count,revenue_gbp,notes"
    body = [
        f"2026-{m:02d},Quayside,Surgery {n},{100 + n},{90 + n},{40000 + n},{'x' * 100}"
        for m in (7, 8, 9)
        for n in range(12)
    ]
    document = extract_document(("\n".join([header, *body]) + "\n").encode(), "wide.csv")
    rows = document.spans[1:]
    assert len(rows) > 1
    covered = []
    for span in rows:
        first, last = map(int, span.locator.removeprefix("rows ").split("-"))
        assert span.text.count("\n") + 1 == last - first + 1
        assert f"appointment_type: Surgery {(first - 2) % 12};" in span.text.splitlines()[0]
        covered += range(first, last + 1)
    assert covered == list(range(2, len(body) + 2))


def test_json_paths():
    document = extract("records.json")
    assert [s.locator for s in document.spans][:2] == ["$.dataset", "$.updated"]
    assert any(s.locator == "$.notes" and "not yet confirmed" in s.text for s in document.spans)


def test_a_json_lines_export_is_read_as_the_list_of_its_records():
    """A donations export in JSON Lines was read as text: its three records ran into one "sentence" of braces."""
    lines = b'{"donor": "A. Chen", "amount": 250}\n{"donor": "B. Okafor", "amount": 1000}\n\n{"donor": "C. Ruiz"}\n'
    document = extract_document(lines, "gifts.jsonl", None)
    assert document.format == "json"
    assert [span.locator for span in document.spans] == ["$[0]", "$[1]", "$[2]"]
    assert '"donor": "B. Okafor"' in document.spans[1].text
    with pytest.raises(ExtractionError, match="invalid JSON"):  # a line that is no JSON value
        extract_document(lines + b"not json\n", "gifts.jsonl", None)


def test_normalisation_makes_resaved_text_identical():
    unix = b"Line one.\n\nLine two has trailing spaces.   \n"
    windows = b"\xef\xbb\xbfLine one.\r\n\r\n\r\n\r\nLine two has trailing spaces.\r\n"
    a, b = extract_document(unix, "a.txt"), extract_document(windows, "a.txt")
    assert a.extracted_text_hash == b.extracted_text_hash and a.spans_hash == b.spans_hash
    assert normalise_text("e\u0301") == "\u00e9"  # NFC


def test_a_giant_paragraph_is_split_at_sentence_boundaries():
    text = ("The valve at site %d was replaced. " * 400) % tuple(range(400))
    document = extract_document(text.encode(), "long.txt")
    assert len(document.spans) > 3
    assert all(len(s.text) <= SPAN_MAX_CHARS for s in document.spans)
    assert all(s.text.endswith(".") for s in document.spans[:-1])


def test_limits_truncate_pages_and_characters():
    pdf = build_pdf(report_pages(12))
    capped = extract_document(pdf, "big.pdf", None, ExtractionLimits(max_pages=5))
    assert capped.truncated and capped.page_count == 12
    assert {s.locator for s in capped.spans} == {f"p. {n}" for n in range(1, 6)}
    short = extract_document(b"word " * 10000, "w.txt", None, ExtractionLimits(max_chars=1000))
    assert short.truncated and len(short.text) <= 1000


def test_an_office_file_it_does_not_read_is_named_with_what_to_save_it_as():
    """An Excel workbook was refused as "unsupported format: application/zip", which says nothing a person can act
    on: a workbook, a slide deck and an OpenDocument file are ZIP packages like a DOCX."""

    def package(members: dict[str, str]) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, text in members.items():
                archive.writestr(name, text)
        return buffer.getvalue()

    said = {
        "budget.xlsx": (package({"xl/workbook.xml": "<workbook/>"}), "an Excel workbook: save each sheet as CSV"),
        "deck.pptx": (package({"ppt/presentation.xml": "<p/>"}), "a PowerPoint deck: export it as PDF"),
        "notes.odt": (
            package({"mimetype": "application/vnd.oasis.opendocument.text"}),
            "an OpenDocument text: save it as DOCX or PDF",
        ),
        "photos.zip": (package({"a.txt": "hello"}), "application/zip"),
    }
    for name, (data, message) in said.items():
        with pytest.raises(ExtractionError) as caught:
            extract_document(data, name)
        assert caught.value.code == "unsupported_format" and caught.value.message == f"unsupported format: {message}"


@pytest.mark.parametrize(
    "data, name, code, message",
    [
        (b"", "empty.txt", "empty", "file is empty"),
        (b"  \n\t\n", "blank.txt", "empty", "file is empty"),
        (b"GIF89a" + bytes(100), "photo.pdf", "unsupported_format", "unsupported format: image/gif"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "photo.png", "corrupt", "not a valid image"),
        (b"%PDF-1.7\n1 0 obj <<>> garbage", "broken.pdf", "corrupt", "not a valid PDF"),
        (b"PK\x03\x04 not really a zip", "broken.docx", "unsupported_format", "application/zip"),
        (b"{\\rtf1\\ansi This is a memo.}", "memo.rtf", "unsupported_format", "an RTF document: save it as DOCX"),
        (b'{"a": [1, 2,', "bad.json", "corrupt", "invalid JSON"),
        (bytes(range(256)) * 4, "blob.bin", "unsupported_format", "unsupported format"),
    ],
)
def test_bad_files_get_a_clear_error(data, name, code, message):
    with pytest.raises(ExtractionError) as caught:
        extract_document(data, name)
    assert caught.value.code == code
    assert message in caught.value.message


def test_encrypted_pdf():
    writer = pypdf.PdfWriter(clone_from=io.BytesIO((FIXTURES / "report.pdf").read_bytes()))
    writer.encrypt("secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ExtractionError) as caught:
        extract_document(buffer.getvalue(), "locked.pdf")
    assert caught.value.code == "encrypted"


def test_docx_zip_bomb_is_refused_before_unpacking():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document>" + "A" * (60 * 1024 * 1024) + "</w:document>")
    data = buffer.getvalue()
    assert len(data) < 200_000
    with pytest.raises(ExtractionError) as caught:
        extract_document(data, "bomb.docx", None, ExtractionLimits(max_decompressed_bytes=20 * 1024 * 1024))
    assert caught.value.code == "too_large"


def test_mangled_inputs_only_ever_raise_extraction_error():
    rng = random.Random(1234)
    seeds = [(FIXTURES / name).read_bytes() for name in ("report.pdf", "brief.docx", "page.html", "records.json")]
    for _ in range(150):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(1, len(data))]
        try:
            document = extract_document(bytes(data), rng.choice(["x.pdf", "x.docx", "x.html", "x.json"]))
        except ExtractionError as exc:
            assert exc.message
        else:
            assert_spans_consistent(document)


def test_format_detection_trusts_content_over_names():
    pdf = (FIXTURES / "report.pdf").read_bytes()
    assert detect_format("report.txt", pdf) == ("pdf", "application/pdf")
    assert detect_format("notes.pdf", b"plain words") == ("text", "text/plain")
    assert detect_format("x.md", b"# hi")[0] == "markdown"


def test_clean_filename():
    assert clean_filename("../../etc/passwd") == "passwd"
    assert clean_filename("C:\\Users\\me\\report.pdf") == "report.pdf"
    assert clean_filename("a::b.txt") == "a_b.txt"
    long = clean_filename("x" * 300 + ".pdf")
    assert len(long) == 255 and long.endswith(".pdf")
    for bad in ("bad\x00name.txt", "line\nbreak.txt", "", "..", "dir/"):
        with pytest.raises(ValueError):
            clean_filename(bad)


def test_chunking_version_is_named():
    assert CHUNKING_VERSION == "spans.v1"


@pytest.mark.parametrize(
    "text, encoding",
    [
        ("Café pilot: coût 1200 euros. Détails à venir", "latin-1"),  # was read as Baltic (cp1257)
        ("Zażółć gęślą jaźń, budżet na 2024.", "cp1250"),
        ("Привет, это русский текст о бюджете проекта.", "cp1251"),  # outside the common pages, but sure
        *[
            ("Pumps: 1200 euros, café.", encoding)
            for encoding in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-16", "utf-32", "utf-8-sig")
        ],
    ],
)
def test_text_is_decoded_utf8_then_utf16_32_then_western_and_central_code_pages(text, encoding):
    data = text.encode(encoding)
    assert detect_format("notes.txt", data) == ("text", "text/plain")
    assert extract_document(data, "notes.txt").text == text


def test_atx_headings_are_parsed_without_backtracking():
    from extraction.text_readers import _atx_heading

    assert _atx_heading("# a" + " " * 2500 + "b") == (1, "a" + " " * 2500 + "b")
    assert _atx_heading("## Costs ##") == (2, "Costs")
    assert _atx_heading("### C#") == (3, "C")
    assert _atx_heading("####### seven") is None and _atx_heading("#hashtag") is None


def test_a_manuals_running_header_and_footer_leave_its_text_and_its_words_stay():
    document = extract("gnu_manuals/grep.pdf")
    assert document.page_count == 9
    assert "User Commands" not in document.text and "2019-12-29" not in document.text
    assert "GNU grep 3.8" not in document.text
    assert "--invert-match" in document.text and "grep searches for PATTERNS" in document.text
    assert_spans_consistent(document)


@pytest.mark.parametrize("name", ["cp", "grep", "ssh", "tar"])
def test_a_manuals_words_come_out_whole(name):
    """groff sets a manual's words with kerning between letters; a reader that takes a large kern for a
    space splits them ("cop y the public k ey"). Poppler's pdftotext, an independent reader, says what the
    words are: nearly every word of our text is one of its words (pypdf's reading: 6-9 % were not)."""
    path = FIXTURES / "gnu_manuals" / f"{name}.pdf"
    theirs = set(
        re.findall(r"[A-Za-z]{2,}", subprocess.run(["pdftotext", path, "-"], capture_output=True, text=True).stdout)
    )
    ours = re.findall(r"[A-Za-z]{2,}", extract(f"gnu_manuals/{name}.pdf").text)
    unknown = [word for word in ours if word not in theirs]
    assert len(unknown) <= 0.01 * len(ours), unknown


def test_a_line_repeated_at_each_page_edge_is_furniture_only_when_it_is_not_prose():
    disclaimer = "This report was prepared for the board and reviewed by the auditors."
    pages = [
        [f"Harbour Water Audit {n}", disclaimer, f"Finding {n}: meters in district {n} read low.", f"Page {n} of 4"]
        for n in range(1, 5)
    ]
    document = extract_document(build_pdf(pages), "audit.pdf", None, None)
    assert "Harbour Water Audit" not in document.text and "of 4" not in document.text
    assert document.text.count(disclaimer) == 4
    assert [s.locator for s in document.spans if "Finding" in s.text] == ["p. 1", "p. 2", "p. 3", "p. 4"]


def test_a_short_document_keeps_every_line_but_the_one_that_numbers_its_pages():
    """A two-page grant agreement quoted "Grant Agreement HF-2026-114 — Page 2 of 2" in its spans: two pages
    were too few to tell furniture by, but a line that counts them says what it is."""
    pages = [
        ["Harbour Water Audit", f"Finding {n}: meters in district {n} read low.", f"Audit HW-7 page {n} of 2"]
        for n in (1, 2)
    ]
    document = extract_document(build_pdf(pages), "audit.pdf", None, None)
    assert document.text.count("Harbour Water Audit") == 2  # a title both pages open with may be the document's
    assert "page 1 of 2" not in document.text and "page 2 of 2" not in document.text
    assert document.text.count("read low.") == 2


def test_a_running_header_both_pages_close_with_is_furniture():
    """WeasyPrint's running header reaches PDFium after the page's text: a safety plan's two pages each ended
    "Riverside Library extension — safety plan", and the digest made a fact of it."""
    header = "Riverside Library extension - safety plan"
    pages = [[f"Rule {n}: visitors sign in at the office.", header, f"Page {n} of 2"] for n in (1, 2)]
    document = extract_document(build_pdf(pages), "plan.pdf", None, None)
    assert header not in document.text and "of 2" not in document.text
    assert document.text.count("visitors sign in") == 2
    different = [[f"Rule {n}: visitors sign in at the office.", f"Closing line {'AB'[n - 1]} here"] for n in (1, 2)]
    assert "Closing line A here" in extract_document(build_pdf(different), "plan.pdf", None, None).text


def test_a_sentence_a_page_break_cuts_is_whole_on_the_page_it_starts_on():
    """A protocol's "If a patient has eaten within the" ended page 1 and "fasting window, the procedure is
    moved …" opened page 2: the report quoted the half that starts in lower case."""
    pages = [
        ["Fasting rules", "The nurse records when the patient last ate.", "If a patient has eaten within the"],
        ["fasting window, the procedure is moved to later in the day.", "Patients are weighed on admission."],
    ]
    document = extract_document(build_pdf(pages), "protocols.pdf", None, None)
    whole = "If a patient has eaten within the fasting window, the procedure is moved to later in the day."
    assert [s.locator for s in document.spans if whole in " ".join(s.text.split())] == ["p. 1"]
    assert [s.locator for s in document.spans if "weighed on admission" in s.text] == ["p. 2"]
    # A page that ends a sentence, or a next page that starts one, keeps its text.
    ended = [["The nurse records when the patient last ate."], ["patients are weighed on admission."]]
    document = extract_document(build_pdf(ended), "protocols.pdf", None, None)
    assert [s.locator for s in document.spans if "weighed" in s.text] == ["p. 2"]


def typeset_pdf(paragraphs: list[str], font: str, width: str) -> bytes:
    """Paragraphs set by WeasyPrint in 12 pt `font`, `width` wide: its line breaks, hyphens and glyphs."""
    import weasyprint

    style = f"p {{font-family: {font}; font-size: 12pt; width: {width}}}"
    body = "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    html = f'<html><head><meta charset="utf-8"><style>{style}</style></head><body>{body}</body></html>'
    return weasyprint.HTML(string=html).write_pdf()


def test_a_word_hyphenated_at_a_lines_end_is_one_word_and_a_compound_keeps_its_hyphen():
    """PDFium marks an author's hyphen that ends a line as a line-end hyphen ("low\\ufffesalt"), and leaves the
    hyphen a layout engine puts there (WeasyPrint's U+2010) as a character: the document's own usage tells."""
    paragraphs = [
        "Thermal stability in low-salt buffers was measured after pre&shy;treatment of the samples.",
        "Every low-salt buffer was tested.",
    ]
    text = extract_document(typeset_pdf(paragraphs, "DejaVu Sans", "3.3cm"), "narrow.pdf").text
    assert "stability in low-salt buffers" in text, text
    assert "after pretreatment of" in text, text
    assert "lowsalt" not in text and "\u2010" not in text, text


def test_a_compound_broken_at_its_hyphen_keeps_it_when_the_document_ends_another_with_its_last_word():
    """A handbook read "Parttime employees receive leave pro rata": it writes "Full-time" elsewhere, never
    "part-time" whole, and a syllable after a break is no compound's last word."""
    paragraphs = ["Full-time staff get 27 days.", "Those who work part-time receive leave pro rata."]
    text = extract_document(typeset_pdf(paragraphs, "DejaVu Sans", "3.0cm"), "handbook.pdf").text
    assert "work part-time receive" in text, text


def test_a_compound_of_two_words_the_document_uses_alone_keeps_its_hyphen_at_a_lines_end():
    """A repairs policy read "up to 3 tenantresponsibility jobs a year": a word processor breaks a line at an
    author's hyphen, and "tenant" and "responsibility" are words the policy writes on their own, never joined.
    A word broken inside ("pre" of "pretreatment") is one word again, as before."""
    paragraphs = [
        "Tenants on the list get three tenant-responsibility jobs a year.",
        "Each tenant has a responsibility to report faults.",
    ]
    text = extract_document(typeset_pdf(paragraphs, "DejaVu Sans", "5cm"), "policy.pdf").text
    assert "three tenant-responsibility jobs" in " ".join(text.split()), text


def test_a_hyphen_after_a_number_at_a_lines_end_is_the_compounds():
    """An offer letter read "vesting over four years with a oneyear cliff": no typesetter breaks a word after a
    number's name or a figure, so the hyphen there is the author's, though the document says "one-year" once."""
    sentence = "You will be granted 2,000 stock options vesting over four years with a one-year cliff, subject to it."
    text = extract_document(typeset_pdf([sentence], "serif", "15.5cm"), "offer.pdf").text
    assert "with a one-year cliff" in text, text


def test_a_pdfs_headings_set_larger_than_its_text_open_spans_of_their_own():
    """A postmortem exported from a wiki sets its headings larger, unnumbered: the page was one span, so a
    citation of its root cause opened the whole page and every sentence stood under the page's title. A title
    set over two lines heads one span; a bold line at the text's size (a definition's term) cuts nothing."""
    import weasyprint

    html = (
        '<html><head><meta charset="utf-8"><style>body {font-family: DejaVu Sans; font-size: 10.5pt} '
        "h1 {font-size: 16pt; width: 9cm}</style></head><body>"
        "<h1>Postmortem: checkout API outage of 17 September 2026</h1><p>Author: Dana Whitfield.</p>"
        "<h2>Root cause</h2><p>Nobody multiplied the new pool size by the number of pods.</p>"
        "<p><b>Pool size</b></p><p>The connections one pod holds open.</p>"
        "<h2>Action items</h2><p>1. Put PgBouncer in front of the primary database.</p></body></html>"
    )
    document = extract_document(weasyprint.HTML(string=html).write_pdf(), "postmortem.pdf")
    spans = [(span.locator, " ".join(span.text.split())) for span in document.spans]
    assert spans == [
        ("p. 1", "Postmortem: checkout API outage of 17 September 2026 Author: Dana Whitfield."),
        (
            "p. 1",
            "Root cause Nobody multiplied the new pool size by the number of pods. Pool size The connections "
            "one pod holds open.",
        ),
        ("p. 1", "Action items 1. Put PgBouncer in front of the primary database."),
    ], spans


def test_a_pdfs_ruled_table_is_read_a_row_a_line_and_a_box_around_text_as_its_lines():
    """A repairs policy's table of categories wrapped its cells, and PDFium read it line by line: "Damaged fence
    panel," then "broken gate", then "Routine 30 working days Grounds team", so no sentence or record said which
    repair had which target. A ruled table's rows are read as a DOCX's are (cells joined by " | "); a box drawn
    around a paragraph (a table of one cell) is text as before."""
    import weasyprint

    html = (
        '<html><head><meta charset="utf-8"><style>body {font-family: DejaVu Sans; font-size: 10pt} '
        "table {border-collapse: collapse; width: 12cm} td, th {border: 1px solid black; padding: 2pt} "
        "td {width: 3cm} .box {border: 1px solid black; padding: 4pt; width: 12cm}</style></head><body>"
        "<p>The table below sets the target for each category of repair.</p><table>"
        "<tr><th>Category</th><th>Default priority</th><th>Target</th><th>Carried out by</th></tr>"
        "<tr><td>Damaged fence panel, broken gate</td><td>Routine</td><td>30 working days</td><td>Grounds team</td></tr>"
        "<tr><td>Roof leak, slipped tiles</td><td>Urgent (Oct-Apr) / Routine</td><td>5 working days</td>"
        "<td>Penrose Roofing</td></tr></table>"
        '<p class="box">If you smell gas, ring the National Gas Emergency Service on 0800 111 999 straight away, '
        "before you call us.</p></body></html>"
    )
    document = extract_document(weasyprint.HTML(string=html).write_pdf(), "policy.pdf")
    assert_spans_consistent(document)
    text = document.text
    assert "Category | Default priority | Target | Carried out by" in text, text
    assert "Damaged fence panel, broken gate | Routine | 30 working days | Grounds team" in text, text
    assert "Roof leak, slipped tiles | Urgent (Oct-Apr) / Routine | 5 working days | Penrose Roofing" in text, text
    assert text.index("The table below") < text.index("Category | Default") < text.index("If you smell gas"), text
    assert "ring the National Gas Emergency Service on 0800 111 999" in " ".join(text.split()), text
    assert "|" not in text[text.index("If you smell gas") :], text
    assert text.count("Damaged fence panel") == 1, text  # its lines gave way to its row


def test_a_web_pages_table_stays_in_the_span_of_its_header():
    """A web page's rows were blocks of their own, and a span opened at its size target in the middle of a table:
    the next span's rows ("Tannery Court | Block C (flats) | 120 | £4.60 …") stood without the header naming
    their cells, so no record said £3.05 was Block C's lift charge. A table is one block, a row a line."""
    intro = "<p>" + "As well as rent, most tenants pay a weekly service charge for shared areas. " * 9 + "</p>"
    header = "<tr><th>Estate</th><th>Block</th><th>Cleaning</th><th>Lift maintenance</th></tr>"
    rows = "".join(
        f"<tr><td>Estate {n}</td><td>Block {n} (flats)</td><td>£4.{n:02d}</td><td>£3.{n:02d}</td></tr>" for n in range(12)
    )
    html = f"<html><body><h1>Service charges</h1>{intro}<table>{header}{rows}</table><p>Charges are weekly.</p></body></html>"
    document = extract_document(html.encode(), "charges.html", "text/html", None)
    assert_spans_consistent(document)
    holding = [span for span in document.spans if "Block 11 (flats)" in span.text]
    assert len(holding) == 1 and "Estate | Block | Cleaning | Lift maintenance" in holding[0].text, document.spans
    assert all("Block 0 (flats)" not in span.text for span in document.spans if span is not holding[0])


def test_a_csv_cell_with_line_breaks_keeps_its_row_on_one_line():
    data = (
        b'id,description,status,hours\nT-1,"We were charged twice.\nThe second charge should be refunded.",open,\n'
        b'T-2,"None of our users can log in; the app says ""expired"".",closed,4\n'
    )
    document = extract_document(data, "tickets.csv")
    rows = document.spans[1].text.split("\n")
    assert rows == [  # an empty last cell is left out, not written as "hours: " that loses its space
        "id: T-1; description: We were charged twice. The second charge should be refunded.; status: open",
        'id: T-2; description: None of our users can log in, the app says "expired".; status: closed; hours: 4',
    ]
    # Each row is one record, whatever sentences or semicolons its cells hold.
    assert split_sentences(document.spans[1].text) == rows


MIME_MAIL = """From: Dana Whitfield <d.whitfield@council.example>
To: Project team <team@builder.example>
Subject: =?utf-8?q?Change_request_=E2=80=94_reading_room?=
Date: Thu, 19 Nov 2026 09:12:00 +0100
Message-ID: <a1@council.example>
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="b1"

--b1
Content-Type: text/plain; charset="utf-8"
Content-Transfer-Encoding: quoted-printable

The board has set aside up to EUR 40,000 for the change =E2=80=94 please pric=
e it by 27 November.

--b1
Content-Type: text/html; charset="utf-8"

<p>The board has set aside up to EUR 40,000.</p>
--b1--
"""


def test_an_email_is_read_under_its_subject_its_header_one_record_its_body_its_plain_text():
    """A client's e-mail saved as text: "To: Project team" and "Subject: …" were digest facts of their own, and a
    saved .eml's MIME parts and transport fields were read as its text. Its subject is a heading: it says what
    the message is about, and the chat quoted it as the answer to what the client wants."""
    pasted = (
        "From: Dana Whitfield <d@council.example>\nTo: Project team\nSubject: Reading room\n\nHi all,\n\nMove it.\n"
    )
    document = extract_document(pasted.encode(), "change.txt", "text/plain", None)
    assert [(s.locator, s.text) for s in document.spans] == [
        (
            "Reading room",
            "Reading room\n\nFrom: Dana Whitfield <d@council.example>; To: Project team\n\nHi all,\n\nMove it.",
        )
    ]
    saved = extract_document(MIME_MAIL.encode(), "change.eml", None, None)
    assert saved.spans[0].locator == "Change request — reading room"
    assert saved.text.split("\n\n")[:2] == [
        "Change request — reading room",
        "From: Dana Whitfield <d.whitfield@council.example>; To: Project team <team@builder.example>; "
        "Date: Thu, 19 Nov 2026 09:12:00 +0100",
    ]
    assert saved.text.endswith(
        "The board has set aside up to EUR 40,000 for the change — please price it by 27 November."
    )
    assert "Message-ID" not in saved.text and "--b1" not in saved.text and "<p>" not in saved.text
    # Its text keeps the characters the file holds, with or without a declared charset.
    for charset_field in ("", "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n"):
        utf8 = f"From: Priya <p@lab.example>\nSubject: Freezer\n{charset_field}\nThe -80 °C freezer, Wójcik said.\n"
        assert extract_document(utf8.encode(), "freezer.txt", "text/plain", None).text.endswith(
            "The -80 °C freezer, Wójcik said."
        )
    # A note that opens with a label is no e-mail: one field a mail program shows is not a header.
    note = extract_document(b"Subject: budget\n\nThe budget rose.\n", "note.txt", "text/plain", None)
    assert note.text == "Subject: budget\n\nThe budget rose."


def test_a_fenced_code_blocks_comment_is_no_heading():
    """A README's shell block ("# install deps") made each comment a section of its own."""
    readme = "# Setup\n\nInstall the tools first.\n\n```bash\n# install deps\npip install x\n\n# run it\nmake run\n```\n\nThen open the URL.\n"
    document = extract_document(readme.encode(), "README.md", None)
    assert [span.locator for span in document.spans] == ["Setup"]
    assert "# run it\nmake run\n```\n\nThen open the URL." in document.text


def test_a_jupyter_notebook_is_read_as_its_cells():
    """A notebook was read as one line of JSON: its digest quoted '{"cells": [{"cell_type": …'. Its Markdown cells
    are read as Markdown, a code cell's source as fenced code, and the text it printed after it."""
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Churn analysis\n", "\n", "Why customers cancelled in Q3.\n"]},
            {
                "cell_type": "code",
                "source": ["# load\n", "df = load()\n", "print(rate(df))"],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["churn rate: 4.2%\n"]}],
            },
            {"cell_type": "markdown", "source": "## Reasons\n\nPrice was the main reason given."},
        ],
        "nbformat": 4,
    }
    document = extract_document(json.dumps(notebook).encode(), "churn.ipynb", None)
    assert document.format == "markdown"
    assert [span.locator for span in document.spans] == ["Churn analysis", "Churn analysis > Reasons"]
    assert document.spans[0].text.endswith("```\n# load\ndf = load()\nprint(rate(df))\n```\n\nchurn rate: 4.2%")
    # A notebook without text has none: its JSON is not read as its text.
    with pytest.raises(ExtractionError, match="no text could be extracted"):
        extract_document(b'{"cells": [], "nbformat": 4}', "empty.ipynb", None)


def test_a_plain_text_files_headings_head_their_sections():
    """Minutes saved as text: their title, numbered items and "Actions" were one span with no locator, so the
    action items stood under no heading and "What are the action items?" found nothing to answer with."""
    minutes = (
        "Operations meeting, 12 November 2026\n"
        "Attendees: Grace Okafor, Dev Patel\n\n"
        "1. Peak readiness\n"
        "Grace: The car park is still not agreed.\n\n"
        "1.1 Safety walk\nMarta checked the fire exits.\n\n"
        "Actions\n"
        "- Grace to agree the car park by 18 November.\n\n"
        "Grace Okafor\nDev Patel\n\n"  # a list of names: no heading and its section
        "thanks all\n"
    )
    document = extract_document(minutes.encode(), "minutes.txt", "text/plain", None)
    assert_spans_consistent(document)
    assert [(s.locator, s.text.partition("\n")[0]) for s in document.spans] == [
        ("Operations meeting, 12 November 2026", "Operations meeting, 12 November 2026"),
        ("Operations meeting, 12 November 2026 > 1. Peak readiness", "1. Peak readiness"),
        ("Operations meeting, 12 November 2026 > 1. Peak readiness > 1.1 Safety walk", "1.1 Safety walk"),
        ("Operations meeting, 12 November 2026 > Actions", "Actions"),
    ]
    assert document.spans[-1].text.endswith("Grace Okafor\nDev Patel\n\nthanks all")
    # A text of paragraphs alone keeps its one section.
    plain = extract_document(b"The pumps ran all night.\n\nNobody was hurt.\n", "note.txt", "text/plain", None)
    assert [s.locator for s in plain.spans] == [""]
    # A table printed to text: its header, aligned in columns, heads no section.
    report = "QUOTA ATTAINMENT\n\nRep          Quota ($)   Closed ($)\n-----------  ----------  ----------\nPriya Nair      120,000       48,000\n"
    assert [s.locator for s in extract_document(report.encode(), "q.txt", "text/plain", None).spans] == [
        "QUOTA ATTAINMENT"
    ]


def test_a_plain_text_files_rules_set_its_headings_apart():
    """Minutes that draw a rule over and under each item's title: the rule was read as the first line of a
    paragraph, so "7. TANNERY COURT BLOCK C - LIFT REPLACEMENT" headed nothing and the item's sentences stood under
    the file's title alone ("the lowest compliant tender …" never said which lift)."""
    minutes = (
        "BOARD MINUTES\n\n"
        "The meeting was quorate.\n\n"
        "--------------------------------------\n"
        "7. TANNERY COURT BLOCK C - LIFT REPLACEMENT\n"
        "--------------------------------------\n"
        "The lowest compliant tender was from Kellaway Lifts at £186,000.\n\n"
        "--------------------------------------\n"
        "8. REPAIRS PERFORMANCE - QUARTER 2 OF 2026/27 (JULY TO SEPTEMBER 2026)\n"  # long, and closed by ")"
        "--------------------------------------\n"
        "932 repairs (88.4%) were completed within target.\n\n"
        "Budget summary\n"
        "==============\n"
        "The reserve stands at £1.2 million.\n"
    )
    document = extract_document(minutes.encode(), "minutes.txt", "text/plain", None)
    assert_spans_consistent(document)
    assert [(s.locator, s.text.partition("\n")[0]) for s in document.spans] == [
        ("BOARD MINUTES", "BOARD MINUTES"),
        ("BOARD MINUTES > 7. TANNERY COURT BLOCK C - LIFT REPLACEMENT", "7. TANNERY COURT BLOCK C - LIFT REPLACEMENT"),
        (
            "BOARD MINUTES > 8. REPAIRS PERFORMANCE - QUARTER 2 OF 2026/27 (JULY TO SEPTEMBER 2026)",
            "8. REPAIRS PERFORMANCE - QUARTER 2 OF 2026/27 (JULY TO SEPTEMBER 2026)",
        ),
        ("BOARD MINUTES > Budget summary", "Budget summary"),
    ]
    assert "Kellaway Lifts at £186,000" in document.spans[1].text
    assert "-----" not in document.spans[1].text


def test_a_pdf_pages_numbered_headings_open_sections_and_its_numbered_lists_do_not():
    pages = [
        [
            "Inbound procedure",
            "1. Receiving",
            "Deliveries are accepted between 06:00 and 14:00.",
            "To check a trailer:",
            "1. Check seals",
            "2. Count pallets",
            "Then sign the delivery note.",
            "2. Put-away",
            "Pallets are put away within four hours.",
        ]
    ]
    document = extract_document(build_pdf(pages), "sop.pdf", None)
    assert_spans_consistent(document)
    assert [(s.locator, s.text.partition("\n")[0]) for s in document.spans] == [
        ("p. 1", "Inbound procedure"),
        ("p. 1", "1. Receiving"),
        ("p. 1", "2. Put-away"),
    ]
    assert "1. Check seals\n2. Count pallets\nThen sign" in document.spans[1].text
