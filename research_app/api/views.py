"""Sessions and preferences (SPEC §2.6); a session's context is served by context_app.api.
Each view: decorators for auth, idempotency and access; the body calls one service and shapes the answer."""

from rest_framework.decorators import api_view
from rest_framework.response import Response

from context_app import usage
from workspaces.api.decorators import idempotent, with_body, with_session
from workspaces.selectors import sessions_visible_to
from workspaces.services import preference_for, set_spending_cap, set_ui_debug

from .. import services
from .serializers import NewSessionBody, PreferencesBody, SessionPatchBody, serialize_session


@api_view(["GET", "POST"])
@idempotent
@with_body(NewSessionBody)
def sessions(request, body=None):
    if request.method == "GET":
        visible = sessions_visible_to(request.user).select_related("context_set")
        return Response({"sessions": [serialize_session(s) for s in visible]})
    session = services.create_session(
        user=request.user, title=body.get("title", ""), question=body.get("question", ""), team_id=body.get("team")
    )
    return Response(serialize_session(session, detail=True), status=201)


@api_view(["GET", "PATCH"])
@idempotent
@with_body(PreferencesBody)
def preferences(request, body=None):
    if request.method == "PATCH":
        preference = set_ui_debug(request.user, body["ui_debug"])
    else:
        preference = preference_for(request.user)
    return Response({"ui_debug": preference.ui_debug})


@api_view(["GET", "PATCH"])
@idempotent
@with_session
@with_body(SessionPatchBody)
def session_detail(request, session, body=None):
    if request.method == "PATCH":
        session = set_spending_cap(session, body["spending_cap_usd"])
    return Response(serialize_session(session, detail=True))


@api_view(["GET"])
@with_session
def session_usage(request, session):
    """The session's cost ledger (SPEC §8 Usage): per task and per run, spent and saved."""
    return Response(usage.session_usage(session.context_set))
