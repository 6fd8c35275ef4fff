"""Bytes → normalised text → ordered spans S1..Sn with locators and offsets (SPEC §2.2).

Pure functions, no database. Every input, however broken or hostile, ends in an
ExtractedDocument or an ExtractionError with a message a user can read.
"""

import csv
import hashlib
import io
import json
import re
import time
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import BinaryIO

import charset_normalizer

from llm_platform.ir.modality import MIME_TYPES

CHUNKING_VERSION = "spans.v1"
FORMATS = ("pdf", "docx", "text", "markdown", "html", "csv", "json")

SPAN_TARGET_CHARS = 1000
SPAN_MAX_CHARS = 2000
CSV_ROWS_PER_SPAN = 40

EXTENSIONS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".csv": "csv",
    ".json": "json",
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".rst": "text",
}
# Magic numbers of formats we recognise only to refuse them clearly.
UNSUPPORTED_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"RIFF", "application/octet-stream"),
    (b"\x1f\x8b", "application/gzip"),
    (b"7z\xbc\xaf", "application/x-7z-compressed"),
    (b"Rar!", "application/vnd.rar"),
    (b"\xd0\xcf\x11\xe0", "application/msword"),
    (b"\x7fELF", "application/x-executable"),
    (b"MZ", "application/x-msdownload"),
)


class ExtractionError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Span:
    span_id: str
    text: str
    locator: str
    start: int
    end: int

    def as_dict(self) -> dict:
        return {
            "span_id": self.span_id,
            "text": self.text,
            "locator": self.locator,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True)
class ExtractionLimits:
    """Bounds on one extraction; each error message names the setting it hit."""

    max_pages: int = 2000
    max_chars: int = 5_000_000
    max_decompressed_bytes: int = 64 * 1024 * 1024
    max_xml_bytes: int = 16 * 1024 * 1024
    seconds: float = 60.0
    memory_bytes: int = 1024 * 1024 * 1024  # enforced by the child process (context_app/isolation.py)

    @classmethod
    def from_settings(cls) -> "ExtractionLimits":
        from django.conf import settings

        return cls(
            max_pages=settings.GROUNDWORK_MAX_PAGES,
            max_chars=settings.GROUNDWORK_MAX_CHARS,
            max_decompressed_bytes=settings.GROUNDWORK_MAX_DECOMPRESSED_BYTES,
            max_xml_bytes=settings.GROUNDWORK_MAX_XML_BYTES,
            seconds=settings.GROUNDWORK_EXTRACT_SECONDS,
            memory_bytes=settings.GROUNDWORK_EXTRACT_MEMORY_BYTES,
        )

    def timeout_error(self) -> "ExtractionError":
        return ExtractionError(
            "timeout", f"extraction took longer than {self.seconds:g} seconds (limit GROUNDWORK_EXTRACT_SECONDS)"
        )

    def memory_error(self) -> "ExtractionError":
        return ExtractionError(
            "too_large",
            f"extraction needed more than {_mib(self.memory_bytes)} of memory (limit GROUNDWORK_EXTRACT_MEMORY_BYTES)",
        )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.4g} MiB"


@dataclass(frozen=True)
class ExtractedDocument:
    format: str
    mime_type: str
    text: str
    spans: list[Span]
    page_count: int | None = None
    truncated: bool = False

    @property
    def extracted_text_hash(self) -> str:
        return sha256_hex(self.text)

    @property
    def spans_hash(self) -> str:
        pairs = [[span.span_id, span.text] for span in self.spans]
        return sha256_hex(json.dumps(pairs, ensure_ascii=False, separators=(",", ":")))


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


# --- filenames and formats ---------------------------------------------------


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
        if _zip_has(handle, "word/document.xml"):
            return "docx", MIME_TYPES["docx"]
        return "unsupported", "application/zip"
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


def _zip_has(handle: BinaryIO, member: str) -> bool:
    try:
        with zipfile.ZipFile(handle) as archive:
            return member in archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return False


def _looks_like_text(data: bytes) -> bool:
    sample = data[:8192]
    return b"\x00" not in sample or _wide_encoding(sample) is not None


# --- text ----------------------------------------------------------------------

# Byte-order marks, the 4-byte ones first (UTF-32-LE's starts with UTF-16-LE's).
BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# Without a BOM or valid UTF-8, the detector picks among the code pages Western and Central
# European text is written in (the first wins a tie: short samples decode the same in several)...
COMMON_CODE_PAGES = ["cp1252", "iso8859_15", "latin_1", "cp1250", "iso8859_2"]
# ...and goes outside them (Cyrillic, Greek, …) only when its best guess reads as a language.
SURE_COHERENCE = 0.5
# Where the text decoder looks: the first bytes tell the encoding of the whole.
DETECTION_SAMPLE_BYTES = 64 * 1024


