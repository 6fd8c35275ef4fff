"""Parsing: extraction in the worker, Task A per file, Task B per set (SPEC §2.3–2.5).

Every step is safe to run twice and writes only if the state it started from is
still current (the file's text hash, the set's aggregate inputs): a stale job's
result is dropped, never shown. Celery tasks in tasks.py only call these.
"""

import contextvars
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import redis
from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone
from redis.exceptions import LockError

from llm_platform import limiter
from llm_platform.gateway import SpendingCapReached
from llm_platform.model_task import TaskFailed
from llm_platform.models import LLMBatch
from workspaces import shared_redis

from . import digest_cache, leases, library, provenance, signals
from .claims import claim
from .digests.generate import GeneratedDigest, generate_aggregate_digest, generate_file_digest, prompt_version
from .extraction import (
    CHUNKING_VERSION,
    ExtractedDocument,
    ExtractionError,
    ExtractionLimits,
    sha256_hex,
)
from .isolation import extract_in_child
from .models import ContextFile, ContextSet, DigestCacheEntry, DigestStatus, FileText, StoredDigest
from .notify import notify_context_changed, notify_context_changed_soon

logger = logging.getLogger(__name__)

__all__ = ["CHUNKING_VERSION"]

AGGREGATE_THREADS = 8  # Task B nodes of one level built at once when the provider has no in-flight limit
NODE_WAIT_POLL_SECONDS = 0.2  # how often a worker waiting for another's Task B node looks for it


# --- scheduling --------------------------------------------------------------


def enqueue_parse(context_set_id, *, requeue_unheld: bool = False) -> None:
    """Parse the set; `requeue_unheld` (Parse now): also re-queue the jobs no worker holds yet."""
    from .tasks import parse_context_set

    if requeue_unheld:
        parse_context_set.delay(str(context_set_id), requeue_unheld=True)
    else:
        parse_context_set.delay(str(context_set_id))


def enqueue_extraction(file_id, content_hash: str) -> None:
    from .tasks import extract_file

    extract_file.delay(str(file_id), content_hash)


def after_change(context_set_id) -> None:
    """After a committed mutation: tell the watchers, and parse if the set wants it."""
    notify_context_changed(context_set_id)
    context_set = ContextSet.objects.filter(pk=context_set_id).first()
    if context_set and (context_set.auto_parse or context_set.parse_requested):
        enqueue_parse(context_set_id)


def parsing_wanted(context_set: ContextSet) -> bool:
    return context_set.auto_parse or context_set.parse_requested


def dispatch_parse(context_set_id, requeue_unheld: bool = False) -> None:
    """Claim every stale file for Task A (one task each, in parallel); aggregate when none is left."""
    recover_unheld_jobs(context_set_id, queued=requeue_unheld)
    if not ContextSet.objects.filter(pk=context_set_id).exists():
        return
    restale_outdated_digests(context_set_id)
    from .batch_ingest import submit_if_due, waits_for_extraction
    from .tasks import digest_file

    if waits_for_extraction(context_set_id):
        return  # the batch takes the whole parse: the last extraction's after_change dispatches again
    # Claim all before enqueuing any: a fast worker must not aggregate a half-claimed set.
    claimed = _claim_stale_files(context_set_id)
    claimed = submit_if_due(context_set_id, claimed)  # a large parse's Task A may go as one batch

    for file_id, text_hash in claimed:
        digest_file.delay(str(file_id), text_hash)
    notify_context_changed(context_set_id)
    schedule_aggregate_if_due(context_set_id)


