"""Who sees which session: its team's members and staff; everyone else gets a 404."""

import uuid

from django.db.models import QuerySet

from .models import ResearchSession


def sessions_visible_to(user) -> QuerySet[ResearchSession]:
    sessions = ResearchSession.objects.select_related("team")
    if user.is_staff:
        return sessions
    return sessions.filter(team__members=user)


def as_uuid(value) -> uuid.UUID | None:
    """The UUID a client sent, or None for anything else (which then reads as "not found")."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def visible_session(user, session_id) -> ResearchSession | None:
    pk = as_uuid(session_id)
    return sessions_visible_to(user).filter(pk=pk).first() if pk else None


def is_member(user, session_id) -> bool:
    return bool(user.is_authenticated and visible_session(user, session_id))


def visible_run(user, run_id):
    from .models import ResearchRun

    pk = as_uuid(run_id)
    if pk is None:
        return None
    runs = ResearchRun.objects.select_related("session__team")
    if not user.is_staff:
        runs = runs.filter(session__team__members=user)
    return runs.filter(pk=pk).first()
