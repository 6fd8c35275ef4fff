"""Core IR types (seed 004 "Core Types", v1 simplified Source; "Context Envelope").

Everything is a plain dataclass; `to_dict()` gives the JSON shape. Binary data
travels as base64 text so an envelope can be serialised as is.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from llm_platform.ir.anchors import Anchor, format_anchor, parse_anchor
from llm_platform.ir.tokens import estimate_tokens
from llm_platform.media_types import MIME_TYPES

SourceKind = Literal["pdf", "docx", "text", "markdown", "html", "csv", "json", "note", "chatlog", "image"]
SOURCE_KINDS: tuple[str, ...] = ("pdf", "docx", "text", "markdown", "html", "csv", "json", "note", "chatlog", "image")
CutKind = Literal["chunk_removed", "chunk_truncated", "attachment_removed", "summarized"]
ENVELOPE_VERSION = "1.0"

_PAGE_LOCATOR_RE = re.compile(r"^p\.\s*([1-9][0-9]*)$")
# Files carry their extraction format's type; notes and chat logs are plain text.
_MIME_BY_KIND = {**MIME_TYPES, "note": "text/plain", "chatlog": "text/plain"}


def source_id(canonical: bytes | str) -> str:
    """The id "src:" + first 8 hex digits of sha256(canonical content); str is hashed as UTF-8."""
    data = canonical.encode("utf-8") if isinstance(canonical, str) else bytes(canonical)
    return "src:" + hashlib.sha256(data).hexdigest()[:8]


@dataclass(frozen=True)
class BinaryBlob:
    data: str  # base64
    mime_type: str
    byte_size: int

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str) -> BinaryBlob:
        return cls(base64.b64encode(raw).decode("ascii"), mime_type, len(raw))


@dataclass(frozen=True)
class Chunk:
    """A citable piece of a source, with its rank score and token count."""

    source_id: str
    anchor: str
    text: str
    score: float = 0.0
    tokens: int = 0
    locator: str = ""  # human locator from extraction ("p. 3", "Intro > Methods")
    omitted: bool = False  # stage 1: only the header is kept
    summarized: bool = False  # stage 2: text is an extractive summary
    truncated: bool = False  # stage 4: text was cut at a boundary


@dataclass(frozen=True)
class Source:
    id: str
    kind: str
    title: str
    filename: str = ""
    mime: str = ""
    chunks: tuple[Chunk, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    blob: BinaryBlob | None = None  # original bytes (native PDF, image)
    page_images: tuple[BinaryBlob, ...] = ()  # rendered pages, for vision-only models
    alt_text: str = ""  # what a text-only model sees of an image

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"unknown source kind {self.kind!r} (expected one of {', '.join(SOURCE_KINDS)})")

    @property
    def pages(self) -> tuple[int, ...]:
        return tuple(sorted({a.page for a in self.anchors() if a.page is not None}))

    def anchors(self) -> list[Anchor]:
        return [parse_anchor(c.anchor) for c in self.chunks]


@dataclass(frozen=True)
class AttachmentManifest:
    """A binary the request may carry; `included` says whether it is in the current budget."""

    anchor: str
    source_id: str
    artifact_type: Literal["raw_pdf", "page_image", "image"]
    mime_type: str
    byte_size: int
    tokens: int  # estimated cost of sending it
    included: bool = True
    data: str = field(default="", repr=False)  # base64; left out of to_dict()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("data")
        return out


@dataclass(frozen=True)
class BudgetCut:
    stage: int
    what: CutKind
    anchor: str
    tokens_saved: int
    reason: str


@dataclass(frozen=True)
class BudgetState:
    limit: int
    used: int
    stage: int  # degrade stage reached, 0..5
    cuts: tuple[BudgetCut, ...] = ()

    @property
    def over_limit(self) -> bool:
        """True only when the index and the task alone exceed the limit."""
        return self.used > self.limit


@dataclass(frozen=True)
class ContextIndexEntry:
    source_id: str
    kind: str
    title: str
    spans: tuple[str, ...] = ()  # span ids available, e.g. ("S1", "S2")
    pages: tuple[int, ...] = ()
    messages: int = 0  # chatlog length
    has_binary: bool = False  # original PDF/image bytes or page images exist for this source


@dataclass(frozen=True)
class ContextIndex:
    """One entry per source; survives every cut so the model always knows what exists."""

    entries: tuple[ContextIndexEntry, ...]

    @property
    def source_ids(self) -> frozenset[str]:
        return frozenset(e.source_id for e in self.entries)


@dataclass(frozen=True)
class ContextEnvelope:
    task: str
    sources: tuple[Source, ...]
    index: ContextIndex
    chunks: tuple[Chunk, ...]  # in rank order, best first
    attachments: tuple[AttachmentManifest, ...]
    budget: BudgetState | None = None
    version: str = ENVELOPE_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "task": self.task,
            "index": {"entries": [asdict(e) for e in self.index.entries]},
            "chunks": [asdict(c) for c in self.chunks],
            "attachments": [a.to_dict() for a in self.attachments],
            "budget": asdict(self.budget) if self.budget else None,
        }

    def source(self, source_id_: str) -> Source | None:
        return next((s for s in self.sources if s.id == source_id_), None)


# --- building sources --------------------------------------------------------


def page_of_locator(locator: str) -> int | None:
    """3 from the PDF locator "p. 3"; None for heading paths and row ranges."""
    match = _PAGE_LOCATOR_RE.match((locator or "").strip())
    return int(match.group(1)) if match else None


def sources_from_spans(
    filename: str,
    format: str,
    spans: Sequence[Mapping[str, Any]],
    *,
    title: str | None = None,
    mime: str | None = None,
    raw: bytes | None = None,
    scores: Mapping[str, float] | None = None,
    counter: Callable[[str], int] = estimate_tokens,
    metadata: Mapping[str, Any] | None = None,
) -> Source:
    """A Source from extracted spans `[{span_id, text, locator, start, end}]` (FileText.spans).

    The id hashes the span texts in order (joined by a blank line): the same
    extracted text gives the same id whatever the upload's bytes or name. Chunk
    anchors are `#s=S<n>`, plus `#p=<n>` when the locator is "p. N". `raw` bytes
    of a PDF are kept for providers that read PDFs natively.
    """
    count = counter
    # Spans are text: an uploaded image's spans are what OCR read on it, not a picture to describe.
    kind = format if format in SOURCE_KINDS and format != "image" else "text"
    sid = source_id("\n\n".join(str(s.get("text", "")) for s in spans))
    scores = scores or {}
    chunks: list[Chunk] = []
    for span in spans:
        span_id = str(span["span_id"])
        locator = str(span.get("locator") or "")
        anchor = format_anchor(Anchor(sid, page=page_of_locator(locator), span=span_id))
        text = str(span.get("text", ""))
        chunks.append(Chunk(sid, anchor, text, float(scores.get(span_id, 0.0)), count(text), locator))
    mime_type = mime or _MIME_BY_KIND.get(kind, "application/octet-stream")
    blob = BinaryBlob.from_bytes(raw, mime_type) if raw is not None and kind == "pdf" else None
    return Source(sid, kind, title or filename, filename, mime_type, tuple(chunks), dict(metadata or {}), blob)


def note_source(title: str, text: str) -> Source:
    sid = source_id(text)
    return Source(sid, "note", title, mime="text/plain", chunks=(Chunk(sid, sid, text, 0.0, estimate_tokens(text)),))


def chatlog_source(title: str, messages: Iterable[Mapping[str, Any]]) -> Source:
    """Messages `[{role, content}]`; message i is cited as `#msg=i`."""
    items = [(str(m["role"]), str(m["content"])) for m in messages]
    sid = source_id("\n".join(f"{role}: {content}" for role, content in items))
    chunks = tuple(
        Chunk(
            sid, format_anchor(Anchor(sid, message=i)), f"{role}: {content}", 0.0, estimate_tokens(f"{role}: {content}")
        )
        for i, (role, content) in enumerate(items)
    )
    return Source(sid, "chatlog", title, mime="text/plain", chunks=chunks)


def image_source(title: str, raw: bytes, mime_type: str, *, alt_text: str = "") -> Source:
    """An image; its id hashes the bytes. A text-only model sees `alt_text` instead."""
    return Source(
        source_id(raw), "image", title, mime=mime_type, blob=BinaryBlob.from_bytes(raw, mime_type), alt_text=alt_text
    )


def source_from_context_file(context_file: Any, **kwargs: Any) -> Source:
    """Build a Source from a ContextFile (reads its FileText: one DB query)."""
    spans = context_file.text.spans if context_file.is_extracted else []
    return sources_from_spans(context_file.filename, context_file.format, spans, mime=context_file.mime_type, **kwargs)