def restale_outdated_digests(context_set_id) -> int:
    """Ready files whose digest was made under another prompt version or model go back to stale.

    Seed 000 §6.2: a prompt change re-runs Task A. A file's digest is current when
    the cache holds an entry under the file's key as of now (text hash, chunking,
    prompt version, provider:model); one query checks the whole set.
    """
    context_set = ContextSet.objects.filter(pk=context_set_id).only("cache_scope").first()
    ready = ContextFile.objects.filter(context_set_id=context_set_id, digest_status=DigestStatus.READY)
    keys = {file.pk: file_cache_key(file) for file in ready.only("extracted_text_hash")}
    current = set(
        DigestCacheEntry.objects.filter(scope=context_set.cache_scope, cache_key__in=keys.values()).values_list(
            "cache_key", flat=True
        )
    )
    outdated = [pk for pk, key in keys.items() if key not in current]
    if not outdated:
        return 0
    with transaction.atomic():
        locked = ContextSet.objects.select_for_update().get(pk=context_set_id)
        count = ContextFile.objects.filter(pk__in=outdated, digest_status=DigestStatus.READY).update(
            digest_status=DigestStatus.STALE,
            digest=None,
            digest_hash="",
            updated_at=timezone.now(),
            requeued_because="its digest was made under another prompt or model",
        )
        refresh_aggregate_state(locked)
    logger.info("%s digests of %s were made under another prompt or model: stale again", count, context_set_id)
    return count


def _stale_extracted(context_set_id):
    return ContextFile.objects.filter(context_set_id=context_set_id, digest_status=DigestStatus.STALE).exclude(
        extracted_text_hash=""
    )


def _claim_stale_files(context_set_id) -> list[tuple]:
    """Every stale extracted file of the set → parsing, in one transaction (one statement, not one a file).

    The rows are locked as they are read, so the text hash returned for each is the
    one it was claimed with; a file another dispatch claimed first is not stale any more.
    """
    now = timezone.now()
    with transaction.atomic():
        claimed = list(_stale_extracted(context_set_id).select_for_update().values_list("id", "extracted_text_hash"))
        if claimed:
            ContextFile.objects.filter(pk__in=[pk for pk, _hash in claimed], digest_status=DigestStatus.STALE).update(
                digest_status=DigestStatus.PARSING,
                parsing_started_at=now,
                updated_at=now,
                llm_batch=None,
                lease_owner="",  # queued: the job takes the lease when it starts
                lease_expires_at=None,
            )
    return claimed


def schedule_aggregate_if_due(context_set_id) -> None:
    """Once no file is parsing (or about to be), claim the stale aggregate and build it."""
    if ContextFile.objects.filter(context_set_id=context_set_id, digest_status=DigestStatus.PARSING).exists():
        return
    context_set = ContextSet.objects.filter(pk=context_set_id).first()
    if context_set is None:  # the session was deleted while its files were parsing
        return
    nothing_to_build = context_set.aggregate_digest_status == DigestStatus.ERROR and not (
        ContextFile.objects.filter(context_set_id=context_set_id, digest_status=DigestStatus.READY).exists()
    )
    if context_set.aggregate_digest_status == DigestStatus.READY or nothing_to_build:
        _settle(context_set_id)  # nothing_to_build: every file failed, the aggregate says so already
        return
    if not parsing_wanted(context_set) or _stale_extracted(context_set_id).exists():
        return  # a queued dispatch_parse claims those files first
    if claim(
        ContextSet.objects.filter(pk=context_set_id),
        field="aggregate_digest_status",
        from_=[DigestStatus.STALE, DigestStatus.ERROR],
        to=DigestStatus.PARSING,
        aggregate_lease_owner="",  # queued: the job takes the lease when it starts
        aggregate_lease_expires_at=None,
    ):
        from .tasks import build_aggregate

        notify_context_changed(context_set_id)
        build_aggregate.delay(str(context_set_id))


def _settle(context_set_id) -> None:
    """Parse now is done once no file and not the aggregate is stale or parsing.

    One UPDATE with the check in its WHERE clause: a check-then-write would clear
    the flag that a Retry or Parse now committed in between, or that a file
    finishing in another worker still needs for its aggregate.
    """
    busy_statuses = [DigestStatus.STALE, DigestStatus.PARSING]
    busy = ContextFile.objects.filter(context_set_id=context_set_id, digest_status__in=busy_statuses)
    claim(
        ContextSet.objects.filter(pk=context_set_id)
        .exclude(aggregate_digest_status__in=busy_statuses)
        .exclude(pk__in=busy.values("context_set_id")),
        field="parse_requested",
        from_=True,
        to=False,
    )
    settled = (
        ContextSet.objects.filter(pk=context_set_id)
        .exclude(aggregate_digest_status__in=busy_statuses)
        .exclude(pk__in=busy.values("context_set_id"))
        .values("session_id", "revision", "aggregate_digest_status")
        .first()
    )
    if settled is not None:
        signals.context_settled.send(sender=ContextSet, context_set_id=context_set_id, **settled)


