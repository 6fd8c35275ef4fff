"""Pushes `context.updated` to everyone watching a session's context (SPEC §2.7)."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from .models import ContextSet
from .selectors import manifest_of

logger = logging.getLogger(__name__)


def context_group_name(session_id) -> str:
    return f"context.{session_id}"


def notify_context_changed(context_set_id) -> None:
    context_set = ContextSet.objects.filter(pk=context_set_id).first()
    if context_set is None:
        return
    # The whole manifest: the fields SPEC §2.7 names, plus what a page needs to stay current.
    message = {"type": "context.updated", **manifest_of(context_set)}
    try:
        async_to_sync(get_channel_layer().group_send)(context_group_name(context_set.session_id), message)
    except Exception:  # a dead channel layer must not fail the mutation that already committed
        logger.exception("could not push context.updated for %s", context_set_id)
