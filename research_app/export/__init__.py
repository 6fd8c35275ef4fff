"""A run's report as a file (SPEC §9 "Report export"): Markdown, Word or PDF, every citation kept.

`export_report` builds one document from the stored report (research_app.export.document:
every [n] and SourceRef resolved through context_app.provenance.resolve, as the page's
source dialog does) and hands it to the writer of the format asked for.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from ..models import ResearchRun
from . import document, markdown, pdf, word

FILENAME_CHARS = 80  # of the question, in the file's name


@dataclass(frozen=True)
class Format:
    extension: str
    content_type: str
    render: Callable[[document.ReportDocument], bytes]


FORMATS: dict[str, Format] = {
    "md": Format("md", "text/markdown; charset=utf-8", lambda doc: markdown.render(doc).encode()),
    "docx": Format("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", word.render),
    "pdf": Format("pdf", "application/pdf", pdf.render),
}


@dataclass(frozen=True)
class ExportedFile:
    content: bytes
    content_type: str
    filename: str

    @property
    def content_disposition(self) -> str:
        return content_disposition(self.filename)


def export_report(run: ResearchRun, kind: str, user, absolute: Callable[[str], str]) -> ExportedFile:
    """The run's report (it has one) as a `kind` file ("md", "docx", "pdf") for `user`, a member of its team;
    `absolute` turns a path such as a source_url into the full URL the reader will open."""
    fmt = FORMATS[kind]
    doc = document.build(run, user, absolute)
    return ExportedFile(fmt.render(doc), fmt.content_type, f"{file_stem(doc.title)}.{fmt.extension}")


def file_stem(question: str) -> str:
    """A file name from the question: letters of any script kept, nothing a file system or a header
    refuses (separators, quotes, control characters), at most FILENAME_CHARS, never empty."""
    text = unicodedata.normalize("NFC", question)
    text = re.sub(r'[\\/:*?"<>|\x00-\x1f\x7f;,%]+', " ", text)
    text = re.sub(r"\s+", " ", text).strip(" .-_")
    if len(text) > FILENAME_CHARS:
        text = text[:FILENAME_CHARS].rsplit(" ", 1)[0] if " " in text[:FILENAME_CHARS] else text[:FILENAME_CHARS]
    return text.strip(" .-_") or "report"


def ascii_name(filename: str) -> str:
    """The ASCII fallback: accents dropped, anything else outside [A-Za-z0-9._-] as one hyphen."""
    stem, dot, extension = filename.rpartition(".")
    flat = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    flat = re.sub(r"[^A-Za-z0-9._-]+", "-", flat).strip("-.") or "report"
    return f"{flat}{dot}{extension}"


def content_disposition(filename: str) -> str:
    """`attachment` with an ASCII name for old clients and the UTF-8 name (RFC 6266, RFC 5987) for the rest."""
    return f"attachment; filename=\"{ascii_name(filename)}\"; filename*=UTF-8''{quote(filename, safe='')}"