def recover_unheld_jobs(context_set_id=None, *, queued: bool = False, worker_starting: bool = False) -> set:
    """Jobs left `parsing` that no live worker holds go back to the queue; returns the sets touched.

    Always those whose lease expired (its process died or stopped renewing it); when a
    worker starts, also those its previous instance held (dead, see leases.py); with
    `queued`, also those no worker has taken yet, whose message may have been lost with
    a dead worker's prefetch or a Redis restart (a duplicate message finds the lease
    taken and does nothing), once they were claimed more than a lease ago. The caller
    enqueues a parse of each set touched.
    """
    now = timezone.now()
    touched = set()
    for job in (leases.FILE_JOB, leases.AGGREGATE_JOB):
        unheld = Q(**{f"{job.owner}__gt": "", f"{job.expires}__lte": now})
        if worker_starting:
            unheld |= leases.held_by_predecessor(job)
        if queued:
            never_taken = Q(**{job.owner: ""})
            if job.claimed_at:
                # Not one claimed a moment ago: its message is on its way to a worker, and
                # re-queuing it let two deliveries make the same model call (seen on PostgreSQL).
                in_flight_since = now - timedelta(seconds=leases.lease_seconds())
                claimed = job.claimed_at
                never_taken &= Q(**{f"{claimed}__lt": in_flight_since}) | Q(**{f"{claimed}__isnull": True})
            unheld |= never_taken
        rows = job.model.objects.filter(unheld, **{job.status: DigestStatus.PARSING})
        if job is leases.FILE_JOB:
            # Queued in a provider batch: no worker holds it, the batch answers within 24 h (batch_ingest).
            rows = rows.exclude(llm_batch__status=LLMBatch.Status.SUBMITTED)
        if context_set_id is not None:
            rows = rows.filter(**{"context_set_id" if job is leases.FILE_JOB else "pk": context_set_id})
        file_columns = ["context_set_id", "content_hash", "extracted_text_hash"] if job is leases.FILE_JOB else []
        for row in rows.values("pk", job.owner, job.expires, *file_columns):
            # Conditional on the lease as read: a job that took it meanwhile keeps it.
            lease_as_read = {job.owner: row[job.owner], job.expires: row[job.expires]}
            as_read = job.model.objects.filter(pk=row["pk"], **lease_as_read)
            back = {"field": job.status, "from_": DigestStatus.PARSING}
            if job is leases.AGGREGATE_JOB:
                # Re-claimed by schedule_aggregate_if_due once no file is parsing; it was wanted.
                if claim(as_read, **back, to=DigestStatus.STALE, parse_requested=True):
                    touched.add(row["pk"])
            elif row["extracted_text_hash"]:
                stopped = "the worker parsing it stopped"
                if claim(as_read, **back, to=DigestStatus.STALE, parsing_started_at=None, requeued_because=stopped):
                    touched.add(row["context_set_id"])
            elif claim(as_read, **back, to=DigestStatus.PARSING, lease_owner="", lease_expires_at=None):
                enqueue_extraction(row["pk"], row["content_hash"])  # not extracted yet: extraction again
                touched.add(row["context_set_id"])
    if touched:
        logger.warning("re-queued jobs no worker held in %d context set(s)", len(touched))
    return touched


def recover_and_requeue(*, queued: bool = False, worker_starting: bool = False) -> set:
    """recover_unheld_jobs over every set, and a parse of each set touched."""
    touched = recover_unheld_jobs(queued=queued, worker_starting=worker_starting)
    for context_set_id in touched:
        enqueue_parse(context_set_id)
    return touched


def sweep_expired_leases_forever(every_seconds: float) -> None:
    """A worker's background loop: jobs whose lease expired (a worker died and did not come back) re-queued."""
    while True:
        time.sleep(every_seconds)
        try:
            recover_and_requeue()
        except Exception:  # noqa: BLE001 - the next sweep tries again
            logger.warning("lease sweep failed", exc_info=True)
        finally:
            connections.close_all()


