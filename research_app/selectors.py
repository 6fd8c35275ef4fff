"""Who sees which session: its team's members and staff; everyone else gets a 404."""

import uuid

from django.db.models import QuerySet

from .models import ResearchSession


def sessions_visible_to(user) -> QuerySet[ResearchSession]:
    sessions = ResearchSession.objects.select_related("team")
    if user.is_staff:
        return sessions
    return sessions.filter(team__members=user)


def visible_session(user, session_id) -> ResearchSession | None:
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        return None
    return sessions_visible_to(user).filter(pk=pk).first()


def is_member(user, session_id) -> bool:
    return bool(user.is_authenticated and visible_session(user, session_id))


def visible_run(user, run_id):
    from .models import ResearchRun

    try:
        pk = uuid.UUID(str(run_id))
    except ValueError:
        return None
    runs = ResearchRun.objects.select_related("session__team")
    if not user.is_staff:
        runs = runs.filter(session__team__members=user)
    return runs.filter(pk=pk).first()
