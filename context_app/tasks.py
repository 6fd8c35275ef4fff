"""Celery entry points: load ids, call one pipeline stage. All safe to run twice (acks_late).

The top of context_app: the stages queue each other's jobs by name (pipeline/jobs.py).
"""

import logging
import threading

from celery import shared_task
from celery.signals import celeryd_after_setup, task_failure, worker_ready
from django.conf import settings
from django.db import OperationalError

from llm_platform.gateway import get_provider
from workspaces import leases

from . import batch_ingest, meaning, notify
from .pipeline import aggregate, digest, dispatch, extract, failures, jobs, recovery

logger = logging.getLogger(__name__)

# SQLite under many writer threads can time out on its lock ("database is locked"); the steps
# are idempotent and a digest already made is a cache hit, so trying again costs no model call.
RETRY_ON_DB_LOCK = dict(autoretry_for=(OperationalError,), max_retries=5, retry_backoff=2, retry_jitter=True)


@shared_task(name=jobs.PARSE_CONTEXT_SET, **RETRY_ON_DB_LOCK)
def parse_context_set(context_set_id: str, requeue_unheld: bool = False) -> None:
    dispatch.dispatch_parse(context_set_id, requeue_unheld)


# A scan is read page by page, each page under GROUNDWORK_EXTRACT_SECONDS (the extraction child's
# own watchdog, extraction/isolation.py), so a long one outlasts the tasks' default limit: this
# task's backstop is the page limit's worth of pages.
EXTRACT_TIME_LIMIT = int(settings.GROUNDWORK_MAX_PAGES * (settings.GROUNDWORK_EXTRACT_SECONDS + 5)) + 300


@shared_task(
    name=jobs.EXTRACT_FILE, soft_time_limit=EXTRACT_TIME_LIMIT, time_limit=EXTRACT_TIME_LIMIT + 60, **RETRY_ON_DB_LOCK
)
def extract_file(file_id: str, content_hash: str) -> None:
    extract.extract_file(file_id, content_hash)


@shared_task(name=jobs.DIGEST_FILE, **RETRY_ON_DB_LOCK)
def digest_file(file_id: str, extracted_text_hash: str) -> None:
    digest.digest_file(file_id, extracted_text_hash)


@shared_task(name=jobs.BUILD_AGGREGATE, **RETRY_ON_DB_LOCK)
def build_aggregate(context_set_id: str) -> None:
    aggregate.build_aggregate(context_set_id)


@shared_task(name=jobs.POLL_LLM_BATCHES)
def poll_llm_batches() -> None:
    """Celery beat: take the answers of provider batches that have ended (batch_ingest)."""
    batch_ingest.poll_batches()


@shared_task(name=jobs.EMBED_FILE, **RETRY_ON_DB_LOCK)
def embed_file(file_id: str) -> None:
    meaning.embed_file(file_id)


@shared_task(name=jobs.PUSH_CONTEXT)
def push_context(context_set_id: str) -> None:
    notify.push_scheduled(context_set_id)


@worker_ready.connect
def build_the_provider(**_kwargs) -> None:
    """Import the SDK and build its client before the first task, not in the first 40 at once."""
    try:
        get_provider()
    except Exception:  # a misconfiguration fails the tasks that call the model, with its message
        logger.exception("the model provider could not be built")


@task_failure.connect
def a_failed_job_ends_its_parsing(sender=None, args=None, exception=None, **_kwargs) -> None:
    """Any exception, after the retries (or a hard time limit): the file or aggregate ends `error`.

    Runs where the failure is known: the task's process, or the worker's main process
    for a pool child killed at its time limit (its lease then belongs to a dead child).
    """
    name = getattr(sender, "name", "")
    try:
        if name == jobs.DIGEST_FILE:
            failures.fail_file_job(args[0], exception, extracted_text_hash=args[1])
        elif name == jobs.EXTRACT_FILE:
            failures.fail_file_job(args[0], exception, content_hash=args[1], extracted_text_hash="")
        elif name == jobs.BUILD_AGGREGATE:
            failures.fail_aggregate_job(args[0], exception)
    except Exception:  # noqa: BLE001 - the lease, renewed no more, expires and the job is re-queued
        logger.exception("the failure of %s%r was not recorded; its lease will expire", name, tuple(args or ()))


@celeryd_after_setup.connect
def name_the_lease_owner(sender=None, **_kwargs) -> None:
    """Before the pool forks: leases name this node, so its next instance knows them for its predecessor's."""
    leases.set_node_name(str(sender))


@worker_ready.connect
def recover_after_restart(sender=None, **_kwargs) -> None:
    """Re-queue at once what no live worker holds: its predecessor's jobs, expired leases, lost messages.

    Then, every GROUNDWORK_LEASE_SWEEP_SECONDS, the jobs whose lease expired since (a
    worker that died and was not restarted).
    """
    if getattr(sender, "hostname", None):
        leases.set_node_name(sender.hostname)
    recovery.recover_and_requeue(worker_starting=True)
    for file_id in meaning.files_to_embed():  # embeddings turned on, a model changed, a server was down
        jobs.enqueue_embedding(file_id)
    every = settings.GROUNDWORK_LEASE_SWEEP_SECONDS
    if every > 0:
        sweep = threading.Thread(target=recovery.sweep_expired_leases_forever, args=(every,), daemon=True)
        sweep.name = "lease-sweep"
        sweep.start()