# --- a job that raised -----------------------------------------------------------


def job_failure(exc: BaseException) -> str:
    return f"the job failed ({type(exc).__name__}: {exc})"[:500]


def fail_file_job(file_id, exc: BaseException, **conditions) -> None:
    """A file's job (extraction or Task A) that raised, after its retries: the file ends `error`, saying why.

    Should this write fail too (the database still locked), the job's lease, renewed no
    more, expires and recovery re-queues the job: the file never stays `parsing`.
    """
    stage = "digest" if conditions.get("extracted_text_hash") else "extraction"
    with leases.holding(leases.FILE_JOB, file_id, **conditions) as held:
        if not held:  # done meanwhile, or another worker holds it again
            return
        with transaction.atomic():
            file = ContextFile.objects.get(pk=file_id)
            claim(
                ContextFile.objects.filter(leases.held_by_me(leases.FILE_JOB), pk=file_id, **conditions),
                field="digest_status",
                from_=DigestStatus.PARSING,
                to=DigestStatus.ERROR,
                error={"code": "job_failed", "message": job_failure(exc), "stage": stage},
                parsing_started_at=None,
                updated_at=timezone.now(),
            )
            refresh_aggregate_state(ContextSet.objects.select_for_update().get(pk=file.context_set_id))
    logger.warning("file %s ends in error: %s", file_id, job_failure(exc))
    after_file_digest(file.context_set_id, file_id)


def fail_aggregate_job(context_set_id, exc: BaseException) -> None:
    """A Task B job that raised, after its retries: the aggregate ends `error` (Parse now retries it)."""
    with leases.holding(leases.AGGREGATE_JOB, context_set_id) as held:
        if not held:
            return
        claim(
            ContextSet.objects.filter(leases.held_by_me(leases.AGGREGATE_JOB), pk=context_set_id),
            field="aggregate_digest_status",
            from_=DigestStatus.PARSING,
            to=DigestStatus.ERROR,
            aggregate_error={"message": job_failure(exc)},
        )
    logger.warning("aggregate of %s ends in error: %s", context_set_id, job_failure(exc))
    notify_context_changed(context_set_id)
    _settle(context_set_id)


# --- extraction --------------------------------------------------------------


def mark_extraction_failed(file: ContextFile, exc: ExtractionError) -> None:
    file.digest_status = DigestStatus.ERROR
    file.error = {"code": exc.code, "message": exc.message, "stage": "extraction"}
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
    file.spans_hash = document.spans_hash
    file.page_count = document.page_count
    file.parsing_started_at = None
    file.error = None
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
        file.digest_status = DigestStatus.READY
        return version
    attach_cached_digest_or_mark_stale(file)
    return version


def file_cache_key(file: ContextFile) -> str:
    return digest_cache.digest_cache_key(file.extracted_text_hash, CHUNKING_VERSION, prompt_version())


def attach_cached_digest_or_mark_stale(file: ContextFile) -> None:
    cached = digest_cache.cached_file_digest(file, file_cache_key(file))
    if cached is None:
        file.digest_status = DigestStatus.STALE
        file.digest = None
        file.digest_hash = ""
        return
    file.digest = cached
    file.digest_hash = cached.digest_hash
    file.prompt_version = cached.prompt_version
    file.digest_status = DigestStatus.READY


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
    with leases.holding(leases.FILE_JOB, file_id, content_hash=content_hash, extracted_text_hash="") as held:
        if held:
            _extract_held_file(file_id, content_hash)


