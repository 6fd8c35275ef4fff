"""The research steps' Celery jobs, by the names research_app/tasks.py registers them under
(queued with workspaces.jobs.queue_job: no runs module imports the tasks)."""

BIND_RUN = "research.bind_run"
BEGIN_EXPLORATION = "research.begin_exploration"
EXPLORE_NODE = "research.explore_node"
WRITE_REPORT = "research.write_report"
