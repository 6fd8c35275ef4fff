"""Build a ContextEnvelope from sources: index, ranked chunks, attachment manifest."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from llm_platform.ir.anchors import Anchor, format_anchor
from llm_platform.ir.modality import ProviderCapabilities, pdf_fallback, route_image
from llm_platform.ir.tokens import estimate_tokens
from llm_platform.ir.types import AttachmentManifest, Chunk, ContextEnvelope, ContextIndex, ContextIndexEntry, Source

# Rough cost of one image or one PDF page sent as a binary: Anthropic bills an
# image at about width*height/750 tokens (1568 px max side -> ~1600), and a
# native PDF page as an image plus its text. Estimates only; the budget needs
# an upper-bound-ish figure, not an invoice.
IMAGE_TOKENS = 1600
PDF_PAGE_TOKENS = 1600


def build_index(sources: Sequence[Source]) -> ContextIndex:
    entries = []
    for source in sources:
        anchors = source.anchors()
        entries.append(
            ContextIndexEntry(
                source_id=source.id,
                kind=source.kind,
                title=source.title,
                spans=tuple(a.span for a in anchors if a.span),
                pages=source.pages,
                messages=sum(1 for a in anchors if a.message is not None),
                has_binary=source.blob is not None or bool(source.page_images),
            )
        )
    return ContextIndex(tuple(entries))


def merge_duplicates(sources: Sequence[Source]) -> list[Source]:
    """One source per id: a source id hashes its content, so two sources with one id (the same
    boilerplate section in two files, the same page found twice) are the same text. The first
    is kept, in its place, its title naming every title it was given ("[1] a.md; [2] b.md").
    Two sources with one id and different chunks are a caller's bug: ValueError."""
    merged: dict[str, Source] = {}
    for source in sources:
        kept = merged.get(source.id)
        if kept is None:
            merged[source.id] = source
            continue
        if [(c.anchor, c.text) for c in kept.chunks] != [(c.anchor, c.text) for c in source.chunks]:
            raise ValueError(f"two different sources share the id {source.id}")
        if source.title and source.title not in kept.title.split("; "):
            merged[source.id] = replace(kept, title=f"{kept.title}; {source.title}" if kept.title else source.title)
    return list(merged.values())


def _pdf_page_count(source: Source) -> int:
    count = source.metadata.get("page_count") if source.metadata else None
    return int(count) if isinstance(count, int) and count > 0 else max(1, len(source.pages))


def build_envelope(
    task: str,
    sources: Sequence[Source],
    *,
    capabilities: ProviderCapabilities | None = None,
    scores: Mapping[str, float] | None = None,
    counter: Callable[[str], int] = estimate_tokens,
) -> ContextEnvelope:
    """Rank every chunk, route binaries for the model class, and index every source.

    Sources with the same id (the same content) become one (`merge_duplicates`).

    `scores` maps anchors to relevance (overriding each chunk's own score).
    Rank order is score descending, then source order, then position in the
    source, so equal input always gives the same envelope.
    """
    if not isinstance(task, str) or not task.strip():
        raise ValueError("an envelope needs a non-empty task")
    sources = merge_duplicates(sources)
    caps = capabilities or ProviderCapabilities()
    scores = scores or {}
    ranked: list[tuple[float, int, int, Chunk]] = []
    attachments: list[tuple[int, AttachmentManifest]] = []
    for source_order, source in enumerate(sources):
        chunks = list(source.chunks)
        if source.kind == "image" and route_image(caps) == "text_description":
            description = source.alt_text or "no description available"
            chunks.append(Chunk(source.id, source.id, f"[image description] {description}"))
        for position, chunk in enumerate(chunks):
            score = float(scores.get(chunk.anchor, chunk.score))
            ranked.append((-score, source_order, position, replace(chunk, score=score, tokens=counter(chunk.text))))
        attachments.extend((source_order, a) for a in _attachments_for(source, caps))
    ranked.sort(key=lambda item: item[:3])
    # Attachments follow the rank of their source's best chunk.
    best_rank = {}
    for rank, (_s, _o, _p, chunk) in enumerate(ranked):
        best_rank.setdefault(chunk.source_id, rank)
    attachments.sort(key=lambda item: (best_rank.get(item[1].source_id, len(ranked)), item[0]))
    return ContextEnvelope(
        task=task,
        sources=tuple(sources),
        index=build_index(sources),
        chunks=tuple(item[3] for item in ranked),
        attachments=tuple(a for _o, a in attachments),
    )


def _attachments_for(source: Source, caps: ProviderCapabilities) -> list[AttachmentManifest]:
    if source.kind == "image" and source.blob is not None and route_image(caps) == "image":
        blob = source.blob
        return [
            AttachmentManifest(
                source.id, source.id, "image", blob.mime_type, blob.byte_size, IMAGE_TOKENS, True, blob.data
            )
        ]
    if source.kind == "pdf":
        route = pdf_fallback(caps, has_pdf_bytes=source.blob is not None, has_page_images=bool(source.page_images))
        if route == "native" and source.blob is not None:
            blob = source.blob
            tokens = PDF_PAGE_TOKENS * _pdf_page_count(source)
            return [
                AttachmentManifest(
                    source.id, source.id, "raw_pdf", blob.mime_type, blob.byte_size, tokens, True, blob.data
                )
            ]
        if route == "images":
            return [
                AttachmentManifest(
                    format_anchor(Anchor(source.id, page=page)),
                    source.id,
                    "page_image",
                    image.mime_type,
                    image.byte_size,
                    IMAGE_TOKENS,
                    True,
                    image.data,
                )
                for page, image in enumerate(source.page_images, start=1)
            ]
    return []
