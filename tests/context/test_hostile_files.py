"""Hostile files (issue 17): the upload answers before any extraction, other clients' writes
never wait on one, and each file ends with a clear status within the extraction limits.

The worker is the real one (celery_worker_thread); extraction runs in its child process
(extraction/isolation.py) under limits lowered here so the test is quick.
"""

import io
import json
import random
import threading
import uuid
import zipfile
import zlib

import pytest
from rest_framework.test import APIClient

from context_app.models import ContextFile, FileText
from tests.factories import ContextApi, make_member, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

HEADING_MD = (b"# a" + b" " * 2500 + b"b\n") * 3  # the ATX pattern backtracked cubically on it (34 s)
LATIN_1 = "Café pilot: coût 1200 euros. Détails à venir".encode("latin-1")
UTF_16_NO_BOM = "Pumps in district 4 cost 1200 euros.".encode("utf-16-le")


def heavy_content_stream_pdf(operations: int = 2_000_000, pages: int = 16) -> bytes:
    """A ~60 KB PDF whose 16 pages share one compressed content stream of two million operations
    (30 MB unpacked): PDFium needs ~0.75 s for each page, inside one call where no budget check runs,
    and ~80 MB of memory."""
    stream = zlib.compress(b"BT /F1 1 Tf (a) Tj ET " + b"1 0 0 1 0 0 cm " * operations, 9)
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    kids = " ".join(f"{4 + page} 0 R" for page in range(pages)).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
        b"<< /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\nstream\n" + stream + b"\nendstream",
    ] + [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources " + font + b" >>"] * pages
    out = io.BytesIO(b"%PDF-1.4\n")
    out.seek(0, 2)
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write(b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets))
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def zip_bomb_docx(unpacked_bytes: int) -> bytes:
    """A DOCX whose document.xml unpacks ~8 times larger: under the ratio guard, like the 150 MB one."""
    rng = random.Random(17)
    words = b"pump valve district pressure night flow meter leak survey cost".split()
    paragraph = b"<w:p><w:r><w:t>" + b" ".join(rng.choice(words) for _ in range(2000)) + b"</w:t></w:r></w:p>"
    body = paragraph * (unpacked_bytes // len(paragraph) + 1)
    namespace = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b'<?xml version="1.0"?><Types/>')
        document = b"<w:document " + namespace + b"><w:body>" + body + b"</w:body></w:document>"
        archive.writestr("word/document.xml", document)
    return out.getvalue()


class Writer(threading.Thread):
    """Another user's client writing (PATCH /api/me/preferences) until told to stop; every status kept."""

    def __init__(self):
        super().__init__(daemon=True)
        user, _team = make_member()
        self.client = APIClient()
        self.client.force_authenticate(user)
        self.statuses: list[int] = []
        self.stop = threading.Event()

    def run(self):
        from django.db import connection

        try:
            while not self.stop.is_set():
                response = self.client.patch(
                    "/api/me/preferences",
                    {"ui_debug": len(self.statuses) % 2 == 0},
                    format="json",
                    HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
                )
                self.statuses.append(response.status_code)
        finally:
            connection.close()


@pytest.fixture
def lowered_limits(settings):
    settings.GROUNDWORK_EXTRACT_SECONDS = 2
    settings.GROUNDWORK_EXTRACT_MEMORY_BYTES = 200 * 1024 * 1024
    settings.GROUNDWORK_MAX_DECOMPRESSED_BYTES = 4 * 1024 * 1024


def test_hostile_files_answer_at_once_and_end_with_a_clear_status(lowered_limits):
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    hostile = {
        "heavy.pdf": heavy_content_stream_pdf(),
        "tags.html": b"<a" * 125_000,
        "array.json": json.dumps(list(range(1_000_000))).encode(),
        "heading.md": HEADING_MD,
        "bomb.docx": zip_bomb_docx(6 * 1024 * 1024),
    }
    writer = Writer()
    writer.start()
    try:
        response = api.upload(sid, hostile)
        assert response.status_code == 201, response.content
        # Stored, not extracted: the request did not wait for any of them.
        assert {f["filename"]: f["digest_status"] for f in response.json()["files"]} == dict.fromkeys(
            hostile, "parsing"
        )
        manifest = api.extracted(sid, timeout=120)
    finally:
        writer.stop.set()
        writer.join(timeout=60)
    assert writer.statuses and set(writer.statuses) == {200}, "the other client's writes all succeed"

    files = {f["filename"]: f for f in manifest["files"]}
    errors = {name: (f["error"] or {}).get("message", "") for name, f in files.items()}
    assert files["heading.md"]["digest_status"] == "stale", errors["heading.md"]
    assert files["tags.html"]["digest_status"] == "error" and "no text" in errors["tags.html"]
    for name, limit in {
        "heavy.pdf": "GROUNDWORK_EXTRACT_SECONDS",
        "array.json": "GROUNDWORK_EXTRACT_MEMORY_BYTES",
        "bomb.docx": "GROUNDWORK_MAX_DECOMPRESSED_BYTES",
    }.items():
        assert files[name]["digest_status"] == "error" and limit in errors[name], (name, errors[name])


def test_western_code_pages_and_utf16_without_a_bom_end_ready_with_their_text():
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    response = api.upload(sid, {"latin.txt": LATIN_1, "wide.txt": UTF_16_NO_BOM})
    assert response.status_code == 201, response.content
    api.parse(sid)
    manifest = api.settle(sid)
    assert {f["filename"]: f["digest_status"] for f in manifest["files"]} == {"latin.txt": "ready", "wide.txt": "ready"}
    texts = {
        file.filename: FileText.objects.current().get(file=file).text
        for file in ContextFile.objects.filter(context_set__session_id=sid)
    }
    assert texts == {
        "latin.txt": "Café pilot: coût 1200 euros. Détails à venir",
        "wide.txt": "Pumps in district 4 cost 1200 euros.",
    }


def test_a_file_stays_parsing_only_while_the_worker_has_it(lowered_limits):
    """The retry of a file in error goes back to the worker too: `parsing` in the answer, then its status."""
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    api.upload(sid, {"heavy.pdf": heavy_content_stream_pdf()})
    fid = api.file_id(sid, "heavy.pdf")
    wait_until(lambda: api.manifest(sid)["files"][0]["digest_status"] == "error", timeout=60, message="the timeout")
    retried = api.post(f"/api/sessions/{sid}/context/files/{fid}/retry")
    assert retried.status_code == 202 and retried.json()["files"][0]["digest_status"] == "parsing"
    assert "GROUNDWORK_EXTRACT_SECONDS" in api.extracted(sid)["files"][0]["error"]["message"]
