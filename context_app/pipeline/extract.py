"""A file's bytes → its text, spans and text version, in a child process under the extraction limits."""

import logging

from django.db import transaction

from digests.generate import prompt_version
from extraction import CHUNKING_VERSION, ExtractedDocument, ExtractionError, ExtractionLimits, reader_version
from extraction.isolation import extract_in_child
from workspaces import leases
from workspaces.claims import move

from .. import digest_cache, library, provenance
from ..digest_cache import file_cache_key
from ..models import FILE_JOB, ContextFile, DigestStatus, FileText
from ..notify import notify_context_changed_soon
from . import jobs
from .aggregate_state import lock_set, refresh_aggregate_state
from .dispatch import after_extraction

logger = logging.getLogger(__name__)


def mark_extraction_failed(file: ContextFile, exc: ExtractionError) -> None:
    move(file, "digest_status", DigestStatus.ERROR)
    file.error = {"code": exc.code, "message": exc.message, "stage": "extraction"}
    file.extraction_progress = ""
    file.extraction_notes = []
    if file.pk:
        library.forget_file(file.pk)
        provenance.supersede_current(file.pk)
    file.extracted_text_hash = ""
    file.digest = None
    file.digest_hash = ""
    file.parsing_started_at = None


def apply_extraction(file: ContextFile, document: ExtractedDocument) -> FileText:
    """Record text, spans and hashes; reuse a cached digest when one matches (no model call).

    Returns the file's current text version; the caller indexes it after commit (library.index_file).
    """
    same_text = file.extracted_text_hash == document.extracted_text_hash and file.digest_id
    file.format = document.format
    file.mime_type = document.mime_type
    file.extracted_text_hash = document.extracted_text_hash
    file.chunking_version = CHUNKING_VERSION
    file.reader_version = reader_version(document.format)
    file.spans_hash = document.spans_hash
    file.page_count = document.page_count
    file.parsing_started_at = None
    file.error = None
    file.extraction_progress = ""
    file.extraction_notes = list(document.notes)
    if not file.pk or file._state.adding:
        file.save()
    version = provenance.record_version(
        file,
        text=document.text,
        spans=[s.as_dict() for s in document.spans],
        text_hash=document.extracted_text_hash,
        spans_hash=document.spans_hash,
    )
    if same_text and file.prompt_version == prompt_version():
        file.requeued_because = ""
        move(file, "digest_status", DigestStatus.READY)
        return version
    attach_cached_digest_or_mark_stale(file)
    return version


def attach_cached_digest_or_mark_stale(file: ContextFile) -> None:
    cached = digest_cache.cached_file_digest(file, file_cache_key(file))
    if cached is None:
        move(file, "digest_status", DigestStatus.STALE)
        file.digest = None
        file.digest_hash = ""
        return
    file.digest = cached
    file.digest_hash = cached.digest_hash
    file.prompt_version = cached.prompt_version
    file.requeued_because = ""
    move(file, "digest_status", DigestStatus.READY)


def read_blob(file: ContextFile) -> bytes:
    """The stored bytes. A missing object or a storage failure (a local file, an S3 object:
    FileNotFoundError, a botocore error) is the file's error, not the caller's crash."""
    try:
        with file.blob.open("rb") as handle:
            return handle.read()
    except Exception as exc:  # noqa: BLE001 - storage backends raise their own kinds
        logger.warning("stored file %s (%s) could not be read: %r", file.pk, file.blob.name, exc)
        reason = "the stored file is missing" if isinstance(exc, FileNotFoundError) else type(exc).__name__
        raise ExtractionError("storage", f"stored file could not be read: {reason}") from exc


def extract_file(file_id, content_hash: str) -> None:
    """Worker-side extraction of an uploaded file, under the file's job lease; dropped if the file
    was replaced meanwhile.

    The bytes are extracted in a child process under the wall-clock and memory limits
    (isolation.py) with no transaction open; the result is written in one short
    transaction, then indexed in short ones of its own (library.index_file).
    """
    with leases.holding(FILE_JOB, file_id, content_hash=content_hash, extracted_text_hash="") as held:
        if held:
            _extract_held_file(file_id, content_hash)


def _show_progress(file: ContextFile):
    """The file's chip says how a long read goes ("OCR page 12/80"), pushed at the paced rate."""

    def show(label: str) -> None:
        try:
            shown = ContextFile.objects.filter(
                leases.held_by_me(FILE_JOB), pk=file.pk, content_hash=file.content_hash
            ).update(extraction_progress=label[:64])
            if shown:
                notify_context_changed_soon(file.context_set_id)
        except Exception:  # noqa: BLE001 - a chip that misses a page never stops the reading
            logger.warning("progress of %s not shown: %s", file.pk, label, exc_info=True)

    return show


def _extract_held_file(file_id, content_hash: str) -> None:
    file = ContextFile.objects.select_related("context_set").filter(pk=file_id).first()
    if file is None or file.content_hash != content_hash or file.is_extracted:
        return
    try:
        document = extract_in_child(
            read_blob(file), file.filename, file.mime_type, ExtractionLimits.from_settings(), _show_progress(file)
        )
    except ExtractionError as exc:
        document, failure = None, exc
    version = None
    with transaction.atomic():
        context_set = lock_set(file.context_set_id)
        if context_set is None:
            return  # its session was deleted meanwhile, and the file with it
        current = (
            ContextFile.objects.select_for_update()
            .select_related("context_set")
            .filter(leases.held_by_me(FILE_JOB), pk=file_id)
            .first()
        )
        if current is None or current.content_hash != content_hash or current.is_extracted:
            return  # replaced, or its lease lost to another worker: that one writes
        if document is None:
            mark_extraction_failed(current, failure)
        else:
            version = apply_extraction(current, document)
        current.save()
        refresh_aggregate_state(context_set)
    if version is not None:
        library.index_file(current, version)
        jobs.enqueue_embedding(current.pk)
    after_extraction(current.context_set_id)
