"""The session-wide test worker (conftest's `celery_worker_thread`): whether it runs, and waiting for it.

Once a test has started it, the worker consumes every message any later test sends,
including the extraction an upload queues in a test that extracts inline
(factories.extract_uploads). Waiting until it is idle keeps its work out of the test
that comes after, and out of the database teardown's TRUNCATE.
"""

import time

import pytest

running = False  # set by conftest's celery_worker_thread while the worker runs


def broker_backlog() -> int:
    from config.celery import app

    with app.connection_for_write() as connection:
        channel = connection.default_channel
        return sum(channel.queue_declare(queue=q.name).message_count for q in app.amqp.queues.values())


def idle() -> bool:
    """Nothing queued, nothing reserved or running (tasks held for later, ETA, are not work in hand)."""
    from celery.worker import state

    return not broker_backlog() and not state.reserved_requests and not state.active_requests


def busy() -> bool:
    return running and not idle()


def wait_until_idle(timeout: float = 60.0) -> None:
    """Return once the worker has nothing to do (no-op when it is not running); fail after `timeout`."""
    if not running:
        return
    from celery.worker import state

    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        if idle():
            # A message between the broker and the worker's books is in neither: idle twice running.
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= 0.2:
                return
        else:
            quiet_since = None
        time.sleep(0.05)
    pytest.fail(f"the worker was still busy after {timeout}s: {[r.name for r in state.active_requests]}")
