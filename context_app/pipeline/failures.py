"""A job that raised, after its retries: its file or aggregate ends `error`, saying why."""

import logging

from django.db import transaction
from django.utils import timezone

from workspaces import leases
from workspaces.claims import claim

from ..models import AGGREGATE_JOB, FILE_JOB, ContextFile, ContextSet, DigestStatus
from ..notify import notify_context_changed
from .aggregate_state import lock_set, refresh_aggregate_state
from .digest import after_file_digest
from .dispatch import settle

logger = logging.getLogger(__name__)


def job_failure(exc: BaseException) -> str:
    return f"the job failed ({type(exc).__name__}: {exc})"[:500]


def fail_file_job(file_id, exc: BaseException, **conditions) -> None:
    """A file's job (extraction or Task A) that raised, after its retries: the file ends `error`, saying why.

    Should this write fail too (the database still locked), the job's lease, renewed no
    more, expires and recovery re-queues the job: the file never stays `parsing`.
    """
    stage = "digest" if conditions.get("extracted_text_hash") else "extraction"
    with leases.holding(FILE_JOB, file_id, **conditions) as held:
        if not held:  # done meanwhile, or another worker holds it again
            return
        with transaction.atomic():
            file = ContextFile.objects.get(pk=file_id)
            context_set = lock_set(file.context_set_id)
            claim(
                ContextFile.objects.filter(leases.held_by_me(FILE_JOB), pk=file_id, **conditions),
                field="digest_status",
                from_=DigestStatus.PARSING,
                to=DigestStatus.ERROR,
                error={"code": "job_failed", "message": job_failure(exc), "stage": stage},
                parsing_started_at=None,
                updated_at=timezone.now(),
            )
            if context_set is not None:
                refresh_aggregate_state(context_set)
    logger.warning("file %s ends in error: %s", file_id, job_failure(exc))
    after_file_digest(file.context_set_id, file_id)


def fail_aggregate_job(context_set_id, exc: BaseException) -> None:
    """A Task B job that raised, after its retries: the aggregate ends `error` (Parse now retries it)."""
    with leases.holding(AGGREGATE_JOB, context_set_id) as held:
        if not held:
            return
        claim(
            ContextSet.objects.filter(leases.held_by_me(AGGREGATE_JOB), pk=context_set_id),
            field="aggregate_digest_status",
            from_=DigestStatus.PARSING,
            to=DigestStatus.ERROR,
            aggregate_error={"message": job_failure(exc)},
        )
    logger.warning("aggregate of %s ends in error: %s", context_set_id, job_failure(exc))
    notify_context_changed(context_set_id)
    settle(context_set_id)
