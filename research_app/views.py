"""The session list (a session's page, which composes every app's panes, is config.pages)."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from workspaces.errors import ApplicationError
from workspaces.selectors import sessions_visible_to

from . import services


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
