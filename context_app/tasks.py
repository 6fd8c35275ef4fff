"""Celery entry points: load ids, call one pipeline function. All safe to run twice (acks_late)."""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from . import batch_ingest, notify, pipeline
from .llm.gateway import get_provider

logger = logging.getLogger(__name__)

# SQLite under many writer threads can time out on its lock ("database is locked"); the steps
# are idempotent and a digest already made is a cache hit, so trying again costs no model call.
RETRY_ON_DB_LOCK = dict(autoretry_for=(OperationalError,), max_retries=5, retry_backoff=2, retry_jitter=True)


@shared_task(name="context.parse_context_set")
def parse_context_set(context_set_id: str) -> None:
    pipeline.dispatch_parse(context_set_id)


@shared_task(name="context.extract_file")
def extract_file(file_id: str, content_hash: str) -> None:
    pipeline.extract_file(file_id, content_hash)


@shared_task(name="context.digest_file", **RETRY_ON_DB_LOCK)
def digest_file(file_id: str, extracted_text_hash: str) -> None:
    pipeline.digest_file(file_id, extracted_text_hash)


@shared_task(name="context.build_aggregate", **RETRY_ON_DB_LOCK)
def build_aggregate(context_set_id: str) -> None:
    pipeline.build_aggregate(context_set_id)


@shared_task(name="context.poll_llm_batches")
def poll_llm_batches() -> None:
    """Celery beat: take the answers of provider batches that have ended (batch_ingest)."""
    batch_ingest.poll_batches()


@shared_task(name="context.push_context")
def push_context(context_set_id: str) -> None:
    notify.push_scheduled(context_set_id)


@worker_ready.connect
def build_the_provider(**_kwargs) -> None:
    """Import the SDK and build its client before the first task, not in the first 40 at once."""
    try:
        get_provider()
    except Exception:  # a misconfiguration fails the tasks that call the model, with its message
        logger.exception("the model provider could not be built")


@worker_ready.connect
def recover_after_restart(**_kwargs) -> None:
    for context_set_id in pipeline.recover_stuck_files():
        pipeline.enqueue_parse(context_set_id)
