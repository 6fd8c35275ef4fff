"""Creating a research session: its row and its (empty) context set, in one transaction."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from context_app.services import create_context_set
from workspaces.errors import ApplicationError
from workspaces.models import ResearchSession, Team
from workspaces.services import team_cache_scope


def create_session(*, user: AbstractBaseUser, title: str, question: str = "", team_id=None) -> ResearchSession:
    title = (title or "").strip()
    if not title:
        raise ApplicationError("title is required")
    if len(title) > 200:
        raise ApplicationError("title is longer than 200 characters")
    teams = Team.objects.filter(members=user)
    if team_id is not None:
        team = teams.filter(pk=team_id).first() if str(team_id).isdigit() else None
        if team is None:
            raise ApplicationError("team not found", 404)
    else:
        team = teams.order_by("pk").first()
        if team is None:
            raise ApplicationError("you are not a member of any team; ask an admin to add you to one")
    with transaction.atomic():
        session = ResearchSession.objects.create(team=team, title=title, question=question or "", created_by=user)
        create_context_set(session.pk, team_cache_scope(team))
    return session
