"""The chat's forms posted without JavaScript: each calls the service its JSON endpoint calls, then
returns to the session page (303), with the refusal's message shown there. With JavaScript the same
forms post to the JSON API instead (groundwork.js enhanceForms)."""

from django.contrib import messages
from django.shortcuts import redirect
from rest_framework.decorators import api_view

from workspaces.api.bodies import form_json
from workspaces.api.decorators import idempotent, with_session
from workspaces.errors import ApplicationError

from . import services


def _back_to_chat(request, session, action) -> object:
    try:
        action()
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect(f"/sessions/{session.pk}/#chat-pane", permanent=False)


@api_view(["POST"])
@idempotent
@with_session
def ask(request, session):
    body = form_json(request.POST)
    return _back_to_chat(
        request,
        session,
        lambda: services.post_message(session, request.user, body.get("message", ""), force=bool(body.get("force"))),
    )


@api_view(["POST"])
@idempotent
@with_session
def supply(request, session):
    body = form_json(request.POST)
    return _back_to_chat(
        request,
        session,
        lambda: services.supply_context(session, request.user, body.get("request_id"), body.get("payloads")),
    )
