"""The pipeline's Celery jobs, queued by task name.

The stages queue the next stage's job here, by the name its task is registered
under in context_app/tasks.py: the tasks (the top of the app) import the stages,
and no stage imports the tasks. `current_app.tasks[name]` is the registered task
itself, so routing, retries and eager mode (tests, benchmarks) apply as to `.delay`.
"""

from celery import current_app

PARSE_CONTEXT_SET = "context.parse_context_set"
EXTRACT_FILE = "context.extract_file"
DIGEST_FILE = "context.digest_file"
BUILD_AGGREGATE = "context.build_aggregate"
POLL_LLM_BATCHES = "context.poll_llm_batches"
PUSH_CONTEXT = "context.push_context"


def _queue(name: str, args: tuple, kwargs: dict | None = None, **options) -> None:
    current_app.tasks[name].apply_async(args, kwargs, **options)


def enqueue_parse(context_set_id, *, requeue_unheld: bool = False) -> None:
    """Parse the set; `requeue_unheld` (Parse now): also re-queue the jobs no worker holds yet."""
    _queue(PARSE_CONTEXT_SET, (str(context_set_id),), {"requeue_unheld": True} if requeue_unheld else None)


def enqueue_extraction(file_id, content_hash: str) -> None:
    _queue(EXTRACT_FILE, (str(file_id), content_hash))


def enqueue_digest(file_id, extracted_text_hash: str) -> None:
    _queue(DIGEST_FILE, (str(file_id), extracted_text_hash))


def enqueue_aggregate(context_set_id) -> None:
    _queue(BUILD_AGGREGATE, (str(context_set_id),))


def enqueue_push(context_set_id, *, countdown: float) -> None:
    _queue(PUSH_CONTEXT, (str(context_set_id),), countdown=countdown)
