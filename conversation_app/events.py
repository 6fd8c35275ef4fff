"""Chat events for everyone watching a session's conversation (`ws /ws/sessions/{sid}/conversation/`)."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

EVENTS = (
    "conversation:message",
    "conversation:delta",  # the answer's text as it is generated, before its conversation:message
    "conversation:context_request",
    "conversation:context_update",
    "conversation:context_resolved",
)


def conversation_group_name(session_id) -> str:
    return f"conversation.{session_id}"


def push(session_id, event: str, **payload) -> None:
    """Send once the transaction commits: a watcher never hears of a row it cannot read yet."""
    assert event in EVENTS, event
    message = {"type": "conversation.event", "event": {"type": event, **payload}}

    def send() -> None:
        try:
            async_to_sync(get_channel_layer().group_send)(conversation_group_name(session_id), message)
        except Exception:  # stored already; the page reloads the history on reconnect
            logger.exception("could not push %s for session %s", event, session_id)

    transaction.on_commit(send)
