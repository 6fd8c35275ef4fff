"""Which format a file is (content first, then extension) and a display name safe in a SourceRef."""

import io
import re
import unicodedata
import zipfile
from pathlib import PurePosixPath
from typing import BinaryIO

from llm_platform.media_types import MIME_TYPES

from .decoding import _wide_encoding

FORMATS = ("pdf", "docx", "text", "markdown", "html", "csv", "json", "image")
# Which reader read a file: a format's entry moves on when its reader reads the same bytes otherwise, so the
# files it read before are read again on their session's next parse (context_app.pipeline.extraction_queue). A format
# not listed is at its first reader ("", as files extracted before versions were recorded).
READER_VERSIONS = {
    "pdf": "pdf.8",  # a ruled table's rows are read a row a line, its cells joined by " | " (binary_readers.
    # _ruled_tables, pdfplumber), a compound of two words the document uses alone keeps its hyphen at a line's
    # end ("tenant-" "responsibility", stop 68); pdf.7: a sentence a page break cuts is whole on the page it starts on
    # (binary_readers._sentences_whole_across_pages, stop 67); pdf.6: a compound broken at its hyphen keeps it
    # where the document ends another with its last word ("Part-" "time" beside "Full-time", stop 62); pdf.5:
    # lines set larger than the text are headings that open spans (binary_readers._display_lines, stop 60);
    # pdf.4: hyphens at a line's end by the document's usage (stop 53); a two-page PDF's page numbers and the
    # running header both its pages close with, a hyphen after a number at a line's end (stop 55); a scan's
    # sentence that Tesseract cut into two blocks is one paragraph again (extraction.ocr), a page's numbered
    # headings open spans of their own (binary_readers._page_blocks, stop 58)
    "docx": "docx.3",  # a paragraph set bold throughout that reads as a heading is one (binary_readers._bold_heading,
    # stop 60); docx.2: a tracked change's insertions are text (binary_readers._paragraph_text)
    "markdown": "markdown.3",  # a note's YAML front matter is one record (text_readers._front_matter), its
    # values without YAML's quotes and brackets; a fenced code block has no headings; a notebook (stop 56)
    "html": "html.5",  # a table is one block, a row a line, as a DOCX's (html_reader, stop 68); html.4: a <p>
    # or <div> all in bold that reads as a heading is one (html_reader, stop 60); html.3:
    # a <br> is a line of its block, a <dt> heads its <dd>'s; html.2: a page's <main> alone
    "image": "image.2",  # a scan's sentence cut into two OCR blocks is one paragraph again (stop 58)
    "csv": "csv.2",  # a span's rows are its own: rows up to a span's size, each span's locator naming them (stop 67)
    "text": "text.5",  # a line that only draws a rule ("-----") is a paragraph break (text_readers._without_rules,
    # stop 68); text.4: an e-mail keeps the characters its file holds (text_readers._mail_body, stop 65); text.3:
    # headings written as lines of their own head their paragraphs (text_readers._plain_text_blocks,
    # stop 58); text.2: an e-mail's header is one record, its body its plain text (text_readers._mail_message)
}


def reader_version(file_format: str) -> str:
    return READER_VERSIONS.get(file_format, "")


EXTENSIONS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".ipynb": "markdown",  # a Jupyter notebook: its cells read as the Markdown they are (text_readers)
    ".html": "html",
    ".htm": "html",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",  # JSON Lines (an export of records, one a line): read as the list of its lines' values
    ".ndjson": "json",
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".rst": "text",
    ".eml": "text",  # an e-mail saved by a mail program: its header one record, its plain text (text_readers)
}
# Images read by OCR (extraction.ocr): a scan, a photo of a page, a screenshot.
IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)
# Magic numbers of formats we recognise only to refuse them clearly.
UNSUPPORTED_MAGIC = (
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"RIFF", "application/octet-stream"),
    (b"\x1f\x8b", "application/gzip"),
    (b"7z\xbc\xaf", "application/x-7z-compressed"),
    (b"Rar!", "application/vnd.rar"),
    (b"\xd0\xcf\x11\xe0", "application/msword"),
    (b"\x7fELF", "application/x-executable"),
    (b"MZ", "application/x-msdownload"),
    (b"{\\rtf", "application/rtf"),
)
# Office and OpenDocument files are ZIP packages: the member that tells which, its media type.
ZIP_PACKAGES = (
    ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("ppt/presentation.xml", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
)
# What an unsupported file is, and what to save it as, said in its error ("unsupported format: …").
UNSUPPORTED_ADVICE = {
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "an Excel workbook: save each sheet as CSV",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": (
        "a PowerPoint deck: export it as PDF"
    ),
    "application/vnd.oasis.opendocument.text": "an OpenDocument text: save it as DOCX or PDF",
    "application/vnd.oasis.opendocument.spreadsheet": "an OpenDocument spreadsheet: save each sheet as CSV",
    "application/vnd.oasis.opendocument.presentation": "an OpenDocument presentation: export it as PDF",
    "application/msword": "an older Office file (DOC, XLS or PPT): save it as DOCX, CSV or PDF",
    "application/rtf": "an RTF document: save it as DOCX or PDF",
}


