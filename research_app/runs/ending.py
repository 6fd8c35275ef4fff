"""A run ends early: cancelled by a user, or failed (a step crashed, a limit stopped it)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from workspaces.claims import claim
from workspaces.errors import ApplicationError

from ..models import ResearchNode, ResearchRun
from . import coverage
from .events import announce, emit

Status = ResearchRun.Status
NodeStatus = ResearchNode.Status


def cancel_run(run: ResearchRun) -> ResearchRun:
    """Cancel an open run. Its steps under way stop before their next model call or stored result
    (RunStopped); the session's files go on parsing (their digests are the session's)."""
    with transaction.atomic():
        if not claim(
            ResearchRun.objects.filter(pk=run.pk),
            not_from=ResearchRun.FINISHED,
            to=Status.CANCELLED,
            finished_at=timezone.now(),
        ):
            raise ApplicationError(f"the run is already {run.status}", 409)
        _close_open_work(run.pk, Status.CANCELLED)
        emit(run.pk, "run_cancelled")
        _record_coverage(run.pk)
        announce(run.pk)
    run.refresh_from_db()
    return run


def fail_run(run_id, reason: str, *, limit: str | None = None) -> bool:
    """End an open run as failed: its reason stored and told (`run_failed`), its open nodes cancelled.

    `limit` names the limit that stopped it before a call could pass it ("token_budget",
    "spending_cap"), told in the event. A run already finished (completed, cancelled,
    failed) is left as it is; returns whether this call ended it.
    """
    with transaction.atomic():
        if not claim(
            ResearchRun.objects.filter(pk=run_id),
            not_from=ResearchRun.FINISHED,
            to=Status.FAILED,
            error=reason,
            finished_at=timezone.now(),
        ):
            return False
        _close_open_work(run_id, Status.FAILED)
        emit(run_id, "run_failed", error=reason, **({"limit": limit} if limit else {}))
        _record_coverage(run_id)
        announce(run_id)
    return True


def _close_open_work(run_id, status: str) -> None:
    """A run just ended: nodes not finished are cancelled (a worker still on one stops at its next
    check), and a bind phase still `parsing` says how the run ended instead."""
    ResearchNode.objects.filter(run_id=run_id, status__in=[NodeStatus.PENDING, NodeStatus.RUNNING]).update(
        status=NodeStatus.CANCELLED, finished_at=timezone.now()
    )
    processing = ResearchRun.objects.values_list("context_processing", flat=True).get(pk=run_id)
    if processing.get("status") == "parsing":
        ResearchRun.objects.filter(pk=run_id).update(context_processing={**processing, "status": status})


def _record_coverage(run_id) -> None:
    """A run that bound its context and ends without a report still says what it looked at
    (runs/coverage.py: its nodes' findings stand for the report's citations), as its last event."""
    run = ResearchRun.objects.only("id", "session_id", "context_bundle").get(pk=run_id)
    record = coverage.recorded(run)
    if record is None:
        return  # ended before its context was bound: there is nothing it could have read
    ResearchRun.objects.filter(pk=run_id).update(coverage=record)
    emit(run_id, "coverage_recorded", **coverage.event_payload(record))
