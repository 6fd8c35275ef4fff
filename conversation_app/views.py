"""Chat endpoints (SPEC §5): decorators for auth and idempotency; each body checks membership, calls one service."""

from rest_framework.decorators import api_view
from rest_framework.response import Response

from research_app.api.decorators import idempotent
from research_app.api.errors import error
from research_app.selectors import visible_session

from . import services
from .models import Conversation
from .serializers import conversation_json


def _session_of(request, data):
    session_id = data.get("session_id") if isinstance(data, dict) else None
    return visible_session(request.user, session_id) if session_id else None


@api_view(["GET", "POST"])
@idempotent
def conversation(request):
    if request.method == "GET":
        session = _session_of(request, request.query_params)
        if session is None:
            return error("session not found", 404)
        return Response(conversation_json(Conversation.objects.filter(session=session).first(), session.pk))
    body = request.data if isinstance(request.data, dict) else {}
    session = _session_of(request, body)
    if session is None:
        return error("session not found", 404)
    message, force = body.get("message"), body.get("force", False)
    if not isinstance(message, str) or not isinstance(force, bool):
        return error('body must be {"session_id", "message": "…", "force"?: true|false}', 400)
    return Response(services.post_message(session, request.user, message, force=force))


@api_view(["POST"])
@idempotent
def context_supply(request):
    body = request.data if isinstance(request.data, dict) else {}
    session = _session_of(request, body)
    if session is None:
        return error("session not found", 404)
    return Response(services.supply_context(session, request.user, body.get("request_id"), body.get("payloads")))
