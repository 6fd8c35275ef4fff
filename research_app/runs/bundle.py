"""The run's ContextBundle and the context items nodes work with (seed 001 §3.2, §4.1).

Context items are a digest's facts and uncertainties (digests.items).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from context_app import provenance
from context_app.models import ContextSet, DigestStatus
from context_app.selectors import files_of
from digests.items import item_line
from llm_platform.ir import build_envelope, fit_to_budget, sources_from_spans
from llm_platform.terms import analyze


def context_bundle(context_set: ContextSet) -> dict:
    """What the run binds to: the set's revision, its files with their digests' summaries, the aggregate.

    `source_versions` ({filename: FileText version}) pins the aggregate's SourceRefs to the
    exact texts they were written from; the report's paragraphs cite through it.
    """
    versions = provenance.current_versions(context_set.pk)
    aggregate = None
    if context_set.aggregate_digest_status == DigestStatus.READY and context_set.aggregate_digest_id:
        aggregate = context_set.aggregate_digest.content
    files = []
    for file in files_of(context_set):
        ready = file.digest_status == DigestStatus.READY and file.digest is not None
        files.append(
            {
                "file_id": str(file.id),
                "filename": file.filename,
                "format": file.format,
                "digest_status": file.digest_status,
                "digest_ref": str(file.digest_id) if file.digest_id else None,
                "version": versions.get(file.filename),
                "summary": file.digest.content.get("summary", "") if ready else "",
                "error": file.error,
            }
        )
    return {
        "session_context_id": str(context_set.id),
        "revision": context_set.revision,
        "files": files,
        "aggregate_digest": aggregate,
        "source_versions": {**versions, **(context_set.aggregate_versions or {})},
    }


def processing_summary(bundle: dict, status: str) -> dict:
    """`context_processing` of seed 001 §9.1."""
    files = bundle["files"]
    return {
        "status": status,
        "files_total": len(files),
        "files_ready": sum(1 for f in files if f["digest_status"] == DigestStatus.READY),
        "files_error": sum(1 for f in files if f["digest_status"] == DigestStatus.ERROR),
    }


def compact_items(items: Sequence[dict], question: str, limit_tokens: int | None = None) -> tuple[list[dict], int]:
    """Items that fit the node budget, through the IR degrade ladder; and how many were cut.

    Items are ranked by the stems they share with the question, so the ladder
    drops the least relevant first; the kept ones stay in the digest's order.
    """
    if not items:
        return [], 0
    limit = settings.GROUNDWORK_NODE_CONTEXT_TOKENS if limit_tokens is None else limit_tokens
    wanted = set(analyze(question))
    spans = [{"span_id": f"S{n}", "text": item_line(item)} for n, item in enumerate(items, start=1)]
    scores = {
        span["span_id"]: len(wanted & set(analyze(item["text"]))) for span, item in zip(spans, items, strict=True)
    }
    source = sources_from_spans("user context", "note", spans, title="User context", scores=scores)
    fitted = fit_to_budget(build_envelope("context items", [source]), limit)
    whole = {chunk.anchor for chunk in fitted.chunks if not (chunk.omitted or chunk.truncated or chunk.summarized)}
    kept = [item for chunk, item in zip(source.chunks, items, strict=True) if chunk.anchor in whole]
    return kept, len(items) - len(kept)
