from decimal import Decimal

from django.db.models import Count
from rest_framework import serializers

from context_app.models import DigestStatus
from workspaces.api.bodies import AsSent, Body, Boolean, Text
from workspaces.models import ResearchSession

from ..runs.events import serialize_run_summary


class PreferencesBody(Body):
    """PATCH /api/me/preferences"""

    invalid_message = 'body must be {"ui_debug": true|false}'
    ui_debug = Boolean()


class SessionPatchBody(Body):
    """PATCH /api/sessions/{sid}: the session's spending cap in dollars (null: the deployment's default)."""

    refuse_unknown = True
    invalid_message = 'body must be {"spending_cap_usd": dollars ≥ 0 (e.g. "2.50") or null}'
    spending_cap_usd = serializers.DecimalField(max_digits=12, decimal_places=4, min_value=Decimal(0), allow_null=True)


class NewSessionBody(Body):
    """POST /api/sessions. The title's rules are create_session's (the session list page uses them too)."""

    # No object, or a title that is not a string (7 was a 500 before): no title.
    not_an_object = "title is required"
    title = Text(required=False, allow_null=True, error_messages={"invalid": "title is required"})
    # Stored as text whatever its JSON type, as before this was a serializer (refusing it would change the API).
    question = AsSent(required=False, allow_null=True)
    team = AsSent(required=False, allow_null=True)


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
        cap = session.spending_cap_usd
        data["spending_cap_usd"] = str(cap) if cap is not None else None
        data["context_processing"] = context_processing(session)
        data["runs"] = [serialize_run_summary(run) for run in session.runs.all()]
    return data
