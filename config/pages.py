"""A session's page: the Research tab (research_app), the chat beside it (conversation_app) and the
Context tab (context_app), composed here at the top of the stack, where every app may be read."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from context_app.digest_view import Choice, digest_view
from context_app.files_pane import context_stamp, files_pane
from context_app.selectors import manifest_of
from context_app.usage import session_usage
from conversation_app.selectors import chat_pane
from research_app.fragments import research_fragments
from research_app.pane import research_pane, run_of
from workspaces.selectors import visible_session
from workspaces.services import preference_for


@login_required
def session_page(request, sid):
    session = visible_session(request.user, sid)
    if session is None:
        raise Http404("session not found")
    # The Research tab shows the run ?run= names (another session's, or none: the latest); with
    # ?fragment, its fragments alone (research_tab.js shows another run without leaving the page).
    research = research_pane(session, run_of(session, request.GET.get("run")))
    if "fragment" in request.GET:
        return HttpResponse(research_fragments(research))
    preference = preference_for(request.user)
    manifest = manifest_of(session.context_set)
    return render(
        request,
        "research/session_page.html",
        {
            "session": session,
            "session_id": str(session.pk),
            "pane": chat_pane(session),
            "files_pane": files_pane(manifest),
            "usage": session_usage(session.context_set),
            "digest_view_html": render_to_string(
                "context/_digest_view.html#view",
                digest_view(session, request.user, Choice()) if preference.ui_debug else {"choice": Choice(tab="")},
            ),
            "context_stamp": context_stamp(manifest),  # the newest manifest context_tab.js knows at first
            "ui_debug": preference.ui_debug,
            "has_runs": bool(research.runs),
            "research": research,
            "run_defaults": settings.GROUNDWORK_RUN_DEFAULTS,
            "run_limits": settings.GROUNDWORK_RUN_LIMITS,
        },
    )
