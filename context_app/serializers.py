"""The JSON shapes of SPEC §2.6 (ContextFile fields of seed 000 §3.2), shared by API and websocket."""

from django.urls import reverse

from .models import ContextFile, ContextSet


def file_urls(file: ContextFile, session_id) -> dict:
    kwargs = {"sid": session_id, "fid": file.id}
    return {
        "preview_url": reverse("context-file-preview", kwargs=kwargs),
        "download_url": reverse("context-file-download", kwargs=kwargs),
        "digest_url": reverse("context-file-digest", kwargs=kwargs),
    }


def serialize_file(file: ContextFile, session_id) -> dict:
    return {
        "file_id": str(file.id),
        "filename": file.filename,
        "mime_type": file.mime_type,
        "format": file.format,
        "size_bytes": file.size_bytes,
        "uploaded_at": file.uploaded_at.isoformat(),
        "updated_at": file.updated_at.isoformat(),
        "content_hash": file.content_hash,
        "extracted_text_hash": file.extracted_text_hash,
        "chunking_version": file.chunking_version,
        "spans_hash": file.spans_hash,
        "page_count": file.page_count,
        "prompt_version": file.prompt_version,
        "digest_status": file.digest_status,
        "digest_hash": file.digest_hash,
        "digest_ref": str(file.digest_id) if file.digest_id else None,
        "last_change": file.last_change,
        "error": file.error,
        **file_urls(file, session_id),
    }


def serialize_manifest(context_set: ContextSet, files: list[ContextFile]) -> dict:
    session_id = context_set.session_id
    return {
        "context_set_id": str(context_set.id),
        "session_id": str(session_id),
        "revision": context_set.revision,
        "updated_at": context_set.updated_at.isoformat(),
        "auto_parse": context_set.auto_parse,
        "parse_requested": context_set.parse_requested,
        "aggregate_digest_status": context_set.aggregate_digest_status,
        "aggregate_digest_ref": (str(context_set.aggregate_digest_id) if context_set.aggregate_digest_id else None),
        "aggregate_revision": context_set.aggregate_revision,
        "aggregate_error": context_set.aggregate_error,
        "last_diff": context_set.last_diff,
        "files": [serialize_file(f, session_id) for f in files],
    }
