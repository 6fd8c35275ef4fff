"""Jobs left `parsing` that no live worker holds go back to the queue (job leases: workspaces/leases.py)."""

import logging
import time
from datetime import timedelta

from django.db import connections
from django.db.models import Q
from django.utils import timezone

from llm_platform.models import LLMBatch
from workspaces import leases
from workspaces.claims import claim

from ..models import AGGREGATE_JOB, FILE_JOB, DigestStatus
from . import jobs

logger = logging.getLogger(__name__)


def recover_unheld_jobs(context_set_id=None, *, queued: bool = False, worker_starting: bool = False) -> set:
    """Jobs left `parsing` that no live worker holds go back to the queue; returns the sets touched.

    Always those whose lease expired (its process died or stopped renewing it); with
    `queued`, also those no worker has taken yet, whose message may have been lost with
    a dead worker's prefetch or a Redis restart (a duplicate message finds the lease
    taken and does nothing), once they were claimed more than a lease ago. When a worker
    starts, also those its previous instance held (dead, see leases.py), and the untaken
    ones claimed before this start: its predecessor may have died with their messages
    received and not yet started, or between claiming a set's files and queuing their
    jobs, and such a message comes back only after the broker's visibility timeout. The
    caller enqueues a parse of each set touched.
    """
    now = timezone.now()
    touched = set()
    for job in (FILE_JOB, AGGREGATE_JOB):
        unheld = Q(**{f"{job.owner}__gt": "", f"{job.expires}__lte": now})
        if worker_starting:
            unheld |= leases.held_by_predecessor(job)
        if queued or worker_starting:
            never_taken = Q(**{job.owner: ""})
            if job.claimed_at:
                # Not one claimed a moment ago: its message is on its way to a worker, and
                # re-queuing it let two deliveries make the same model call (seen on PostgreSQL).
                claimed_before = (
                    leases.BOOTED_AT if worker_starting else now - timedelta(seconds=leases.lease_seconds())
                )
                claimed = job.claimed_at
                never_taken &= Q(**{f"{claimed}__lt": claimed_before}) | Q(**{f"{claimed}__isnull": True})
            unheld |= never_taken
        rows = job.model.objects.filter(unheld, **{job.status: DigestStatus.PARSING})
        if job is FILE_JOB:
            # Queued in a provider batch: no worker holds it, the batch answers within 24 h (batch_ingest).
            rows = rows.exclude(llm_batch__status=LLMBatch.Status.SUBMITTED)
        if context_set_id is not None:
            rows = rows.filter(**{"context_set_id" if job is FILE_JOB else "pk": context_set_id})
        file_columns = ["context_set_id", "content_hash", "extracted_text_hash"] if job is FILE_JOB else []
        for row in rows.values("pk", job.owner, job.expires, *file_columns):
            # Conditional on the lease as read: a job that took it meanwhile keeps it.
            lease_as_read = {job.owner: row[job.owner], job.expires: row[job.expires]}
            as_read = job.model.objects.filter(pk=row["pk"], **lease_as_read)
            back = {"field": job.status, "from_": DigestStatus.PARSING}
            if job is AGGREGATE_JOB:
                # Re-claimed by schedule_aggregate_if_due once no file is parsing; it was wanted.
                if claim(as_read, **back, to=DigestStatus.STALE, parse_requested=True):
                    touched.add(row["pk"])
            elif row["extracted_text_hash"]:
                stopped = "the worker parsing it stopped"
                if claim(as_read, **back, to=DigestStatus.STALE, parsing_started_at=None, requeued_because=stopped):
                    touched.add(row["context_set_id"])
            elif claim(as_read, **back, to=DigestStatus.PARSING, lease_owner="", lease_expires_at=None):
                jobs.enqueue_extraction(row["pk"], row["content_hash"])  # not extracted yet: extraction again
                touched.add(row["context_set_id"])
    if touched:
        logger.warning("re-queued jobs no worker held in %d context set(s)", len(touched))
    return touched


def recover_and_requeue(*, queued: bool = False, worker_starting: bool = False) -> set:
    """recover_unheld_jobs over every set, and a parse of each set touched."""
    touched = recover_unheld_jobs(queued=queued, worker_starting=worker_starting)
    for context_set_id in touched:
        jobs.enqueue_parse(context_set_id)
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
