"""Scanned documents (issue 28, SPEC §9): PDF pages without a text layer and uploaded images are
read by Tesseract, cited `p. N` like any page, within the limits, and honestly when they cannot be.

The scans are made here from text we know (bench/synthetic_scan.py: DejaVu Serif at 300 dpi,
turned 0.6°, with noise) and read by the real `tesseract` in the real extraction child.
"""

import io
import struct
import sys
import zlib

import pytest

from bench import synthetic_scan
from bench.synthetic_pdf import build_pdf, pdf_from_objects
from context_app.models import ContextFile
from context_app.pipeline import extract as extract_stage
from extraction import ExtractionError, ExtractionLimits, extract_document, isolation, ocr
from tests.factories import ContextApi, make_member, wait_until

FACT = "The Harbour Street pumping station was rebuilt in 1987 for 4.2 million euros."


def text_of(pages: list[list[str]]) -> str:
    return "\n\n".join("\n\n".join(paragraphs) for paragraphs in pages)


@pytest.fixture(scope="module")
def pages():
    return [synthetic_scan.paragraphs(4, seed=number) for number in range(3)]


@pytest.fixture(scope="module")
def scan_pdf(pages):
    return synthetic_scan.scanned_pdf(pages)


def png_bomb(width: int, height: int) -> bytes:
    """A greyscale PNG of width × height black pixels, compressed to a few hundred KB."""
    compressor = zlib.compressobj(9)
    row = bytes(width + 1)
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def pdf_with_image(width: int, height: int) -> bytes:
    """A one-page PDF showing one greyscale image XObject that claims width × height pixels."""
    pixels = zlib.compress(bytes(64))
    content = b"q 612 0 0 792 0 0 cm /Im1 Do Q"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 4 0 R >> >> "
        b"/Contents 5 0 R >>",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream" % (width, height, len(pixels), pixels),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    return pdf_from_objects(objects)


# --- reading -------------------------------------------------------------------------------------


def test_a_scanned_pdf_is_read_page_by_page_in_the_child_with_word_recall_over_095(pages, scan_pdf):
    told = []
    document = isolation.extract_in_child(scan_pdf, "minutes.pdf", None, ExtractionLimits(), told.append)

    assert document.format == "pdf" and document.page_count == 3 and document.notes == ()
    assert synthetic_scan.word_recall(text_of(pages), document.text) >= 0.95
    assert sorted({span.locator for span in document.spans}) == ["p. 1", "p. 2", "p. 3"]
    assert all(span.read_by == "ocr" and span.confidence >= 70 for span in document.spans)
    assert told[0] == "OCR page 1/3" and told[-1] == "OCR page 3/3"
    # What the resolver and the preview show: the span says it was read by OCR, with its confidence.
    assert document.spans[0].as_dict()["read_by"] == "ocr" and "confidence" in document.spans[0].as_dict()


def test_an_uploaded_png_is_read_the_same_way():
    paragraphs = synthetic_scan.paragraphs(5, seed=7)
    png = synthetic_scan.png(paragraphs, dpi=200)  # a phone or a fax: less than the PDF's 300 dpi
    document = isolation.extract_in_child(png, "whiteboard.png", None, ExtractionLimits())

    assert (document.format, document.mime_type, document.page_count) == ("image", "image/png", 1)
    assert synthetic_scan.word_recall("\n\n".join(paragraphs), document.text) >= 0.95
    assert {(span.locator, span.read_by) for span in document.spans} == {("p. 1", "ocr")}


def test_a_multi_page_tiff_is_read_a_frame_a_page_16_bit_grey_included():
    import numpy
    from PIL import Image

    pages = [synthetic_scan.paragraphs(1, seed=20 + n) for n in range(2)]
    frames = [synthetic_scan.page_image(paragraphs, dpi=200) for paragraphs in pages]
    frames[1] = Image.fromarray(numpy.asarray(frames[1]).astype(numpy.uint16) * 257)  # a 16-bit scanner's grey
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw")
    document = extract_document(out.getvalue(), "fax.tif")

    assert (document.mime_type, document.page_count) == ("image/tiff", 2)
    assert [span.locator for span in document.spans] == ["p. 1", "p. 2"]
    for paragraphs, span in zip(pages, document.spans, strict=True):
        assert synthetic_scan.word_recall(paragraphs[0], span.text) >= 0.95