def _extract_held_file(file_id, content_hash: str) -> None:
    file = ContextFile.objects.select_related("context_set").filter(pk=file_id).first()
    if file is None or file.content_hash != content_hash or file.is_extracted:
        return
    try:
        document = extract_in_child(read_blob(file), file.filename, file.mime_type, ExtractionLimits.from_settings())
    except ExtractionError as exc:
        document, failure = None, exc
    version = None
    with transaction.atomic():
        current = (
            ContextFile.objects.select_for_update()
            .select_related("context_set")
            .filter(leases.held_by_me(leases.FILE_JOB), pk=file_id)
            .first()
        )
        if current is None or current.content_hash != content_hash or current.is_extracted:
            return  # replaced, or its lease lost to another worker: that one writes
        if document is None:
            mark_extraction_failed(current, failure)
        else:
            version = apply_extraction(current, document)
        current.save()
        refresh_aggregate_state(ContextSet.objects.select_for_update().get(pk=current.context_set_id))
    if version is not None:
        library.index_file(current, version)
    after_change(current.context_set_id)


# --- Task A ------------------------------------------------------------------


@limiter.bulk()  # an ingest: its model calls yield to interactive ones (chat, research steps)
def digest_file(file_id, extracted_text_hash: str) -> None:
    """Task A for one claimed file, unless the cache already holds its digest."""
    with leases.holding(leases.FILE_JOB, file_id, extracted_text_hash=extracted_text_hash) as held:
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
                leases.held_by_me(leases.FILE_JOB), pk=file.pk, extracted_text_hash=extracted_text_hash
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
        refresh_aggregate_state(ContextSet.objects.select_for_update().get(pk=file.context_set_id))
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


# --- Task B ------------------------------------------------------------------


def aggregate_inputs(context_set: ContextSet) -> list[ContextFile]:
    return list(
        context_set.files.filter(digest_status=DigestStatus.READY, digest__isnull=False)
        .select_related("digest")
        .order_by("filename")
    )


def aggregate_inputs_hash(files: list[ContextFile]) -> str:
    return _inputs_hash([(f.filename, f.format, f.digest_hash) for f in files])


def current_inputs_hash(context_set: ContextSet) -> str:
    """aggregate_inputs_hash of the set as it is now, without loading a digest (three columns a file)."""
    ready = context_set.files.filter(digest_status=DigestStatus.READY, digest__isnull=False).order_by("filename")
    return _inputs_hash(ready.values_list("filename", "format", "digest_hash"))


def _inputs_hash(inputs) -> str:
    rows = [list(row) for row in inputs]
    return sha256_hex(json.dumps([prompt_version(), rows], separators=(",", ":")))


def refresh_aggregate_state(context_set: ContextSet) -> None:
    """Decide, inside the mutation's transaction, whether the aggregate still matches the files.

    Runs after every change: if the ready files and their digests are what the
    current aggregate was built from, it simply becomes current for the new
    revision (no Task B); otherwise it is stale until rebuilt.
    """
    statuses = set(context_set.files.order_by().values_list("digest_status", flat=True).distinct())
    fields = [
        "aggregate_digest_status",
        "aggregate_revision",
        "aggregate_digest",
        "aggregate_inputs_hash",
        "aggregate_error",
        "aggregate_versions",
    ]
    if not statuses:
        context_set.aggregate_digest = None
        context_set.aggregate_versions = {}
        context_set.aggregate_inputs_hash = ""
        context_set.aggregate_digest_status = DigestStatus.READY
        context_set.aggregate_revision = context_set.revision
        context_set.aggregate_error = None
    elif statuses == {DigestStatus.ERROR}:
        context_set.aggregate_digest = None
        context_set.aggregate_versions = {}
        context_set.aggregate_inputs_hash = ""
        context_set.aggregate_digest_status = DigestStatus.ERROR
        context_set.aggregate_error = {"message": "no usable context: every file failed to parse"}
    else:
        # Runs in the write transaction of every file's digest: the inputs hash is read
        # (three columns a file, no digest) only once no file is left to parse.
        settled = not statuses & {DigestStatus.STALE, DigestStatus.PARSING}
        if (
            settled
            and context_set.aggregate_digest_id is not None
            and context_set.aggregate_inputs_hash == current_inputs_hash(context_set)
        ):
            context_set.aggregate_digest_status = DigestStatus.READY
            context_set.aggregate_revision = context_set.revision
            context_set.aggregate_error = None
        elif context_set.aggregate_digest_status != DigestStatus.PARSING:
            context_set.aggregate_digest_status = DigestStatus.STALE
    context_set.save(update_fields=fields)


