"""Who sees which session: its team's members and staff; everyone else gets a 404."""

import uuid
from collections.abc import Iterator

from django.db.models import QuerySet

from context_app.provenance import versions_in

from .models import ResearchRun, ResearchSession


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
    pk = as_uuid(run_id)
    if pk is None:
        return None
    runs = ResearchRun.objects.select_related("session__team")
    if not user.is_staff:
        runs = runs.filter(session__team__members=user)
    return runs.filter(pk=pk).first()


def cited_source_versions() -> Iterator[str]:
    """The text versions runs cite (context_app.provenance retention): reports' references and
    paragraphs, nodes' results and findings, and the bundles of runs still under way (their
    report will pin its SourceRefs through them)."""
    from .models import ResearchNode

    for report in ResearchRun.objects.filter(report__isnull=False).values_list("report", flat=True).iterator():
        yield from versions_in(report)
    for results, findings in ResearchNode.objects.values_list("results", "findings").iterator():
        yield from versions_in(results)
        yield from versions_in(findings)
    open_runs = ResearchRun.objects.exclude(status__in=ResearchRun.FINISHED).filter(context_bundle__isnull=False)
    for bundle in open_runs.values_list("context_bundle", flat=True).iterator():
        yield from (v for v in (bundle or {}).get("source_versions", {}).values() if v)
