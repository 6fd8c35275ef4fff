"""Server-rendered pages: the session list and a session's page with its Research and Context tabs."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from context_app.selectors import manifest_of
from llm_platform import sourcerefs
from workspaces.errors import ApplicationError
from workspaces.selectors import sessions_visible_to, visible_session
from workspaces.services import preference_for

from . import services
from .api.serializers import serialize_session
from .runs.events import serialize_run_summary


@login_required
@require_http_methods(["GET", "POST"])
def session_list(request):
    error = None
    if request.method == "POST":
        try:
            session = services.create_session(
                user=request.user, title=request.POST.get("title", ""), question=request.POST.get("question", "")
            )
            return redirect("session-page", sid=session.pk)
        except ApplicationError as exc:
            error = exc.message
    sessions = sessions_visible_to(request.user).annotate(file_count=Count("context_set__files"))
    return render(request, "research/session_list.html", {"sessions": sessions, "error": error})


@login_required
def session_page(request, sid):
    session = visible_session(request.user, sid)
    if session is None:
        raise Http404("session not found")
    preference = preference_for(request.user)
    runs = [serialize_run_summary(run) for run in session.runs.all()]
    bootstrap = {
        "session": serialize_session(session),
        "manifest": manifest_of(session.context_set),
        "ui_debug": preference.ui_debug,
        "runs": runs,
        "sourceref_pattern": sourcerefs.BROWSER_PATTERN,
    }
    return render(
        request,
        "research/session_page.html",
        {
            "session": session,
            "bootstrap": bootstrap,
            "has_runs": bool(runs),
            "run_defaults": settings.GROUNDWORK_RUN_DEFAULTS,
            "run_limits": settings.GROUNDWORK_RUN_LIMITS,
        },
    )
