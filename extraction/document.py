"""Bytes → normalised text → ordered spans: one file through detection, its reader and assembly."""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from .binary_readers import _docx_blocks, _image_blocks, _pdf_blocks
from .decoding import decode_text
from .formats import UNSUPPORTED_ADVICE, detect_format
from .html_reader import _html_blocks
from .limits import ExtractionError, ExtractionLimits, _Budget, _short
from .spans import Span, _assemble
from .text_readers import _csv_blocks, _json_blocks, _markdown_blocks, _text_blocks


@dataclass(frozen=True)
class ExtractedDocument:
    format: str
    mime_type: str
    text: str
    spans: list[Span]
    page_count: int | None = None
    truncated: bool = False
    # What the file should say beside its status: pages read by OCR with low confidence, pages
    # without text, scanned pages that could not be read ("low OCR confidence on pages 3, 7").
    notes: tuple[str, ...] = ()

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


def extract_document(
    data: bytes,
    filename: str,
    declared_mime: str | None = None,
    limits: ExtractionLimits | None = None,
    progress: Callable[[str], None] | None = None,
) -> ExtractedDocument:
    """The file's text and spans. `progress` hears how a long read goes ("OCR page 12/80")."""
    limits = limits or ExtractionLimits()
    if not data or not data.strip():
        raise ExtractionError("empty", "file is empty")
    file_format, mime_type = detect_format(filename, data, declared_mime)
    if file_format == "unsupported":
        # "unsupported format: an Excel workbook: save each sheet as CSV", or its media type when it is nothing known
        raise ExtractionError(
            "unsupported_format", f"unsupported format: {UNSUPPORTED_ADVICE.get(mime_type, mime_type)}"
        )
    budget = _Budget(limits)
    page_count = None
    notes: list[str] = []
    try:
        if file_format == "pdf":
            blocks, page_count, notes = _pdf_blocks(data, budget, progress)
        elif file_format == "image":
            blocks, page_count, notes = _image_blocks(data, budget, progress)
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
        notes=tuple(notes),
    )