@limiter.bulk()
def build_aggregate(context_set_id) -> None:
    """Task B over the ready files' digests, as a tree of cached calls when the set is large."""
    with leases.holding(leases.AGGREGATE_JOB, context_set_id) as held:
        if held:  # else: not parsing any more, or another worker holds it
            _build_held_aggregate(context_set_id)


def _build_held_aggregate(context_set_id) -> None:
    context_set = ContextSet.objects.get(pk=context_set_id)
    files = aggregate_inputs(context_set)
    inputs_hash = aggregate_inputs_hash(files)
    stored, error = None, None
    if context_set.aggregate_digest_id and context_set.aggregate_inputs_hash == inputs_hash:
        stored = context_set.aggregate_digest
    elif files:
        try:
            stored = aggregate_tree(context_set, files)
        except TaskFailed as exc:
            error = {"message": exc.reason}
    status = _write_aggregate(context_set_id, inputs_hash, stored, error)
    if status is None:
        return
    notify_context_changed(context_set_id)
    if status == DigestStatus.STALE:
        schedule_aggregate_if_due(context_set_id)  # the files changed while it was built
    else:
        # A failed aggregate waits for the next Parse now, Retry or change: rebuilding
        # it from here would loop for as long as the cause (a model outage) lasts.
        _settle(context_set_id)


def _write_aggregate(
    context_set_id, inputs_hash: str, stored: StoredDigest | None, error: dict | None
) -> DigestStatus | None:
    """The built (or failed) aggregate, written if its job still holds the lease; None if not."""
    with transaction.atomic():
        context_set = ContextSet.objects.select_for_update().get(pk=context_set_id)
        if context_set.aggregate_digest_status != DigestStatus.PARSING or (
            context_set.aggregate_lease_owner != leases.owner(leases.AGGREGATE_JOB)
        ):
            logger.info("dropped aggregate of %s: its job lost its lease to another worker", context_set_id)
            return None
        if current_inputs_hash(context_set) != inputs_hash:
            logger.info("dropped aggregate of %s: files changed while it was built", context_set_id)
            context_set.aggregate_digest_status = DigestStatus.STALE
        elif stored is not None:
            context_set.aggregate_digest = stored
            context_set.aggregate_inputs_hash = inputs_hash
            context_set.aggregate_error = None
            context_set.aggregate_digest_status = DigestStatus.PARSING  # refresh decides ready vs stale
            # Its SourceRefs cite the texts of its inputs, as current now (the inputs hash was just checked).
            inputs = {f.filename for f in aggregate_inputs(context_set)}
            versions = provenance.current_versions(context_set_id)
            context_set.aggregate_versions = {name: version for name, version in versions.items() if name in inputs}
            context_set.save(
                update_fields=[
                    "aggregate_digest",
                    "aggregate_inputs_hash",
                    "aggregate_error",
                    "aggregate_digest_status",
                    "aggregate_versions",
                ]
            )
            refresh_aggregate_state(context_set)
            if context_set.aggregate_digest_status == DigestStatus.PARSING:
                context_set.aggregate_digest_status = DigestStatus.STALE
        else:
            context_set.aggregate_digest_status = DigestStatus.ERROR
            context_set.aggregate_error = error or {"message": "no usable context: every file failed to parse"}
        context_set.save(update_fields=["aggregate_digest_status", "aggregate_error"])
        return context_set.aggregate_digest_status


def aggregate_tree(context_set: ContextSet, files: list[ContextFile]) -> StoredDigest:
    """One Task B for up to FANOUT files; above that, buckets aggregated level by level.

    Bucket boundaries depend only on the entries' names (content-defined), so
    changing one file changes one bucket per level and every other node is a
    cache hit: O(log N) calls for one changed file. The nodes of a level that are
    not cached are built in parallel, each call under the provider's limits.
    """
    entries = [{"manifest": [{"filename": f.filename, "format": f.format}], "digest": f.digest} for f in files]
    fanout = max(2, settings.GROUNDWORK_AGGREGATE_FANOUT)
    while len(entries) > fanout:
        entries = _aggregate_level(context_set, _buckets(entries, fanout))
    return _aggregate_level(context_set, [entries])[0]["digest"]


