"""Blocks → one text and its spans S1..Sn (SPEC §2.2): sections, locators, a size target."""

from dataclasses import dataclass

from .blocks import Block
from .decoding import normalise_text
from .limits import _Budget

CHUNKING_VERSION = "spans.v1"

SPAN_TARGET_CHARS = 1000
SPAN_MAX_CHARS = 2000


@dataclass(frozen=True)
class Span:
    span_id: str
    text: str
    locator: str
    start: int
    end: int
    read_by: str = ""  # "ocr": its page was read from an image by Tesseract
    confidence: int | None = None  # then: that page's mean word confidence, 0–100

    def as_dict(self) -> dict:
        span = {
            "span_id": self.span_id,
            "text": self.text,
            "locator": self.locator,
            "start": self.start,
            "end": self.end,
        }
        # Only spans read by OCR carry these: every other span's JSON stays as it was.
        if self.read_by:
            span["read_by"] = self.read_by
        if self.confidence is not None:
            span["confidence"] = self.confidence
        return span


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
    ranges: list[list] = []  # [start, end, locator, read_by, confidence] per span
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
                or block.read_by != open_span[3]
                or length - open_span[0] > SPAN_TARGET_CHARS
            ):
                ranges.append([start, length, block.locator, block.read_by, block.confidence])
            else:
                open_span[1] = length
        if budget.full:
            break
    text = "".join(parts)
    spans = [
        Span(f"S{i}", text[a:b], locator, a, b, read_by, confidence)
        for i, (a, b, locator, read_by, confidence) in enumerate(ranges, start=1)
    ]
    return text, spans
