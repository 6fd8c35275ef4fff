"""Who sees which session: its team's members and staff; everyone else gets a 404."""

import uuid

from django.db.models import QuerySet

from .models import ResearchSession


def parse_uuid(value) -> uuid.UUID | None:
    """The UUID a client sent, or None for anything else (which then reads as "not found")."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def sessions_visible_to(user) -> QuerySet[ResearchSession]:
    sessions = ResearchSession.objects.select_related("team")
    if user.is_staff:
        return sessions
    return sessions.filter(team__members=user)


def visible_session(user, session_id) -> ResearchSession | None:
    pk = parse_uuid(session_id)
    return sessions_visible_to(user).filter(pk=pk).first() if pk else None


def is_member(user, session_id) -> bool:
    return bool(user.is_authenticated and visible_session(user, session_id))
