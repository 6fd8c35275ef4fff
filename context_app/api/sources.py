"""`GET /api/sources/{version}/{span}`: the one resolver of citations (context_app.provenance).

A version is visible to the members of the team whose library it belongs to (its
cache scope) and to staff; anyone else, an unknown version or an unknown span gets
404 `{"error": "source not found"}`. A span read from a scan says so (`read_by: "ocr"`,
`confidence`: its page's mean word confidence, 0–100). Two queries whatever the version holds: the
user's teams, then the version with its origin session.
"""

from rest_framework.decorators import api_view
from rest_framework.response import Response

from workspaces.api.errors import error
from workspaces.models import Team
from workspaces.selectors import parse_uuid
from workspaces.services import team_cache_scope

from ..models import FileText
from ..provenance import origin_json

NOT_FOUND = "source not found"


def visible_versions(user):
    versions = FileText.objects.select_related("context_set__session")
    if user.is_staff:
        return versions
    return versions.filter(scope__in=[team_cache_scope(team) for team in Team.objects.filter(members=user)])


@api_view(["GET"])
def source_detail(request, version, span):
    pk = parse_uuid(version)
    text = visible_versions(request.user).filter(version=pk).first() if pk else None
    found = next((s for s in text.spans if s.get("span_id") == span), None) if text else None
    if found is None:
        return error(NOT_FOUND, 404)
    return Response(source_json(text, found))


def source_json(text: FileText, span: dict) -> dict:
    session = text.context_set.session if text.context_set_id else None
    return {
        "version": str(text.version),
        **span_json(span),
        "filename": text.filename,
        "format": text.format,
        "extracted_text_hash": text.extracted_text_hash,
        "created_at": text.created_at.isoformat(),
        "status": text.status,
        "superseded_at": text.superseded_at.isoformat() if text.superseded_at else None,
        "deleted_at": text.deleted_at.isoformat() if text.deleted_at else None,
        "origin_session": origin_json(session.pk, session.title) if session else origin_json(None, None),
        "spans": [span_json(s) for s in text.spans],
    }


def span_json(span: dict) -> dict:
    shown = {"span_id": span["span_id"], "text": span.get("text", ""), "locator": span.get("locator", "")}
    if span.get("read_by"):  # its page was a scan: "read_by": "ocr", and the page's mean word confidence
        shown["read_by"] = span["read_by"]
        shown["confidence"] = span.get("confidence")
    return shown
