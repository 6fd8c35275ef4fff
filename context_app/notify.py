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
    manifest = manifest_of(context_set)
    message = {
        "type": "context.updated",
        "revision": manifest["revision"],
        "files": manifest["files"],
        "aggregate_digest_status": manifest["aggregate_digest_status"],
        "aggregate_revision": manifest["aggregate_revision"],
        "last_diff": manifest["last_diff"],
        "auto_parse": manifest["auto_parse"],
    }
    try:
        async_to_sync(get_channel_layer().group_send)(context_group_name(context_set.session_id), message)
    except Exception:  # a dead channel layer must not fail the mutation that already committed
        logger.exception("could not push context.updated for %s", context_set_id)
