"""Task A for one claimed file: from the digest cache, or a model call (one task per file, in parallel)."""

import logging
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from digests.generate import GeneratedDigest, generate_file_digest
from llm_platform import limiter
from llm_platform.gateway import SpendingCapReached
from llm_platform.model_task import TaskFailed
from workspaces import leases
from workspaces.claims import claim

from .. import digest_cache, signals
from ..digest_cache import file_cache_key
from ..models import FILE_JOB, ContextFile, DigestStatus, FileText, StoredDigest
from ..notify import notify_context_changed_soon
from .aggregate import prebuild_first_level
from .aggregate_state import lock_set, refresh_aggregate_state
from .dispatch import schedule_aggregate_if_due

logger = logging.getLogger(__name__)


@limiter.bulk()  # an ingest: its model calls yield to interactive ones (chat, research steps)
def digest_file(file_id, extracted_text_hash: str) -> None:
    """Task A for one claimed file, unless the cache already holds its digest."""
    with leases.holding(FILE_JOB, file_id, extracted_text_hash=extracted_text_hash) as held:
        if held:
            _digest_held_file(file_id, extracted_text_hash)
            return
    file = ContextFile.objects.filter(pk=file_id).only("context_set_id", "digest_status").first()
    if file is not None and file.digest_status == DigestStatus.PARSING:
        logger.info("dropping digest job for file %s: another worker holds it, or its text changed", file_id)
    elif file is not None:  # a retried job whose write went through: the aggregate may be due
        logger.info("dropping stale digest job for file %s", file_id)
        schedule_aggregate_if_due(file.context_set_id)


def _digest_held_file(file_id, extracted_text_hash: str) -> None:
    file = ContextFile.objects.select_related("context_set").get(pk=file_id)
    text = FileText.objects.current().filter(file=file, extracted_text_hash=extracted_text_hash).first()
    if text is None:
        logger.info("dropping digest job for file %s: its text changed", file_id)
        return
    stored = digest_cache.cached_file_digest(file, file_cache_key(file))
    error = None
    if stored is None:
        stored, error = store_file_digest(
            file,
            lambda: generate_file_digest(
                filename=file.filename,
                format=file.format,
                spans=text.spans,
                subject=f"file:{file.id}",
                session_id=file.context_set.session_id,
            ),
        )
    finish_file_digest(file, extracted_text_hash, stored, error)


def store_file_digest(
    file: ContextFile, generate: Callable[[], GeneratedDigest]
) -> tuple[StoredDigest | None, dict | None]:
    """Task A's digest (`generate` makes it) in the digest cache; or the file's error when there is none."""
    try:
        generated = generate()
    except TaskFailed as exc:
        # The session's spending cap stopped the call before it was made: say so, not "failed".
        code = "spending_cap" if isinstance(exc.__cause__, SpendingCapReached) else "digest_failed"
        return None, {"code": code, "message": exc.reason, "stage": "digest"}
    stored = digest_cache.store_digest(
        scope=file.context_set.cache_scope,
        cache_key=file_cache_key(file),
        kind=StoredDigest.Kind.FILE,
        generated=generated,
        filename=file.filename,
    )
    return stored, None


def finish_file_digest(
    file: ContextFile, extracted_text_hash: str, stored: StoredDigest | None, error: dict | None
) -> None:
    """Write Task A's outcome to the file (if it is still the one parsed), then what follows a digest."""
    written = _write_file_digest(file, extracted_text_hash, stored, error)
    after_file_digest(file.context_set_id, file.pk)
    if written and stored is not None:
        prebuild_first_level(file)


def _write_file_digest(
    file: ContextFile, extracted_text_hash: str, stored: StoredDigest | None, error: dict | None
) -> bool:
    now = timezone.now()
    with transaction.atomic():
        context_set = lock_set(file.context_set_id)
        if context_set is None:
            return False  # its session was deleted meanwhile, and the file with it
        if stored is not None:
            outcome = {
                "to": DigestStatus.READY,
                "digest": stored,
                "digest_hash": stored.digest_hash,
                "prompt_version": stored.prompt_version,
                "error": None,
            }
        else:
            outcome = {"to": DigestStatus.ERROR, "error": error}
        written = claim(
            ContextFile.objects.filter(
                leases.held_by_me(FILE_JOB), pk=file.pk, extracted_text_hash=extracted_text_hash
            ),
            field="digest_status",
            from_=DigestStatus.PARSING,
            parsing_started_at=None,
            updated_at=now,
            requeued_because="",
            **outcome,
        )
        if not written:
            logger.info("dropped digest of %s: the file changed, or its job lost its lease, meanwhile", file.pk)
            return False
        refresh_aggregate_state(context_set)
        return True


def after_file_digest(context_set_id, file_id=None) -> None:
    notify_context_changed_soon(context_set_id)
    file = ContextFile.objects.filter(pk=file_id).only("filename", "digest_status").first() if file_id else None
    if file is not None:
        signals.file_digest_finished.send(
            sender=ContextFile,
            context_set_id=context_set_id,
            file_id=file_id,
            filename=file.filename,
            digest_status=file.digest_status,
        )
    schedule_aggregate_if_due(context_set_id)
