"""The pipeline's Celery jobs, queued by task name (workspaces.jobs): context_app/tasks.py runs them,
and no stage imports it."""

from llm_platform import embeddings
from workspaces.jobs import queue_job

PARSE_CONTEXT_SET = "context.parse_context_set"
EXTRACT_FILE = "context.extract_file"
DIGEST_FILE = "context.digest_file"
BUILD_AGGREGATE = "context.build_aggregate"
POLL_LLM_BATCHES = "context.poll_llm_batches"
PUSH_CONTEXT = "context.push_context"
EMBED_FILE = "context.embed_file"


def enqueue_parse(context_set_id, *, requeue_unheld: bool = False) -> None:
    """Parse the set; `requeue_unheld` (Parse now): also re-queue the jobs no worker holds yet."""
    queue_job(PARSE_CONTEXT_SET, str(context_set_id), kwargs={"requeue_unheld": True} if requeue_unheld else None)


def enqueue_extraction(file_id, content_hash: str) -> None:
    queue_job(EXTRACT_FILE, str(file_id), content_hash)


def enqueue_digest(file_id, extracted_text_hash: str) -> None:
    queue_job(DIGEST_FILE, str(file_id), extracted_text_hash)


def enqueue_aggregate(context_set_id) -> None:
    queue_job(BUILD_AGGREGATE, str(context_set_id))


def enqueue_push(context_set_id, *, countdown: float) -> None:
    queue_job(PUSH_CONTEXT, str(context_set_id), countdown=countdown)


def enqueue_embedding(file_id) -> None:
    if embeddings.enabled():
        queue_job(EMBED_FILE, str(file_id))
