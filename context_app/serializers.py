"""The JSON shapes of SPEC §2.6 (ContextFile fields of seed 000 §3.2), shared by API and websocket."""

import uuid

from django.urls import reverse

from .file_errors import error_json
from .models import ContextFile, ContextSet, DigestStatus

URL_NAMES = {
    "preview_url": "context-file-preview",
    "download_url": "context-file-download",
    "digest_url": "context-file-digest",
}
_FILE_ID = uuid.UUID(int=0)


def file_urls(file: ContextFile, session_id, templates: dict[str, str] | None = None) -> dict:
    if templates is not None:
        return {key: template.replace(str(_FILE_ID), str(file.id)) for key, template in templates.items()}
    kwargs = {"sid": session_id, "fid": file.id}
    return {key: reverse(name, kwargs=kwargs) for key, name in URL_NAMES.items()}


def url_templates(session_id) -> dict[str, str]:
    """The session's file URLs with a placeholder id: a manifest of 1,000 files reverses 3 URLs, not 3,000."""
    kwargs = {"sid": session_id, "fid": _FILE_ID}
    return {key: reverse(name, kwargs=kwargs) for key, name in URL_NAMES.items()}


QUEUED_IN_BATCH = "queued in batch"


def digest_detail(file: ContextFile) -> str:
    """What the status alone does not say: a file parsing in a provider batch (batch_ingest) waits for it."""
    return QUEUED_IN_BATCH if file.digest_status == DigestStatus.PARSING and file.llm_batch_id else ""


def serialize_file(file: ContextFile, session_id, templates: dict[str, str] | None = None) -> dict:
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
        "digest_detail": digest_detail(file),
        "digest_hash": file.digest_hash,
        "digest_ref": str(file.digest_id) if file.digest_id else None,
        "last_change": file.last_change,
        "requeued_because": file.requeued_because,
        "error": error_json(file.error),
        # While the worker reads it: "OCR page 12/80"; once read: what the reading has to say.
        "extraction_progress": file.extraction_progress,
        "notes": file.extraction_notes or [],
        # Search by meaning: the file's windows, and how many have their vector (context_app.meaning).
        "meaning_windows": file.meaning_windows,
        "meaning_embedded": file.meaning_embedded,
        **file_urls(file, session_id, templates),
    }


def serialize_manifest(context_set: ContextSet, files: list[ContextFile], manifest_seq: int) -> dict:
    session_id = context_set.session_id
    templates = url_templates(session_id)
    return {
        "context_set_id": str(context_set.id),
        "session_id": str(session_id),
        "revision": context_set.revision,
        "manifest_seq": manifest_seq,
        "updated_at": context_set.updated_at.isoformat(),
        "auto_parse": context_set.auto_parse,
        "batch_ingest": context_set.batch_ingest,
        "parse_requested": context_set.parse_requested,
        "aggregate_digest_status": context_set.aggregate_digest_status,
        "aggregate_digest_ref": (str(context_set.aggregate_digest_id) if context_set.aggregate_digest_id else None),
        "aggregate_revision": context_set.aggregate_revision,
        "aggregate_error": context_set.aggregate_error,
        "last_diff": context_set.last_diff,
        "files": [serialize_file(f, session_id, templates) for f in files],
    }
