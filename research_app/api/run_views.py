"""Research run endpoints (SPEC §4). Each view: decorators for auth, idempotency and access; one engine call."""

from rest_framework.decorators import api_view
from rest_framework.response import Response

from workspaces.api.decorators import idempotent, with_body, with_session
from workspaces.api.errors import error

from ..runs import ending, engine, recovery
from ..runs.events import serialize_run_summary
from ..runs.report import report_json
from .decorators import with_run
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
def run_report(request, run):
    if run.report is None:
        return error(f"the run has no report yet (status: {run.status})", 404, run_status=run.status)
    return Response({"run_id": str(run.id), "status": run.status, "report": report_json(run.report)})


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
