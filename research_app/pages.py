"""The Research tab's forms posted without JavaScript: each calls the service its JSON endpoint calls
(start, cancel, update a run), then returns to the session page showing the run (303), with a refusal's
message shown there. With JavaScript the same forms post to the JSON API instead (groundwork.js)."""

from collections.abc import Callable

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from rest_framework.decorators import api_view

from workspaces.api.bodies import form_json
from workspaces.api.decorators import idempotent, with_session
from workspaces.errors import ApplicationError
from workspaces.models import ResearchSession

from .models import ResearchRun
from .pane import run_of
from .runs import ending, engine, update

LIMITS = ("max_depth", "max_children", "max_nodes", "token_budget")


def _back_to_run(
    request, session: ResearchSession, action: Callable[[], ResearchRun | None], shown: ResearchRun | None
):
    """Does `action`; the page then shows the run it started (or `shown`), its refusal as a message."""
    try:
        started = action()
    except ApplicationError as exc:
        messages.error(request, exc.message)
        started = None
    run = started or shown
    query = f"?run={run.pk}" if run else ""
    return redirect(f"/sessions/{session.pk}/{query}#research-tab", permanent=False)


def _limit(value):
    """A number field as the API takes it: an integer, nothing when left empty (the default), else as
    typed (the engine says what is wrong with it)."""
    if value in (None, ""):
        return None
    return int(value) if str(value).strip().lstrip("-").isdigit() else value


def _run_of(session, rid) -> ResearchRun:
    run = run_of(session, rid)
    if run is None:
        raise Http404("run not found")
    return run


@api_view(["POST"])
@idempotent
@with_session
def start(request, session):
    body = form_json(request.POST)
    limits = {name: _limit(body.get(name)) for name in LIMITS}
    return _back_to_run(
        request,
        session,
        lambda: engine.start_run(session, request.user, question=body.get("question"), limits=limits),
        None,
    )


@api_view(["POST"])
@idempotent
@with_session
def cancel(request, session, rid):
    run = _run_of(session, rid)
    return _back_to_run(request, session, lambda: ending.cancel_run(run), run)


@api_view(["POST"])
@idempotent
@with_session
def update_report(request, session, rid):
    run = _run_of(session, rid)

    def start_update():
        new = update.start_update(run, request.user)
        if new is None:
            messages.info(request, f"Nothing to update: {update.UNCHANGED_MESSAGE}.")
        return new

    return _back_to_run(request, session, start_update, run)
