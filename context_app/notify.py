"""Pushes `context.updated` to everyone watching a session's context (SPEC §2.7)."""

import redis
from celery import current_app
from django.conf import settings

from workspaces import live, shared_redis

from .models import ContextSet
from .pipeline import jobs
from .selectors import manifest_of


def context_group_name(session_id) -> str:
    return f"context.{session_id}"


def notify_context_changed(context_set_id) -> None:
    context_set = ContextSet.objects.filter(pk=context_set_id).first()
    if context_set is None:
        return
    # The whole manifest: the fields SPEC §2.7 names, plus what a page needs to stay current.
    live.push(context_group_name(context_set.session_id), {"type": "context.updated", **manifest_of(context_set)})


def notify_context_changed_soon(context_set_id) -> None:
    """For steps that come by the hundred (each file's digest of a large parse): at most one push
    per set every GROUNDWORK_CONTEXT_PUSH_SECONDS, and always one after the last change.

    Each push carries the whole manifest, so pushing once per file made a parse of N files
    cost N manifests of N files (CPU in the worker, bytes to every browser); paced, a push
    is never older than the interval. The first change pushes at once; one in the interval
    after it schedules a push at its end (`context.push_context`), which reads the state
    as it is then.
    """
    interval = settings.GROUNDWORK_CONTEXT_PUSH_SECONDS
    if interval <= 0:
        notify_context_changed(context_set_id)
        return
    try:
        client = shared_redis.client()
        if client.set(_push_key(context_set_id), 1, nx=True, px=int(interval * 1000)):
            notify_context_changed(context_set_id)
        elif not current_app.conf.task_always_eager and client.set(
            _pending_key(context_set_id), 1, nx=True, px=int(interval * 4000)
        ):
            # (Eager, as in some tests and benchmarks, a countdown would push at once: the
            # next push of the parse, at the latest the aggregate's, carries the change.)
            jobs.enqueue_push(context_set_id, countdown=interval)
    except redis.RedisError:
        notify_context_changed(context_set_id)


def push_scheduled(context_set_id) -> None:
    """The push notify_context_changed_soon scheduled: the changes of its interval, as they are now."""
    interval = settings.GROUNDWORK_CONTEXT_PUSH_SECONDS
    try:
        client = shared_redis.client()
        client.set(_push_key(context_set_id), 1, px=max(1, int(interval * 1000)))
        client.delete(_pending_key(context_set_id))  # a change from now on schedules the next one
    except redis.RedisError:
        pass
    notify_context_changed(context_set_id)


def _push_key(context_set_id) -> str:
    return f"groundwork:push:{context_set_id}"


def _pending_key(context_set_id) -> str:
    return f"groundwork:push-pending:{context_set_id}"
