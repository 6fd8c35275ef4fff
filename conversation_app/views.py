"""Chat endpoints (SPEC §5): decorators for auth, idempotency, the session the request names and the body;
each view calls one service."""

from rest_framework.decorators import api_view
from rest_framework.response import Response

from workspaces.api.decorators import idempotent, with_body, with_session_id

from . import services
from .models import Conversation
from .serializers import MessageBody, conversation_json


@api_view(["GET", "POST"])
@idempotent
@with_session_id
@with_body(MessageBody)
def conversation(request, session, body=None):
    if request.method == "GET":
        return Response(conversation_json(Conversation.objects.filter(session=session).first(), session.pk))
    return Response(services.post_message(session, request.user, body["message"], force=body["force"]))


@api_view(["POST"])
@idempotent
@with_session_id
def context_supply(request, session):
    body = request.data  # an object: with_session_id found its session_id in it; the service checks the rest
    return Response(services.supply_context(session, request.user, body.get("request_id"), body.get("payloads")))
