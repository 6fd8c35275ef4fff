"""The session-wide test worker (conftest's `celery_worker_thread`): whether it runs, and waiting for it.

Once a test has started it, the worker consumes every message any later test sends,
including the extraction an upload queues in a test that extracts inline
(factories.extract_uploads). Waiting until it is idle keeps its work out of the test
that comes after, and out of the database teardown's TRUNCATE.
"""

import time
from datetime import UTC, datetime, timedelta

import pytest

running = False  # set by conftest's celery_worker_thread while the worker runs
DUE_SOON = 5.0  # seconds


def broker_backlog() -> int:
    from config.celery import app

    with app.connection_for_write() as connection:
        channel = connection.default_channel
        return sum(channel.queue_declare(queue=q.name).message_count for q in app.amqp.queues.values())


def idle() -> bool:
    """Nothing queued, reserved, running, or held to run within DUE_SOON seconds. A task held that briefly
    is work the test set going: a paced push (context_app.notify, a countdown of
    GROUNDWORK_CONTEXT_PUSH_SECONDS) ran into the teardown's TRUNCATE and deadlocked on PostgreSQL. Tasks
    held for later (a chat request's expiry) are not work in hand."""
    from celery.worker import state

    if broker_backlog() or state.reserved_requests or state.active_requests:
        return False
    horizon = datetime.now(UTC) + timedelta(seconds=DUE_SOON)
    try:
        held = list(state.scheduled_requests)
    except RuntimeError:  # the worker's thread changed the set meanwhile: look again
        return False
    return not any(request.eta is None or request.eta <= horizon for request in held)


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