def _buckets(entries: list[dict], fanout: int) -> list[list[dict]]:
    """Content-defined buckets of about `fanout` entries: each level of the tree is ~fanout times smaller.

    A bucket ends after an entry whose name hashes to 0 modulo `fanout` (probability
    1/fanout) once it holds fanout/2 entries, and at 1.5 × fanout at the latest: the
    buckets average close to the fan-out (8.6 for 8) where boundaries alone, cut at
    the fan-out, averaged 2.7. An entry's name is its first file's, so a changed
    file never moves a boundary; an added or removed name moves only the
    boundaries near it.
    """
    smallest, largest = max(1, fanout // 2), fanout + fanout // 2
    buckets: list[list[dict]] = [[]]
    for entry in entries:
        buckets[-1].append(entry)
        size = len(buckets[-1])
        boundary = size >= smallest and int(sha256_hex(entry["manifest"][0]["filename"])[:8], 16) % fanout == 0
        if boundary or size >= largest:
            buckets.append([])
    return [b for b in buckets if b]


def _aggregate_level(context_set: ContextSet, buckets: list[list[dict]], *, wait: bool = True) -> list[dict | None]:
    """One node per bucket: cached nodes at once, the others built in parallel threads.

    A node another worker is building is waited for, unless `wait` is False (then it is None).
    """
    nodes: list[dict | None] = []
    missing: list[tuple[int, list[dict], list[dict], str]] = []
    for index, entries in enumerate(buckets):
        manifest = [item for entry in entries for item in entry["manifest"]]
        input_hashes = [entry["digest"].digest_hash for entry in entries]
        cache_key = digest_cache.aggregate_cache_key(manifest, input_hashes, prompt_version())
        stored = digest_cache.cached_aggregate(context_set.cache_scope, cache_key)
        nodes.append({"manifest": manifest, "digest": stored} if stored else None)
        if stored is None:
            missing.append((index, entries, manifest, cache_key))
    # Threads cannot see rows of a transaction still open in this one (a test's, a caller's).
    parallel = len(missing) > 1 and not transaction.get_connection().in_atomic_block
    if not parallel:
        for index, entries, manifest, cache_key in missing:
            nodes[index] = _build_node(context_set, entries, manifest, cache_key, wait=wait)
        return nodes
    workers = min(len(missing), settings.GROUNDWORK_LLM_MAX_IN_FLIGHT or AGGREGATE_THREADS)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aggregate") as pool:
        futures = {
            pool.submit(_in_thread, contextvars.copy_context(), context_set, entries, manifest, cache_key): index
            for index, entries, manifest, cache_key in missing
        }
        try:
            for future, index in futures.items():
                nodes[index] = future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return nodes


def _in_thread(context: contextvars.Context, *args) -> dict | None:
    """A node built in a pool thread: the caller's context (bulk priority), its own DB connection."""
    try:
        return context.run(_build_node, *args)
    finally:
        connections.close_all()


def _build_node(
    context_set: ContextSet, entries: list[dict], manifest: list[dict], cache_key: str, *, wait: bool = True
) -> dict | None:
    """One Task B node, built by one worker at a time: another that needs it waits for its cache entry."""
    scope = context_set.cache_scope
    lock = _node_lock(scope, cache_key)
    while not _acquire(lock):
        if not wait:
            return None
        stored = digest_cache.cached_aggregate(scope, cache_key)
        if stored is not None:
            return {"manifest": manifest, "digest": stored}
        _break_if_holder_dead(lock)
        time.sleep(NODE_WAIT_POLL_SECONDS)
    try:
        stored = digest_cache.cached_aggregate(scope, cache_key)  # built while this one waited
        if stored is None:
            generated = generate_aggregate_digest(
                manifest=manifest,
                digests=[entry["digest"].content for entry in entries],
                subject=f"aggregate:{context_set.id}",
                session_id=context_set.session_id,
            )
            stored = digest_cache.store_digest(
                scope=scope, cache_key=cache_key, kind=StoredDigest.Kind.AGGREGATE, generated=generated
            )
    finally:
        _release(lock)
    return {"manifest": manifest, "digest": stored}


def _node_lock(scope: str, cache_key: str):
    # Expires on its own if its worker dies: one node is at most a call and its repair, with retries.
    seconds = 2 * settings.GROUNDWORK_LLM_TIMEOUT_SECONDS + settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS
    return shared_redis.client().lock(f"groundwork:aggregate-node:{scope}:{cache_key}", timeout=seconds)


def _acquire(lock) -> bool:
    try:
        # The holder's process as the token: a waiter can tell when it died (leases.holder_is_dead).
        return lock.acquire(blocking=False, token=leases.process_owner())
    except redis.RedisError:
        return True  # no Redis: build it (at worst twice)


def _break_if_holder_dead(lock) -> None:
    """A node lock whose holder was killed (a pool child, a restarted worker's predecessor) is
    released now, not at its expiry: the job re-queued after the kill builds the node."""
    try:
        holder = lock.redis.get(lock.name)
        if holder and leases.holder_is_dead(holder.decode()):
            lock.do_release(holder)  # only if it is still that holder's
            logger.warning("released the aggregate node lock of dead %s", holder.decode())
    except (redis.RedisError, LockError):
        pass


def _release(lock) -> None:
    try:
        lock.release()
    except (redis.RedisError, LockError):
        pass


# --- Task B's first level, while Task A still runs ------------------------------------

_bucket_cache: dict[tuple, dict[str, tuple[str, ...]]] = {}  # (set, revision) → filename → its bucket


def prebuild_first_level(file: ContextFile) -> None:
    """Build the first-level Task B node of this file's bucket now when every file of it is ready.

    The aggregate waits for every file, but its first level (about 1/fan-out of all
    calls) need not: a bucket whose files are all ready is built here and cached while
    other files are still being digested, and build_aggregate finds it cached (or
    waits for it: one worker builds a node at a time, see _build_node). A failure is
    left to build_aggregate. Buckets are those of the files expected to be inputs
    (extracted, not failed); a file failing later can move later boundaries, and a
    node built for a bucket that moved is not used.
    """
    fanout = max(2, settings.GROUNDWORK_AGGREGATE_FANOUT)
    bucket = _first_level_bucket(file.context_set_id, file.filename, fanout)
    if bucket is None:
        return
    files = {
        f.filename: f
        for f in ContextFile.objects.filter(context_set_id=file.context_set_id, filename__in=bucket).select_related(
            "digest"
        )
    }
    ready = [f for f in files.values() if f.digest_status == DigestStatus.READY and f.digest is not None]
    if len(ready) != len(bucket):
        return
    entries = [
        {"manifest": [{"filename": name, "format": files[name].format}], "digest": files[name].digest}
        for name in bucket
    ]
    try:
        _aggregate_level(file.context_set, [entries], wait=False)
    except TaskFailed as exc:
        logger.info("first-level aggregate of %s not built early: %s", file.filename, exc.reason)


def _first_level_bucket(context_set_id, filename: str, fanout: int) -> tuple[str, ...] | None:
    """The filenames of `filename`'s first-level bucket (None: the set needs no tree), per revision."""
    revision = ContextSet.objects.filter(pk=context_set_id).values_list("revision", flat=True).first()
    key = (context_set_id, revision, fanout, prompt_version())
    if key not in _bucket_cache:
        names = list(
            ContextFile.objects.filter(context_set_id=context_set_id)
            .exclude(digest_status=DigestStatus.ERROR)
            .exclude(extracted_text_hash="")
            .order_by("filename")
            .values_list("filename", flat=True)
        )
        of_name: dict[str, tuple[str, ...]] = {}
        if len(names) > fanout:
            entries = [{"manifest": [{"filename": name}]} for name in names]
            for bucket in _buckets(entries, fanout):
                members = tuple(entry["manifest"][0]["filename"] for entry in bucket)
                of_name.update(dict.fromkeys(members, members))
        if len(_bucket_cache) >= 16:
            _bucket_cache.pop(next(iter(_bucket_cache)))
        _bucket_cache[key] = of_name
    return _bucket_cache[key].get(filename)
