"""Research run endpoints (SPEC §4). Each view: decorators for auth, idempotency and access; one engine call."""

from django.http import HttpResponse
from rest_framework.decorators import api_view
from rest_framework.response import Response

from workspaces.api.decorators import idempotent, with_body, with_session
from workspaces.api.errors import error

from .. import export
from ..runs import ending, engine, recovery, update
from ..runs.events import serialize_run_summary
from ..runs.report import report_json
from .decorators import any_accept, with_report, with_run
from .run_serializers import NewRunBody, serialize_events, serialize_run

MAX_EVENTS_PER_PAGE = 500


@api_view(["GET", "POST"])
@idempotent
@with_session
@with_body(NewRunBody)
def session_runs(request, session, body=None):
    if request.method == "GET":
        return Response({"runs": [serialize_run_summary(run) for run in session.runs.all()]})
    limits = dict(body)
    run = engine.start_run(session, request.user, question=limits.pop("question", None), limits=limits)
    return Response(serialize_run(run), status=201)


@api_view(["GET"])
@with_run
def run_detail(request, run):
    return Response(serialize_run(run))


@api_view(["GET"])
@with_run
def run_events(request, run):
    try:
        after = int(request.query_params.get("after", 0))
        limit = int(request.query_params.get("limit", MAX_EVENTS_PER_PAGE))
    except ValueError:
        return error("after and limit must be integers", 400)
    if after < 0 or not 1 <= limit <= MAX_EVENTS_PER_PAGE:
        return error(f"after must be ≥ 0 and limit from 1 to {MAX_EVENTS_PER_PAGE}", 400)
    return Response(serialize_events(run, after, limit))


@api_view(["GET"])
@with_run
@with_report
def run_report(request, run):
    return Response({"run_id": str(run.id), "status": run.status, "report": report_json(run.report)})


@api_view(["GET"])
@any_accept
@with_run
@with_report
def run_report_file(request, run, kind):
    """report.md, report.docx, report.pdf: the report as a file to download (SPEC §9)."""
    exported = export.export_report(run, kind, request.user, request.build_absolute_uri)
    response = HttpResponse(exported.content, content_type=exported.content_type)
    response["Content-Disposition"] = exported.content_disposition
    response["Cache-Control"] = "private, no-cache"  # "sources changed" is read anew each time
    return response


@api_view(["POST"])
@idempotent
@with_run
def run_cancel(request, run):
    return Response(serialize_run(ending.cancel_run(run)))


@api_view(["POST"])
@idempotent
@with_run
def run_resume(request, run):
    if run.is_finished:
        return error(f"the run is {run.status}; start a new run instead", 409)
    recovery.resume_run(run.pk)
    return Response(serialize_run(run), status=202)


@api_view(["POST"])
@idempotent
@with_run
def run_update(request, run):
    """Update the report against the current versions of its cited files: a new run (202), or 200 when
    no cited source changed (no run, no model call); 409 while the run has not finished."""
    new = update.start_update(run, request.user)
    if new is None:
        return Response({"status": "unchanged", "message": update.UNCHANGED_MESSAGE, "run_id": None}, status=200)
    return Response(serialize_run(new), status=202)
