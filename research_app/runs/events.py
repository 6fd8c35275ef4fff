"""Run events: numbered, stored, pushed to the run's websocket group (SPEC §4).

And, for the session's viewers, a run's creation and each change of its status
(`run.created`, `run.status`) on the session's runs group (`/ws/sessions/{sid}/runs/`).
"""

from django.db import transaction
from django.db.models import F
from django.urls import reverse

from workspaces import live

from ..models import ResearchRun, RunEvent


def run_group_name(run_id) -> str:
    return f"run.{run_id}"


def event_json(event: RunEvent) -> dict:
    return {
        "seq": event.seq,
        "type": event.type,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
    }


class RunStopped(Exception):
    """The run left the status a step works under (cancelled, failed, or moved on): the step stops, storing nothing."""

    def __init__(self, run_id, doing: str):
        super().__init__(f"run {run_id} is no longer in the state for {doing}")


def ensure_status(run_id, status: str, doing: str = "this step") -> None:
    """Raise RunStopped unless the run is `status` now (checked before each model call)."""
    if not ResearchRun.objects.filter(pk=run_id, status=status).exists():
        raise RunStopped(run_id, doing)


def emit(run_id, type: str, *, while_status: str | None = None, **payload) -> RunEvent:
    """Store the run's next event and push it once the transaction commits.

    With `while_status`, only while the run is in that status: the seq's UPDATE … WHERE status
    holds the run's row, so a cancel commits either before (RunStopped, nothing stored, the
    caller's transaction rolled back) or after this event, never an event after run_cancelled.
    """
    with transaction.atomic():
        runs = ResearchRun.objects.filter(pk=run_id)
        if while_status is not None:
            runs = runs.filter(status=while_status)
        if not runs.update(last_seq=F("last_seq") + 1) and while_status is not None:
            raise RunStopped(run_id, type)
        seq = ResearchRun.objects.values_list("last_seq", flat=True).get(pk=run_id)
        event = RunEvent.objects.create(run_id=run_id, seq=seq, type=type, payload=payload)
        live.push_on_commit(run_group_name(run_id), {"type": "run.event", "event": event_json(event)})
    return event


def session_runs_group_name(session_id) -> str:
    return f"session.{session_id}.runs"


def announce(run_id, kind: str = "run.status") -> None:
    """Once the transaction commits, tell the session's viewers: `run.created` or `run.status`,
    with the run's summary as it is then (the shape of GET /api/sessions/{sid}/runs)."""
    # robust: a failure to read the run is logged; the run is stored, and a viewer sees it on its next load.
    transaction.on_commit(lambda: _announce(run_id, kind), robust=True)


def _announce(run_id, kind: str) -> None:
    run = ResearchRun.objects.select_related("created_by").filter(pk=run_id).first()
    if run is None:
        return
    message = {"type": kind, "run": serialize_run_summary(run)}
    if kind == "run.created":
        message["by"] = run.created_by.get_username() if run.created_by else None
    live.push(session_runs_group_name(run.session_id), {"type": "session.run", "message": message})


def serialize_run_summary(run: ResearchRun) -> dict:
    """A run in short: the rows of GET /api/sessions/{sid}/runs and of the session's live run list."""
    return {
        "run_id": str(run.id),
        "session_id": str(run.session_id),
        "question": run.question,
        "status": run.status,
        "created_at": run.created_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "url": reverse("run-detail", kwargs={"rid": run.id}),
        "updates_run": str(run.updates_run_id) if run.updates_run_id else None,  # an update of that run's report
    }