def _wide_encoding(sample: bytes) -> str | None:
    """UTF-16/32 by BOM, or without one by where the NUL bytes fall (text mostly below U+0100)."""
    for bom, encoding in BOMS[1:]:
        if sample.startswith(bom):
            return encoding
    sample = sample[: len(sample) - len(sample) % 4]
    if len(sample) < 8:
        return None

    def nul_share(offset: int, step: int) -> float:
        lane = sample[offset::step]
        return lane.count(0) / len(lane)

    for encoding, zero_lanes, text_lane in (("utf-32-le", (1, 2, 3), 0), ("utf-32-be", (0, 1, 2), 3)):
        if all(nul_share(lane, 4) > 0.95 for lane in zero_lanes) and nul_share(text_lane, 4) < 0.05:
            return encoding
    even, odd = nul_share(0, 2), nul_share(1, 2)
    if odd > 0.6 and even < 0.05:
        return "utf-16-le"
    if even > 0.6 and odd < 0.05:
        return "utf-16-be"
    return None


def normalise_text(text: str) -> str:
    """NFC, \\n line ends, no trailing spaces, at most one blank line in a row."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\x00", "").replace("\u00a0", " ").replace("\x0c", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def decode_text(data: bytes) -> str:
    """UTF-8 first, then UTF-16/32 (BOM or NUL pattern), then the detector (see COMMON_CODE_PAGES)."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data.decode("utf-8", errors="replace")  # cut in the middle of a character
    wide = _wide_encoding(data[:DETECTION_SAMPLE_BYTES])
    if wide is not None:
        return data.decode(wide, errors="replace")
    return data.decode(_detect_code_page(data[:DETECTION_SAMPLE_BYTES]), errors="replace")


def _detect_code_page(sample: bytes) -> str:
    preference = {name: index for index, name in enumerate(COMMON_CODE_PAGES)}
    common = sorted(
        charset_normalizer.from_bytes(sample, cp_isolation=COMMON_CODE_PAGES),
        key=lambda match: (match.chaos, -match.coherence, preference.get(match.encoding, len(preference))),
    )
    best_anywhere = charset_normalizer.from_bytes(sample).best()
    if best_anywhere is not None and best_anywhere.encoding not in preference:
        beats_common = not common or best_anywhere.chaos < common[0].chaos
        if best_anywhere.coherence >= SURE_COHERENCE and beats_common:
            return best_anywhere.encoding
    return common[0].encoding if common else COMMON_CODE_PAGES[0]


# --- blocks: the format-specific step ----------------------------------------
# Each reader yields Blocks: a paragraph-sized piece of text with its locator.
# `new_section` marks a heading or page start, where a span must begin.


@dataclass
class Block:
    text: str
    locator: str
    new_section: bool = False


@dataclass
class _Budget:
    limits: ExtractionLimits
    deadline: float = field(init=False)
    chars: int = 0
    truncated: bool = False

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.limits.seconds

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise self.limits.timeout_error()

    @property
    def full(self) -> bool:
        return self.chars >= self.limits.max_chars

    def take(self, text: str) -> str | None:
        """The part of `text` that still fits the character limit (None once full)."""
        if self.full:
            self.truncated = True
            return None
        room = self.limits.max_chars - self.chars
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self.chars += len(text)
        return text


def _pdf_blocks(data: bytes, budget: _Budget) -> tuple[list[Block], int]:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise ExtractionError("encrypted", "PDF is encrypted")
        pages = reader.pages
        page_count = len(pages)
    except (ExtractionError, MemoryError):
        raise
    except (PdfReadError, Exception) as exc:  # pypdf raises many types on broken files
        raise ExtractionError("corrupt", f"not a valid PDF: {_short(exc)}") from None
    blocks: list[Block] = []
    for number in range(min(page_count, budget.limits.max_pages)):
        budget.check_time()
        try:
            page_text = pages[number].extract_text() or ""
        except MemoryError:
            raise
        except Exception as exc:  # one bad page must not lose the document
            raise ExtractionError("corrupt", f"PDF page {number + 1} could not be read: {_short(exc)}") from None
        first = True
        for paragraph in _paragraphs(normalise_text(page_text)):
            blocks.append(Block(paragraph, f"p. {number + 1}", new_section=first))
            first = False
    if page_count > budget.limits.max_pages:
        budget.truncated = True
    return blocks, page_count


