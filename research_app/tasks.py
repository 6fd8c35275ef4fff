"""Celery entry points of research runs: load ids, call one engine step. All safe to run twice.

A step that raises anything ends its run (failed, with a `run_failed` event and a reason
a user can read): a run is never left open because one step crashed. The exception
itself goes to the server log, not to the user.
"""

import logging
from collections.abc import Callable
from functools import wraps

from celery import shared_task
from celery.signals import worker_ready
from django.utils import timezone

from .models import ResearchNode, ResearchRun
from .runs import engine, jobs, recovery, report, update
from .runs.ending import fail_run
from .runs.events import RunStopped

logger = logging.getLogger(__name__)


def ends_the_run_on_error(what: str, run_of: Callable[[str], tuple[str | None, str]] = lambda rid: (rid, "")):
    """Runs the step; on any exception, logs it and fails the run (`run_of(id)` → (run id, words to add))."""

    def wrap(step: Callable[[str], None]) -> Callable[[str], None]:
        @wraps(step)
        def guarded(object_id: str) -> None:
            try:
                step(object_id)
            except RunStopped:
                pass  # the run was cancelled or ended meanwhile: the step stopped, as it should
            except Exception:
                run_id, detail = run_of(object_id)
                logger.exception("research step %s(%s) of run %s crashed", step.__name__, object_id, run_id)
                if run_id is not None:
                    fail_run(run_id, f"internal error while {what}{detail}; the run was stopped")

        return guarded

    return wrap


def _node_crashed(node_id: str) -> tuple[str | None, str]:
    """The crashed node is failed (it would stay `running`); its run is ended by the caller."""
    node = ResearchNode.objects.filter(pk=node_id).values("run_id", "path").first()
    if node is None:
        return None, ""
    ResearchNode.objects.filter(pk=node_id, status=ResearchNode.Status.RUNNING).update(
        status=ResearchNode.Status.FAILED, error="internal error while exploring this node", finished_at=timezone.now()
    )
    return node["run_id"], f" node {node['path']}"


@shared_task(name=jobs.BIND_RUN)
@ends_the_run_on_error("binding the session's context")
def bind_run(run_id: str) -> None:
    engine.bind_run(run_id)


@shared_task(name=jobs.BEGIN_EXPLORATION)
@ends_the_run_on_error("starting the exploration")
def begin_exploration(run_id: str) -> None:
    engine.begin_exploration(run_id)


@shared_task(name=jobs.EXPLORE_NODE)
@ends_the_run_on_error("exploring", _node_crashed)
def explore_node(node_id: str) -> None:
    engine.explore_node(node_id)


@shared_task(name=jobs.WRITE_REPORT)
@ends_the_run_on_error("writing the report")
def write_report(run_id: str) -> None:
    if ResearchRun.objects.filter(pk=run_id, updates_run__isnull=False).exists():
        update.write_updated_report(run_id)  # an update's report: re-checked, not written anew
    else:
        report.write_report(run_id)


@worker_ready.connect
def resume_runs_after_restart(**_kwargs) -> None:
    recovery.recover_stuck_runs()
