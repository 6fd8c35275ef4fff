"""The universal text rendering of an envelope (seed 004 "Rendering Format").

    === CONTEXT INDEX ===
    [1] src:9f3a7b2c | pdf | "Q3 Report" | spans S1-S12 | pages 1-4 | attached
    <cite instruction>

    === CONTENT ===

    [CHUNK]
    anchor: src:9f3a7b2c#p=1&s=S1
    ...
    [/CHUNK]

    === TASK ===
    <task text, verbatim>

`render_parts` gives the pieces the budget counts one by one; `render_text`
joins them with PART_SEPARATOR.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable

from llm_platform.ir.types import Chunk, ContextEnvelope, ContextIndex, Source

PART_SEPARATOR = "\n\n"
INDEX_HEADER = "=== CONTEXT INDEX ==="
CONTENT_HEADER = "=== CONTENT ==="
TASK_HEADER = "=== TASK ==="
OMITTED_MARKER = "[omitted]"
TRUNCATED_MARKER = "[truncated]"
NO_CONTENT_NOTE = "(No source content fits the token budget; the index above lists every source and its anchors.)"

_SPAN_NUMBER_RE = re.compile(r"^S([0-9]+)$")


def cite_instruction(example_anchor: str) -> str:
    return (
        "When referencing content from these sources, cite using the anchor format, "
        f'e.g. "According to {example_anchor}, ...".'
    )


def _ranges(numbers: Iterable[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return ranges


def _compact(numbers: Iterable[int], prefix: str = "") -> str:
    return ", ".join(f"{prefix}{a}" if a == b else f"{prefix}{a}-{prefix}{b}" for a, b in _ranges(numbers))


def render_index(index: ContextIndex, attached: Collection[str] = ()) -> str:
    """The index; `attached` names the sources whose binaries the request carries."""
    lines = [INDEX_HEADER]
    for number, entry in enumerate(index.entries, start=1):
        fields = [f"[{number}] {entry.source_id}", entry.kind, json.dumps(entry.title, ensure_ascii=False)]
        span_numbers = [int(m.group(1)) for s in entry.spans if (m := _SPAN_NUMBER_RE.match(s))]
        if span_numbers:
            fields.append("spans " + _compact(span_numbers, "S"))
        if entry.pages:
            fields.append("pages " + _compact(entry.pages))
        if entry.messages:
            fields.append(f"messages 0-{entry.messages - 1}")
        if entry.source_id in attached:
            fields.append("attached")
        lines.append(" | ".join(fields))
    if index.entries:
        first = index.entries[0]
        example = f"{first.source_id}#s={first.spans[0]}" if first.spans else first.source_id
        lines.append(cite_instruction(example))
    return "\n".join(lines)


def render_chunk(chunk: Chunk, source: Source | None) -> str:
    if chunk.omitted:
        return f"[CHUNK]\nanchor: {chunk.anchor}\n---\n{OMITTED_MARKER}\n[/CHUNK]"
    header = [f"anchor: {chunk.anchor}"]
    if source is not None:
        header.append(f"source_type: {source.kind}")
        header.append(f"title: {source.title}")
    if chunk.locator:
        header.append(f"locator: {chunk.locator}")
    body = chunk.text + (f"\n{TRUNCATED_MARKER}" if chunk.truncated else "")
    return "[CHUNK]\n" + "\n".join(header) + "\n---\n" + body + "\n[/CHUNK]"


def attached_source_ids(envelope: ContextEnvelope) -> frozenset[str]:
    return frozenset(a.source_id for a in envelope.attachments if a.included)


def render_head(envelope: ContextEnvelope, attached: Collection[str] | None = None) -> str:
    if attached is None:
        attached = attached_source_ids(envelope)
    return render_index(envelope.index, attached) + PART_SEPARATOR + CONTENT_HEADER


def render_task(task: str) -> str:
    return f"{TASK_HEADER}\n{task}"


def render_parts(envelope: ContextEnvelope) -> list[str]:
    sources = {s.id: s for s in envelope.sources}
    blocks = [render_chunk(c, sources.get(c.source_id)) for c in envelope.chunks] or [NO_CONTENT_NOTE]
    return [render_head(envelope), *blocks, render_task(envelope.task)]


def render_text(envelope: ContextEnvelope) -> str:
    return PART_SEPARATOR.join(render_parts(envelope))
