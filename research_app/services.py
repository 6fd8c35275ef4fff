"""Teams and research sessions."""

from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from context_app.errors import ApplicationError
from context_app.services import create_context_set

from .models import ResearchSession, Team


def team_cache_scope(team: Team) -> str:
    return f"team:{team.pk}"


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


def ensure_demo_user(username: str = "demo", password: str = "demo", team_name: str = "Demo"):
    """The login `make run` prints: user demo/demo in team Demo."""
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        user.save()
    team, _ = Team.objects.get_or_create(name=team_name)
    team.members.add(user)
    return user, team


def preference_for(user):
    from .models import UserPreference

    preference, _ = UserPreference.objects.get_or_create(user=user)
    return preference


def set_ui_debug(user, ui_debug: bool):
    preference = preference_for(user)
    preference.ui_debug = ui_debug
    preference.save(update_fields=["ui_debug"])
    return preference


def set_spending_cap(session: ResearchSession, cap: Decimal | None) -> ResearchSession:
    """The dollars the session's model calls may cost in all; None falls back to the deployment's default."""
    session.spending_cap_usd = cap
    session.save(update_fields=["spending_cap_usd", "updated_at"])
    return session
