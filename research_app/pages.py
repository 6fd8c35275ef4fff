"""The Research tab's forms posted without JavaScript (workspaces.page_forms): each calls the service its
JSON endpoint calls (start, cancel, update a run), then returns to the session page showing the run."""

from django.contrib import messages
from django.http import Http404

from workspaces.api.bodies import form_json
from workspaces.models import ResearchSession
from workspaces.page_forms import back_to_page, page_form

from .models import ResearchRun
from .pane import run_of
from .runs import ending, engine, update

LIMITS = ("max_depth", "max_children", "max_nodes", "token_budget")


def _showing_run(session: ResearchSession, shown: ResearchRun | None = None):
    """The page to return to: the session's Research tab showing the run the form started (or `shown`)."""

    def page(started: ResearchRun | None) -> str:
        run = started or shown
        query = f"?run={run.pk}" if run else ""
        return f"/sessions/{session.pk}/{query}#research-tab"

    return page


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


@page_form
def start(request, session):
    body = form_json(request.POST)
    limits = {name: _limit(body.get(name)) for name in LIMITS}
    question = body.get("question")
    return back_to_page(
        request,
        lambda: engine.start_run(session, request.user, question=question, limits=limits),
        _showing_run(session),
    )


@page_form
def cancel(request, session, rid):
    run = _run_of(session, rid)
    return back_to_page(request, lambda: ending.cancel_run(run), _showing_run(session, run))


@page_form
def update_report(request, session, rid):
    run = _run_of(session, rid)

    def start_update():
        new = update.start_update(run, request.user)
        if new is None:
            messages.info(request, f"Nothing to update: {update.UNCHANGED_MESSAGE}.")
        return new

    return back_to_page(request, start_update, _showing_run(session, run))
