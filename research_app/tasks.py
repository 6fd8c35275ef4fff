"""Celery entry points of research runs: load ids, call one engine step. All safe to run twice."""

from celery import shared_task
from celery.signals import worker_ready

from .runs import engine, report


@shared_task(name="research.bind_run")
def bind_run(run_id: str) -> None:
    engine.bind_run(run_id)


@shared_task(name="research.begin_exploration")
def begin_exploration(run_id: str) -> None:
    engine.begin_exploration(run_id)


@shared_task(name="research.explore_node")
def explore_node(node_id: str) -> None:
    engine.explore_node(node_id)


@shared_task(name="research.write_report")
def write_report(run_id: str) -> None:
    report.write_report(run_id)


@worker_ready.connect
def resume_runs_after_restart(**_kwargs) -> None:
    engine.recover_stuck_runs()