def _docx_blocks(data: bytes, budget: _Budget) -> list[Block]:
    _guard_zip(data, budget.limits)
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
    except MemoryError:
        raise
    except Exception as exc:
        raise ExtractionError("corrupt", f"not a valid DOCX: {_short(exc)}") from None
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        budget.check_time()
        if isinstance(item, Paragraph):
            text = item.text.strip()
            if not text:
                continue
            level = _heading_level(item.style.name if item.style is not None else "")
            if level is not None:
                headings = [h for h in headings if h[0] < level] + [(level, text)]
                blocks.append(Block(text, _path(headings), new_section=True))
            else:
                blocks.append(Block(text, _path(headings)))
        elif isinstance(item, Table):
            rows = []
            for row in item.rows:
                cells = [cell.text.strip() for cell in row.cells]
                rows.append(" | ".join(_dedupe_merged(cells)))
            if rows:
                blocks.append(Block("\n".join(rows), _path(headings)))
    return blocks


def _heading_level(style_name: str) -> int | None:
    if style_name == "Title":
        return 0
    match = re.match(r"Heading (\d)", style_name or "")
    return int(match.group(1)) if match else None


def _dedupe_merged(cells: list[str]) -> list[str]:
    """Merged cells repeat in python-docx; keep one copy of each run."""
    out: list[str] = []
    for cell in cells:
        if not out or cell != out[-1]:
            out.append(cell)
    return out


def _guard_zip(data: bytes, limits: ExtractionLimits) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ExtractionError("corrupt", f"not a valid DOCX: {_short(exc)}") from None
    # zipfile never inflates a member past its declared size, so the declared sizes bound the work.
    total = sum(info.file_size for info in infos)
    if total > limits.max_decompressed_bytes:
        raise ExtractionError(
            "too_large",
            f"DOCX unpacks to {_mib(total)}, over the {_mib(limits.max_decompressed_bytes)} limit "
            "(GROUNDWORK_MAX_DECOMPRESSED_BYTES)",
        )
    for info in infos:
        if info.filename.endswith((".xml", ".rels")) and info.file_size > limits.max_xml_bytes:
            raise ExtractionError(
                "too_large",
                f"DOCX part {info.filename} is {_mib(info.file_size)} of XML, over the "
                f"{_mib(limits.max_xml_bytes)} limit (GROUNDWORK_MAX_XML_BYTES)",
            )
        if info.file_size > 10 * 1024 * 1024 and info.file_size > 100 * max(info.compress_size, 1):
            raise ExtractionError("too_large", f"DOCX member {info.filename} looks like a decompression bomb")


class _HTMLText:
    """An lxml parser target: libxml2 reads any tag soup in linear time (html.parser is
    quadratic on unclosed tags: 250 KB of "<a" took 27 s)."""

    SKIP = {"script", "style", "noscript", "template", "svg", "iframe", "object", "head"}
    BLOCK = {
        "p",
        "div",
        "section",
        "article",
        "li",
        "ul",
        "ol",
        "table",
        "tr",
        "br",
        "blockquote",
        "pre",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "figure",
        "figcaption",
        "dd",
        "dt",
        "hr",
        "form",
        "body",
    }
    HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

    def __init__(self, budget: "_Budget") -> None:
        self.budget = budget
        self.blocks: list[Block] = []
        self.buffer: list[str] = []
        self.skip_depth = 0
        self.heading_level: int | None = None
        self.headings: list[tuple[int, str]] = []
        self.title: list[str] = []
        self.in_title = False

    def start(self, tag, attrib) -> None:
        if not isinstance(tag, str):  # a comment or processing instruction
            return
        tag = tag.lower()
        if tag == "title":
            self.in_title = True
        elif tag in self.SKIP:
            self.skip_depth += 1
        elif tag in self.HEADINGS:
            self.flush()
            self.heading_level = self.HEADINGS[tag]
        elif tag in self.BLOCK:
            self.flush()
        elif tag in ("td", "th"):
            self.buffer.append(" | ")

    def end(self, tag) -> None:
        if not isinstance(tag, str):
            return
        tag = tag.lower()
        if tag == "title":
            self.in_title = False
        elif tag in self.SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
        elif tag in self.HEADINGS:
            text = self._take()
            if text:
                level = self.heading_level or self.HEADINGS[tag]
                self.headings = [h for h in self.headings if h[0] < level] + [(level, text)]
                self.blocks.append(Block(text, _path(self.headings), new_section=True))
            self.heading_level = None
        elif tag in self.BLOCK:
            self.flush()

    def data(self, data) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skip_depth:
            self.buffer.append(data)

    def _take(self) -> str:
        text = re.sub(r"\s+", " ", "".join(self.buffer)).strip(" |")
        self.buffer = []
        return text.strip()

    def flush(self) -> None:
        if self.heading_level is not None:
            return
        text = self._take()
        if text:
            self.blocks.append(Block(text, _path(self.headings)))
            self.budget.check_time()

    def close(self) -> None:
        return None


