"""Teams, the demo login, per-user preferences and a session's spending cap."""

from decimal import Decimal

from django.contrib.auth import get_user_model

from .models import ResearchSession, Team, UserPreference


def team_cache_scope(team: Team) -> str:
    """The scope a team's digests and library are shared in (one library per team)."""
    return f"team:{team.pk}"


def ensure_demo_user(username: str = "demo", password: str = "demo", team_name: str = "Demo"):
    """The login `make run` prints: user demo/demo in team Demo."""
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        user.save()
    team, _ = Team.objects.get_or_create(name=team_name)
    team.members.add(user)
    return user, team


def preference_for(user) -> UserPreference:
    preference, _ = UserPreference.objects.get_or_create(user=user)
    return preference


def set_ui_debug(user, ui_debug: bool) -> UserPreference:
    preference = preference_for(user)
    preference.ui_debug = ui_debug
    preference.save(update_fields=["ui_debug"])
    return preference


def set_spending_cap(session: ResearchSession, cap: Decimal | None) -> ResearchSession:
    """The dollars the session's model calls may cost in all; None falls back to the deployment's default."""
    session.spending_cap_usd = cap
    session.save(update_fields=["spending_cap_usd", "updated_at"])
    return session
