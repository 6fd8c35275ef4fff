"""The JSON of chat messages, context requests and supplies (SPEC §5)."""

from workspaces.api.bodies import Body, Boolean, Text

from .models import ChatMessage, ContextRequest, ContextSupply, Conversation


class MessageBody(Body):
    """POST /api/research/conversation (its `session_id` is read by with_session_id)."""

    invalid_message = 'body must be {"session_id", "message": "…", "force"?: true|false}'
    message = Text()
    force = Boolean(required=False, default=False)


def message_json(message: ChatMessage) -> dict:
    return {
        "message_id": str(message.pk),
        "role": message.role,
        "author": message.author.get_username() if message.author_id else None,
        "content": message.content,
        "status": message.status,
        "reply_to": str(message.reply_to_id) if message.reply_to_id else None,
        "citations": message.citations,
        "source_links": message.source_links,
        "warning": message.warning,
        "error": message.error,
        "created_at": message.created_at.isoformat(),
    }


def supply_json(supply: ContextSupply) -> dict:
    return {
        "supply_id": str(supply.pk),
        "slot": supply.slot,
        "kind": supply.kind,
        "payload": supply.payload,
        "supplied_by": supply.supplied_by.get_username() if supply.supplied_by_id else None,
        "supplied_at": supply.supplied_at.isoformat(),
        "provenance": supply.provenance,
    }


def request_json(request: ContextRequest) -> dict:
    return {
        "request_id": str(request.pk),
        "user_message_id": str(request.message_id),
        "status": request.status,
        "required": request.required,
        "deadline": request.deadline.isoformat(),
        "reminded": request.reminded_at is not None,
        "supplies": [supply_json(s) for s in request.supplies.select_related("supplied_by")],
        "created_at": request.created_at.isoformat(),
    }


def conversation_json(conversation: Conversation | None, session_id) -> dict:
    """The whole history with its requests and supplies, for a page (re)load."""
    if conversation is None:
        return {"session_id": str(session_id), "messages": [], "context_requests": []}
    messages = conversation.messages.select_related("author")
    requests = conversation.context_requests.prefetch_related("supplies__supplied_by")
    return {
        "session_id": str(session_id),
        "messages": [message_json(m) for m in messages],
        "context_requests": [request_json(r) for r in requests],
    }