HTML_FEED_CHARS = 64 * 1024  # the budget is checked between pieces as well as between blocks


def _html_blocks(text: str, budget: "_Budget") -> list[Block]:
    from lxml import etree

    target = _HTMLText(budget)
    # No network, no entities beyond HTML's own: a file is read as the text it holds.
    parser = etree.HTMLParser(target=target, recover=True, no_network=True, remove_comments=True, remove_pis=True)
    try:
        for start in range(0, len(text), HTML_FEED_CHARS):
            budget.check_time()
            parser.feed(text[start : start + HTML_FEED_CHARS])
        parser.close()
    except (ExtractionError, MemoryError):
        raise
    except Exception as exc:
        raise ExtractionError("corrupt", f"HTML could not be read: {_short(exc)}") from None
    target.flush()
    title = re.sub(r"\s+", " ", "".join(target.title)).strip()
    blocks = target.blocks
    if title and not (blocks and blocks[0].text == title):
        blocks.insert(0, Block(title, "", new_section=True))
    return blocks


def _atx_heading(line: str) -> tuple[int, str] | None:
    """`## Title ##` → (2, "Title"). By hand, not a regex: `^(#{1,6})\\s+(.*?)\\s*#*\\s*$`
    backtracked cubically on a heading followed by thousands of spaces (7.5 KB took 34 s)."""
    level = len(line) - len(line.lstrip("#"))
    rest = line[level:]
    if not 1 <= level <= 6 or not rest[:1].isspace():
        return None
    return level, rest.strip().rstrip("#").rstrip()  # without a closing run of #s


def _is_setext_underline(line: str) -> bool:
    stripped = line.rstrip()
    return bool(stripped) and (set(stripped) == {"="} or set(stripped) == {"-"})


def _markdown_blocks(text: str, budget: "_Budget") -> list[Block]:
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    lines = normalise_text(text).split("\n")
    paragraph: list[str] = []

    def flush():
        if paragraph:
            blocks.append(Block("\n".join(paragraph), _path(headings)))
            paragraph.clear()

    for index, line in enumerate(lines):
        if index % 256 == 0:
            budget.check_time()
        atx = _atx_heading(line)
        setext = index + 1 < len(lines) and line.strip() and not paragraph and _is_setext_underline(lines[index + 1])
        if atx:
            flush()
            level, title = atx
            headings = [h for h in headings if h[0] < level] + [(level, title)]
            blocks.append(Block(line, _path(headings), new_section=True))
        elif setext:
            level = 1 if lines[index + 1].startswith("=") else 2
            headings = [h for h in headings if h[0] < level] + [(level, line.strip())]
            blocks.append(Block(line, _path(headings), new_section=True))
        elif _is_setext_underline(line) and blocks and blocks[-1].new_section and not paragraph:
            blocks[-1].text += "\n" + line  # the underline of a setext heading
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
    flush()
    return blocks


def _csv_blocks(text: str, budget: _Budget) -> list[Block]:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise ExtractionError("corrupt", f"CSV could not be read: {_short(exc)}") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    blocks = [Block(", ".join(header), "header", new_section=True)]
    for first in range(0, len(body), CSV_ROWS_PER_SPAN):
        budget.check_time()
        chunk = body[first : first + CSV_ROWS_PER_SPAN]
        lines = [
            "; ".join(f"{header[i] if i < len(header) else f'column {i + 1}'}: {cell}" for i, cell in enumerate(row))
            for row in chunk
        ]
        # +2: the header is row 1 and rows count from 1
        locator = f"rows {first + 2}-{first + len(chunk) + 1}"
        blocks.append(Block("\n".join(lines), locator, new_section=True))
    return blocks


def _json_blocks(text: str, budget: "_Budget") -> list[Block]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ExtractionError("corrupt", f"invalid JSON: {_short(exc)}") from None
    if isinstance(value, dict):
        items = [
            (f"$.{key}" if re.fullmatch(r"\w+", str(key)) else f"$[{json.dumps(key)}]", v) for key, v in value.items()
        ]
    elif isinstance(value, list):
        items = [(f"$[{index}]", v) for index, v in enumerate(value)]
    else:
        items = [("$", value)]
    blocks = []
    for index, (path, item) in enumerate(items):
        if index % 256 == 0:
            budget.check_time()
        try:
            rendered = json.dumps(item, ensure_ascii=False, indent=2) if isinstance(item, dict | list) else str(item)
        except RecursionError:
            raise ExtractionError("too_large", "JSON is nested too deeply") from None
        label = path.rsplit(".", 1)[-1] if path.startswith("$.") else path
        blocks.append(Block(f"{label}: {rendered}", path, new_section=True))
    return blocks


