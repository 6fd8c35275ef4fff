"""Celery entry points of research runs: load ids, call one engine step. All safe to run twice."""

from celery import shared_task

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
