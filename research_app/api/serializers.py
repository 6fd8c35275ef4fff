from django.db.models import Count

from context_app.models import DigestStatus

from ..models import ResearchSession
from .run_serializers import serialize_run_summary


def context_processing(session: ResearchSession) -> dict:
    context_set = session.context_set
    counts = dict(
        context_set.files.values_list("digest_status").annotate(n=Count("id")).values_list("digest_status", "n")
    )
    return {
        "context_set_id": str(context_set.id),
        "revision": context_set.revision,
        "aggregate_digest_status": context_set.aggregate_digest_status,
        "aggregate_revision": context_set.aggregate_revision,
        "files_total": sum(counts.values()),
        "files_by_status": {status.value: counts.get(status.value, 0) for status in DigestStatus},
    }


def serialize_session(session: ResearchSession, detail: bool = False) -> dict:
    data = {
        "session_id": str(session.id),
        "title": session.title,
        "question": session.question,
        "team": {"id": session.team_id, "name": session.team.name},
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
        "context_revision": session.context_set.revision,
    }
    if detail:
        data["context_processing"] = context_processing(session)
        data["runs"] = [serialize_run_summary(run) for run in session.runs.all()]
    return data