def test_a_mixed_pdf_keeps_every_page_in_order_with_its_page_and_names_the_page_without_text():
    scanned = synthetic_scan.paragraphs(2, seed=3)
    pdf = synthetic_scan.mixed_pdf(
        [
            ("text", ["Page one has a text layer about the valve programme."]),
            ("scan", scanned),
            ("text", []),  # a blank page: no text, no image
            ("text", ["Page four has a text layer about the meters in zone 4."]),
            ("scan", [FACT]),
        ]
    )
    document = extract_document(pdf, "mixed.pdf")

    pages = []
    for span in document.spans:
        if not pages or pages[-1] != (span.locator, span.read_by):
            pages.append((span.locator, span.read_by))
    assert pages == [("p. 1", ""), ("p. 2", "ocr"), ("p. 4", ""), ("p. 5", "ocr")]
    assert document.text.index("Page one") < document.text.index("Page four") < document.text.index("Harbour Street")
    assert synthetic_scan.word_recall("\n\n".join(scanned), document.text) >= 0.95
    assert document.notes == ("no text on page 3",)


def tesseract_tsv(paragraphs: list[tuple[int, int, list[str]]]) -> str:
    """Tesseract's TSV for (block, paragraph, lines) in reading order: a word a row, at level 5."""
    rows = ["level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"]
    for block, paragraph, lines in paragraphs:
        for line_number, line in enumerate(lines, 1):
            for word_number, word in enumerate(line.split(), 1):
                rows.append(f"5\t1\t{block}\t{paragraph}\t{line_number}\t{word_number}\t0\t0\t9\t9\t91.5\t{word}")
    return "\n".join(rows)


def test_a_sentence_tesseract_cut_into_two_paragraphs_or_blocks_is_one_paragraph_again():
    # Tesseract starts a paragraph where a line's left edge moves, as on a page scanned askew.
    tsv = tesseract_tsv(
        [
            (1, 1, ["MEMO: Office closure"]),
            (2, 1, ["The Berlin and Lisbon offices will be closed from"]),
            (2, 2, ["24 December 2026 to 1 January 2027."]),
            (2, 3, ["Employees on call during the closure receive a"]),
            (2, 4, ["day off in lieu for each day on call."]),
            (2, 5, ["The Paris office stays open"]),  # ends no sentence, but the next opens one
            (2, 6, ["Questions go to People Operations."]),
            (3, 1, ["and a new block is a new paragraph"]),
            # Tesseract starts a block where the gap between two lines grows: a lower-case word goes on.
            (4, 1, ["Every forklift is inspected by its driver at the start"]),
            (5, 1, ["of each shift, before it is used."]),
            (6, 1, ["Pallets per aisle"]),
            (7, 1, ["120 in aisle 4"]),  # a block that opens with a figure is a table's or a list's
        ]
    )
    paragraphs, confidences = ocr.paragraphs_from_tsv(tsv)
    assert paragraphs == [
        "MEMO: Office closure",
        "The Berlin and Lisbon offices will be closed from\n24 December 2026 to 1 January 2027.",
        "Employees on call during the closure receive a\nday off in lieu for each day on call.",
        "The Paris office stays open",
        "Questions go to People Operations.",
        "and a new block is a new paragraph",
        "Every forklift is inspected by its driver at the start\nof each shift, before it is used.",
        "Pallets per aisle",
        "120 in aisle 4",
    ]
    assert set(confidences) == {91.5}


def test_pages_with_a_text_layer_are_never_read_by_ocr(monkeypatch):
    monkeypatch.setattr(ocr, "read_pages", lambda *args: pytest.fail("a page with a text layer went to OCR"))
    document = extract_document(build_pdf([["Pumps in zone 3 moved 400 cubic metres."]] * 2), "text.pdf")
    assert [span.read_by for span in document.spans] == ["", ""]