def _text_blocks(text: str, budget: "_Budget") -> list[Block]:
    budget.check_time()
    return [Block(paragraph, "") for paragraph in _paragraphs(normalise_text(text))]


def _paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]


def _path(headings: list[tuple[int, str]]) -> str:
    return " > ".join(title for _level, title in headings)


def _short(exc: BaseException) -> str:
    message = str(exc) or exc.__class__.__name__
    return message if len(message) <= 200 else message[:197] + "…"


# --- spans -------------------------------------------------------------------


def _split_long(text: str, limit: int) -> list[str]:
    """Split an oversized block at sentence ends, else at whitespace, else hard."""
    pieces: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind(". "), window.rfind("? "), window.rfind("! "), window.rfind("\n"))
        cut = cut + 1 if cut >= limit // 3 else window.rfind(" ")
        if cut < limit // 3:
            cut = limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return [piece for piece in pieces if piece.strip()]


def _assemble(blocks: list[Block], budget: _Budget) -> tuple[str, list[Span]]:
    """Join blocks into one text (a blank line between blocks) and group them into spans.

    A span starts at a heading or page, when the locator changes, or when it would
    grow past the size target; it never splits a block except an oversized one.
    """
    parts: list[str] = []
    ranges: list[list] = []  # [start, end, locator] per span
    length = 0
    for index, block in enumerate(blocks):
        if index % 256 == 0:
            budget.check_time()
        for piece in _split_long(normalise_text(block.text), SPAN_MAX_CHARS):
            piece = budget.take(piece)
            if piece is None:
                break
            piece = piece.rstrip()
            if not piece:
                continue
            start = length + (2 if parts else 0)
            parts.append(("\n\n" if parts else "") + piece)
            length = start + len(piece)
            open_span = ranges[-1] if ranges else None
            if (
                open_span is None
                or block.new_section
                or block.locator != open_span[2]
                or length - open_span[0] > SPAN_TARGET_CHARS
            ):
                ranges.append([start, length, block.locator])
            else:
                open_span[1] = length
        if budget.full:
            break
    text = "".join(parts)
    spans = [Span(f"S{i}", text[a:b], locator, a, b) for i, (a, b, locator) in enumerate(ranges, start=1)]
    return text, spans


def extract_document(
    data: bytes, filename: str, declared_mime: str | None = None, limits: ExtractionLimits | None = None
) -> ExtractedDocument:
    limits = limits or ExtractionLimits()
    if not data or not data.strip():
        raise ExtractionError("empty", "file is empty")
    file_format, mime_type = detect_format(filename, data, declared_mime)
    if file_format == "unsupported":
        raise ExtractionError("unsupported_format", f"unsupported format: {mime_type}")
    budget = _Budget(limits)
    page_count = None
    try:
        if file_format == "pdf":
            blocks, page_count = _pdf_blocks(data, budget)
        elif file_format == "docx":
            blocks = _docx_blocks(data, budget)
        else:
            # No character can need more than 4 bytes: bytes past that many never reach the text.
            text_bytes = limits.max_chars * 2 * 4
            if len(data) > text_bytes:
                data = data[:text_bytes]
                budget.truncated = True
            text = decode_text(data)
            if len(text) > limits.max_chars * 2:
                text = text[: limits.max_chars * 2]
                budget.truncated = True
            reader = {
                "markdown": _markdown_blocks,
                "html": _html_blocks,
                "json": _json_blocks,
                "text": _text_blocks,
                "csv": _csv_blocks,
            }[file_format]
            blocks = reader(text, budget)
        text, spans = _assemble(blocks, budget)
    except ExtractionError:
        raise
    except RecursionError:
        raise ExtractionError("too_large", "document is nested too deeply") from None
    except MemoryError:
        raise limits.memory_error() from None
    except Exception as exc:  # a library bug on hostile input must still end as a file-level error
        raise ExtractionError("corrupt", f"could not extract text: {_short(exc)}") from None
    if not spans:
        raise ExtractionError("empty", "no text could be extracted")
    return ExtractedDocument(
        format=file_format,
        mime_type=mime_type,
        text=text,
        spans=spans,
        page_count=page_count,
        truncated=budget.truncated,
    )
