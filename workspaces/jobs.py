"""The one way a module queues a Celery job: by the name its task is registered under.

A module below an app's tasks.py (the top of the app: it imports the services it runs)
queues a job here without importing the tasks. `current_app.tasks[name]` is the
registered task itself, so its routing, retries and eager mode (tests, benchmarks)
apply as to `.delay`. Each app's AppConfig.ready() imports its tasks, so every process
that queues a job (web, worker, a script) has them registered.
"""

from celery import current_app


def queue_job(name: str, *args, kwargs: dict | None = None, countdown: float | None = None) -> None:
    current_app.tasks[name].apply_async(args, kwargs, countdown=countdown)