def clean_filename(name: str) -> str:
    """A display name safe inside a SourceRef (`<filename>::S4`)."""
    base = re.split(r"[\\/]", name or "")[-1].strip()
    if any(unicodedata.category(ch) == "Cc" for ch in base):
        raise ValueError("filename contains control characters")
    base = unicodedata.normalize("NFC", base).replace("::", "_")
    if base in ("", ".", ".."):
        raise ValueError("filename is empty")
    if len(base) > 255:
        suffix = PurePosixPath(base).suffix[:20]
        base = base[: 255 - len(suffix)] + suffix
    return base


def detect_format(filename: str, data: bytes | BinaryIO, declared_mime: str | None = None) -> tuple[str, str]:
    """(format or "unsupported", mime type), judged by content first, then by extension.

    `data` is the bytes or a seekable file of them: an upload is judged from its first
    bytes (and a ZIP's directory) without reading it into memory.
    """
    handle = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    handle.seek(0)
    head = handle.read(8192)
    if head.startswith(b"%PDF-") or b"%PDF-" in head[:1024]:
        return "pdf", MIME_TYPES["pdf"]
    if head.startswith(b"PK\x03\x04"):
        return _zip_format(handle)
    for magic, mime in IMAGE_MAGIC:
        if head.startswith(magic):
            return "image", mime
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image", "image/webp"
    for magic, mime in UNSUPPORTED_MAGIC:
        if head.startswith(magic):
            return "unsupported", mime
    suffix = PurePosixPath(filename.lower()).suffix
    if not _looks_like_text(head):
        return "unsupported", declared_mime if declared_mime and not declared_mime.startswith(
            "text/"
        ) else "application/octet-stream"
    by_extension = EXTENSIONS.get(suffix)
    if by_extension in ("pdf", "docx"):
        by_extension = "text"  # a .pdf/.docx that is really text: treat it as the text it is
    file_format = by_extension or _format_from_mime(declared_mime) or "text"
    return file_format, MIME_TYPES[file_format]


def _format_from_mime(mime: str | None) -> str | None:
    for file_format, known in MIME_TYPES.items():
        if mime and mime.split(";")[0].strip().lower() == known:
            return file_format
    return None


def _zip_format(handle: BinaryIO) -> tuple[str, str]:
    """A ZIP package's format: DOCX read, an Excel workbook or a slide deck named (to refuse clearly), an
    OpenDocument file by its `mimetype` member; any other ZIP is an archive."""
    try:
        with zipfile.ZipFile(handle) as archive:
            names = set(archive.namelist())
            if "word/document.xml" in names:
                return "docx", MIME_TYPES["docx"]
            opendocument = archive.read("mimetype")[:100].decode("ascii", "replace") if "mimetype" in names else ""
    except (zipfile.BadZipFile, ValueError, OSError, KeyError):
        return "unsupported", "application/zip"
    package = next((mime for member, mime in ZIP_PACKAGES if member in names), None)
    return "unsupported", package or (opendocument if opendocument in UNSUPPORTED_ADVICE else "application/zip")


def _looks_like_text(data: bytes) -> bool:
    sample = data[:8192]
    return b"\x00" not in sample or _wide_encoding(sample) is not None