def test_low_confidence_and_pages_left_out_are_stated_on_the_file():
    pages = {
        1: ocr.OcrPage(1, ["clear words"], 93.0),
        3: ocr.OcrPage(3, ["smudged words"], 41.5),
        4: ocr.OcrPage(4, failure="OCR took longer than 60 seconds (limit GROUNDWORK_EXTRACT_SECONDS)"),
        7: ocr.OcrPage(7, ["faint words"], 55.0),
    }
    assert ocr.notes_of(pages) == [
        "low OCR confidence on pages 3, 7 (mean word confidence under 70%)",
        "page 4 left out: OCR took longer than 60 seconds (limit GROUNDWORK_EXTRACT_SECONDS)",
    ]
    assert ocr.pages_phrase([2, 3, 4, 9]) == "pages 2–4, 9"


# --- honest when it cannot ---------------------------------------------------------------------


def test_without_ocr_a_scan_is_an_error_never_an_empty_ready(scan_pdf, monkeypatch):
    off = ExtractionLimits(ocr="off")
    for data, name in ((scan_pdf, "minutes.pdf"), (synthetic_scan.png(["Meter 7 read 1200."]), "meter.png")):
        with pytest.raises(ExtractionError) as caught:
            extract_document(data, name, limits=off)
        assert (caught.value.code, caught.value.message) == ("ocr_unavailable", "no text layer: OCR is off")

    mixed = synthetic_scan.mixed_pdf([("text", ["A text page about the valve programme."]), ("scan", [FACT])])
    document = extract_document(mixed, "mixed.pdf", limits=off)
    assert {span.locator for span in document.spans} == {"p. 1"}
    assert document.notes == ("page 2 without a text layer not read: OCR is off",)

    monkeypatch.setattr(ocr.shutil, "which", lambda name: None)
    with pytest.raises(ExtractionError) as caught:
        extract_document(scan_pdf, "minutes.pdf")
    assert caught.value.message == "no text layer: tesseract is not installed"


def test_a_missing_ocr_language_is_named(scan_pdf):
    with pytest.raises(ExtractionError) as caught:
        extract_document(scan_pdf, "minutes.pdf", limits=ExtractionLimits(ocr_languages="eng+xyz"))
    assert caught.value.code == "ocr_unavailable"
    assert caught.value.message.startswith("no text layer: the OCR language xyz is not installed (GROUNDWORK_OCR")


def test_decompression_bombs_and_oversized_images_are_refused_with_a_clear_error():
    for data, name, size in (
        (png_bomb(20_000, 20_000), "bomb.png", "400.0 megapixels"),  # past Pillow's own guard: never decoded
        (png_bomb(9_000, 9_000), "big.png", "9000×9000 pixels"),
        (pdf_with_image(20_000, 20_000), "bomb.pdf", "20000×20000 pixels"),
    ):
        with pytest.raises(ExtractionError) as caught:
            extract_document(data, name)
        assert caught.value.code == "too_large", name
        assert size in caught.value.message
        assert "64-megapixel limit (GROUNDWORK_MAX_IMAGE_PIXELS)" in caught.value.message


FAKE_CHILD = """
import sys, time
sys.stdin.buffer.read()
for page in range(1, {pages} + 1):
    time.sleep({pause})
    sys.stderr.buffer.write(b"\\x1egroundwork-progress " + b'{{"label": "OCR page %d/{pages}"}}' % page + b"\\n")
    sys.stderr.buffer.flush()
time.sleep({silence})
sys.stdout.write('{{"document": {{"format": "pdf", "mime_type": "application/pdf", "text": "a", "spans": [], '
                 '"page_count": {pages}, "truncated": false}}}}')
"""


def test_the_wall_clock_limit_applies_to_each_page_not_to_a_long_scan(monkeypatch):
    """A child that tells of a page every 0.2 s runs 2 s under a 1-second limit; one silent for 3 s is killed."""
    monkeypatch.setattr(isolation, "STARTUP_SECONDS", 0.0)
    limits = ExtractionLimits(seconds=1.0)
    moving = FAKE_CHILD.format(pages=10, pause=0.2, silence=0)
    monkeypatch.setattr(isolation, "CHILD", (sys.executable, "-c", moving))
    told = []
    document = isolation.extract_in_child(b"%PDF-", "long.pdf", None, limits, told.append)
    assert document.page_count == 10 and told == [f"OCR page {n}/10" for n in range(1, 11)]

    stuck = FAKE_CHILD.format(pages=2, pause=0.2, silence=3)
    monkeypatch.setattr(isolation, "CHILD", (sys.executable, "-c", stuck))
    with pytest.raises(ExtractionError) as caught:
        isolation.extract_in_child(b"%PDF-", "stuck.pdf", None, limits)
    assert caught.value.code == "timeout" and "GROUNDWORK_EXTRACT_SECONDS" in caught.value.message


