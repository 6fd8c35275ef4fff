"""The chat's forms posted without JavaScript (workspaces.page_forms): each calls the service its JSON
endpoint calls, then returns to the chat."""

from workspaces.api.bodies import form_json
from workspaces.page_forms import back_to_page, page_form

from . import services


def _chat(session) -> str:
    return f"/sessions/{session.pk}/#chat-pane"


@page_form
def ask(request, session):
    body = form_json(request.POST)
    message, force = body.get("message", ""), bool(body.get("force"))
    return back_to_page(
        request, lambda: services.post_message(session, request.user, message, force=force), _chat(session)
    )


@page_form
def supply(request, session):
    body = form_json(request.POST)
    request_id, payloads = body.get("request_id"), body.get("payloads")
    return back_to_page(
        request, lambda: services.supply_context(session, request.user, request_id, payloads), _chat(session)
    )
