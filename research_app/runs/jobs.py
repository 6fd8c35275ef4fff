"""The research steps' Celery jobs, by the names research_app/tasks.py registers them under
(queued with workspaces.jobs.queue_job: no runs module imports the tasks)."""

from workspaces.jobs import queue_job

BIND_RUN = "research.bind_run"
BEGIN_EXPLORATION = "research.begin_exploration"
EXPLORE_NODE = "research.explore_node"
WRITE_REPORT = "research.write_report"


def enqueue(job: str, object_id) -> None:
    """Queue a step for a run or a node, by its id as text (what every step's task takes)."""
    queue_job(job, str(object_id))