# --- through the product -----------------------------------------------------------------------


def _say(api, sid, message):
    response = api.post("/api/research/conversation", {"session_id": sid, "message": message}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_library_search_and_chat_find_and_cite_a_fact_only_a_scanned_page_holds(celery_worker_thread, monkeypatch):
    from context_app import library
    from workspaces.models import ResearchSession
    from workspaces.services import team_cache_scope

    shown = []
    show_progress = extract_stage._show_progress

    def spy(file):
        show = show_progress(file)

        def record(label):
            show(label)
            shown.append((label, ContextFile.objects.get(pk=file.pk).extraction_progress))

        return record

    monkeypatch.setattr(extract_stage, "_show_progress", spy)
    api = ContextApi(make_member()[0])
    sid = api.create_session(question="What became of the Harbour Street pumping station?")
    scan = synthetic_scan.scanned_pdf([synthetic_scan.paragraphs(3, seed=11), [FACT]])
    api.upload(sid, {"minutes.pdf": scan, "valves.md": b"# Valves\n\nThe valve programme cost 1.2 million euros.\n"})
    manifest = api.extracted(sid)
    minutes = next(f for f in manifest["files"] if f["filename"] == "minutes.pdf")
    assert minutes["page_count"] == 2 and minutes["notes"] == [] and minutes["extraction_progress"] == ""
    # While it was read, the file's chip said which page (the manifest's extraction_progress).
    assert ("OCR page 2/2", "OCR page 2/2") in shown

    scope = team_cache_scope(ResearchSession.objects.get(pk=sid).team)
    # Its library records are written just after its text (library.index_file): wait for them.
    hits = wait_until(lambda: library.search(scope, "Harbour Street pumping station rebuilt").hits, timeout=30)
    best = hits[0]
    assert (best.filename, best.page) == ("minutes.pdf", 2) and "4.2 million euros" in best.text

    api.parse(sid)
    api.settle(sid)
    answer = _say(api, sid, "How much did rebuilding the Harbour Street pumping station cost?")
    assert answer["status"] == "ok", answer
    message = answer["message"]
    assert "4.2 million euros" in message["content"]
    [link] = [link for link in message["source_links"] if link["sourceref"].startswith("minutes.pdf::")]
    source = api.get(link["source_url"]).json()
    assert source["locator"] == "p. 2" and source["read_by"] == "ocr" and FACT in source["text"]

    # The same bytes again are unchanged: the scan is not read a second time.
    reads = len(shown)
    diff = api.upload(sid, {"minutes.pdf": scan}).json()["diff"]
    assert [item["change"] for item in diff] == ["unchanged"] and len(shown) == reads


@pytest.mark.one_database
@pytest.mark.django_db(transaction=True)
def test_with_ocr_off_a_scan_and_a_bomb_fail_on_their_files_and_the_others_are_read(celery_worker_thread, settings):
    settings.GROUNDWORK_OCR = "off"
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    files = {
        "scan.png": synthetic_scan.png(["Meter 7 read 1200 cubic metres."]),
        "bomb.png": png_bomb(9_000, 9_000),
        "notes.md": b"# Notes\n\nPump 3 was serviced in May.\n",
    }
    assert api.upload(sid, files).status_code == 201
    by_name = {f["filename"]: f for f in api.extracted(sid)["files"]}
    assert by_name["notes.md"]["digest_status"] == "stale" and by_name["notes.md"]["error"] is None
    scan = by_name["scan.png"]
    assert scan["digest_status"] == "error" and scan["error"]["message"] == "no text layer: OCR is off"
    assert scan["error"]["retryable"] and "GROUNDWORK_OCR" in scan["error"]["help"]
    bomb = by_name["bomb.png"]
    assert bomb["digest_status"] == "error" and bomb["error"]["code"] == "too_large"
    assert "GROUNDWORK_MAX_IMAGE_PIXELS" in bomb["error"]["message"] and not bomb["error"]["retryable"]
