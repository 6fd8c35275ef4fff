"""Runs a dead worker left: the step it was on is delivered again."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from context_app import services as context_services
from context_app.models import ContextSet, DigestStatus

from ..models import ResearchNode, ResearchRun
from . import jobs
from .engine import report_when_done

Status = ResearchRun.Status
NodeStatus = ResearchNode.Status


def resume_run(run_id) -> None:
    """Re-deliver the step a dead worker left: nodes left running go back to pending."""
    run = ResearchRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished:
        return
    # The calls of the steps re-delivered take their token reservations anew (runs/model_tasks.py):
    # a dead worker's would otherwise keep a part of the budget for good.
    ResearchRun.objects.filter(pk=run_id).update(tokens_reserved=0)
    if run.status == Status.QUEUED:
        jobs.enqueue(jobs.BIND_RUN, run.pk)
    elif run.status == Status.BINDING and _context_settled(run):
        jobs.enqueue(jobs.BEGIN_EXPLORATION, run.pk)
    elif run.status == Status.BINDING:
        context_services.request_parse(ContextSet.objects.get(session_id=run.session_id))
    elif run.status == Status.RUNNING:
        ResearchNode.objects.filter(run=run, status=NodeStatus.RUNNING).update(status=NodeStatus.PENDING)
        for node_id in ResearchNode.objects.filter(run=run, status=NodeStatus.PENDING).values_list("pk", flat=True):
            jobs.enqueue(jobs.EXPLORE_NODE, node_id)
        report_when_done(run.pk)
    elif run.status == Status.REPORTING:
        jobs.enqueue(jobs.WRITE_REPORT, run.pk)


def recover_stuck_runs() -> list:
    """Runs whose nodes have been running longer than any task may live: their worker died; resume them."""
    cutoff = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    stuck = ResearchNode.objects.filter(status=NodeStatus.RUNNING, started_at__lt=cutoff, run__status=Status.RUNNING)
    run_ids = list(stuck.values_list("run_id", flat=True).distinct())
    for run_id in run_ids:
        resume_run(run_id)
    return run_ids


def _context_settled(run: ResearchRun) -> bool:
    busy = [DigestStatus.STALE, DigestStatus.PARSING]
    context_set = ContextSet.objects.get(session_id=run.session_id)
    return (
        context_set.aggregate_digest_status not in busy
        and not context_set.files.filter(digest_status__in=busy).exists()
    )
