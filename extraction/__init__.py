"""Bytes → normalised text → ordered spans S1..Sn with locators and offsets (SPEC §2.2).

Pure functions, no database. Every input, however broken or hostile, ends in an
ExtractedDocument or an ExtractionError with a message a user can read.

Modules, each importing only those listed before it:
    limits          ExtractionError, ExtractionLimits, the per-extraction budget, the DOCX zip guard
    decoding        bytes → str (BOMs, UTF-16/32, code pages) and normalise_text
    formats         detect_format (content first, then extension), clean_filename, reader_version
    blocks          Block: what a reader yields
    ocr             page images → text by Tesseract (a `tesseract` process a page), with confidences
    binary_readers  PDF (its scanned pages by OCR), images (by OCR) and DOCX
    html_reader     HTML
    text_readers    Markdown, CSV, JSON, plain text
    spans           blocks → text and spans S1..Sn (Span, CHUNKING_VERSION)
    document        extract_document and ExtractedDocument
This module only re-exports what code outside the package uses.
"""

from .decoding import normalise_text
from .document import ExtractedDocument, extract_document, sha256_hex
from .formats import EXTENSIONS, READER_VERSIONS, clean_filename, detect_format, reader_version
from .limits import ExtractionError, ExtractionLimits
from .spans import CHUNKING_VERSION, SPAN_MAX_CHARS, Span
from .text_readers import JSON_ROOT

__all__ = [
    "CHUNKING_VERSION",
    "EXTENSIONS",
    "JSON_ROOT",
    "READER_VERSIONS",
    "SPAN_MAX_CHARS",
    "ExtractedDocument",
    "ExtractionError",
    "ExtractionLimits",
    "Span",
    "clean_filename",
    "detect_format",
    "extract_document",
    "normalise_text",
    "reader_version",
    "sha256_hex",
]
