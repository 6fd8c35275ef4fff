"""Parse now, auto-parse and a run's start: claim the stale files for Task A, then Task B once none is left."""

import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workspaces.claims import claim

from .. import signals
from ..batch_submit import submit_if_due, waits_for_extraction
from ..digest_cache import file_cache_key
from ..models import ContextFile, ContextSet, DigestCacheEntry, DigestStatus
from ..notify import notify_context_changed, notify_context_changed_soon
from . import jobs
from .aggregate_state import refresh_aggregate_state
from .extraction_queue import reread_by_improved_readers
from .recovery import recover_unheld_jobs

logger = logging.getLogger(__name__)


def after_change(context_set_id) -> None:
    """After a committed mutation: tell the watchers at once, and parse if the set wants it."""
    notify_context_changed(context_set_id)
    _parse_if_wanted(context_set_id)


def after_extraction(context_set_id) -> None:
    """After a file's text is written: tell the watchers at the paced rate (an upload of a thousand
    files ends a thousand extractions, and each push is the manifest of every file), and parse if the
    set wants it."""
    notify_context_changed_soon(context_set_id)
    _parse_if_wanted(context_set_id)


def _parse_if_wanted(context_set_id) -> None:
    context_set = ContextSet.objects.filter(pk=context_set_id).first()
    if context_set and parsing_wanted(context_set):
        jobs.enqueue_parse(context_set_id)


def parsing_wanted(context_set: ContextSet) -> bool:
    return context_set.auto_parse or context_set.parse_requested


def dispatch_parse(context_set_id, requeue_unheld: bool = False) -> None:
    """Claim every stale file for Task A (one task each, in parallel); aggregate when none is left."""
    recover_unheld_jobs(context_set_id, queued=requeue_unheld)
    if not ContextSet.objects.filter(pk=context_set_id).exists():
        return
    restale_outdated_digests(context_set_id)
    reread_by_improved_readers(context_set_id)
    if waits_for_extraction(context_set_id):
        return  # the batch takes the whole parse: the last extraction's after_extraction dispatches again
    # Claim all before enqueuing any: a fast worker must not aggregate a half-claimed set.
    claimed = _claim_stale_files(context_set_id)
    claimed = submit_if_due(context_set_id, claimed)  # a large parse's Task A may go as one batch

    for file_id, text_hash in claimed:
        jobs.enqueue_digest(file_id, text_hash)
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
        moved = claim(
            ContextFile.objects.filter(pk__in=outdated),
            field="digest_status",
            from_=DigestStatus.READY,
            to=DigestStatus.STALE,
            digest=None,
            digest_hash="",
            updated_at=timezone.now(),
            requeued_because="its digest was made under another prompt or model",
        )
        refresh_aggregate_state(locked)
    if not moved:
        return 0
    logger.info("%s digests of %s were made under another prompt or model: stale again", len(outdated), context_set_id)
    return len(outdated)


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
            claim(
                ContextFile.objects.filter(pk__in=[pk for pk, _hash in claimed]),
                field="digest_status",
                from_=DigestStatus.STALE,
                to=DigestStatus.PARSING,
                parsing_started_at=now,
                updated_at=now,
                llm_batch=None,
                lease_owner="",  # queued: the job takes the lease when it starts
                lease_expires_at=None,
            )
    return claimed


def schedule_aggregate_if_due(context_set_id) -> None:
    """Once no file is parsing (or about to be), claim the stale aggregate and build it."""
    if _files_in_flight(context_set_id).exists():
        return
    context_set = ContextSet.objects.filter(pk=context_set_id).first()
    if context_set is None:  # the session was deleted while its files were parsing
        return
    nothing_to_build = context_set.aggregate_digest_status == DigestStatus.ERROR and not (
        ContextFile.objects.filter(context_set_id=context_set_id, digest_status=DigestStatus.READY).exists()
    )
    if context_set.aggregate_digest_status == DigestStatus.READY or nothing_to_build:
        settle(context_set_id)  # nothing_to_build: every file failed, the aggregate says so already
        return
    if not parsing_wanted(context_set):
        return
    # The check for files in flight is in the claim's WHERE clause, not read before it: a file
    # moves parsing -> stale when extracted and stale -> parsing when claimed, so two reads
    # could miss it between them and build the aggregate without it (then again with it).
    if claim(
        ContextSet.objects.filter(pk=context_set_id).exclude(
            pk__in=_files_in_flight(context_set_id).values("context_set_id")
        ),
        field="aggregate_digest_status",
        from_=[DigestStatus.STALE, DigestStatus.ERROR],
        to=DigestStatus.PARSING,
        aggregate_lease_owner="",  # queued: the job takes the lease when it starts
        aggregate_lease_expires_at=None,
    ):
        notify_context_changed(context_set_id)
        jobs.enqueue_aggregate(context_set_id)


def _files_in_flight(context_set_id):
    """Files being extracted or digested, or extracted and waiting for a queued dispatch_parse to claim them."""
    return ContextFile.objects.filter(context_set_id=context_set_id).filter(
        Q(digest_status=DigestStatus.PARSING) | Q(digest_status=DigestStatus.STALE) & ~Q(extracted_text_hash="")
    )


def settle(context_set_id) -> None:
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
