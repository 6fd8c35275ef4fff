"""Chat events for everyone watching a session's conversation (`ws /ws/sessions/{sid}/conversation/`)."""

from workspaces import live

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
    live.push_on_commit(
        conversation_group_name(session_id), {"type": "conversation.event", "event": {"type": event, **payload}}
    )
