"""Run events: numbered, stored, pushed to the run's websocket group (SPEC §4).

And, for the session's viewers, a run's creation and each change of its status
(`run.created`, `run.status`) on the session's runs group (`/ws/sessions/{sid}/runs/`).
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from ..models import ResearchRun, RunEvent

logger = logging.getLogger(__name__)


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
        transaction.on_commit(lambda: _push(run_id, event))
    return event


def _push(run_id, event: RunEvent) -> None:
    try:
        async_to_sync(get_channel_layer().group_send)(
            run_group_name(run_id), {"type": "run.event", "event": event_json(event)}
        )
    except Exception:  # the event is stored; a watcher catches up with ?after=N
        logger.exception("could not push event %s of run %s", event.seq, run_id)


def session_runs_group_name(session_id) -> str:
    return f"session.{session_id}.runs"


def announce(run_id, kind: str = "run.status") -> None:
    """Once the transaction commits, tell the session's viewers: `run.created` or `run.status`,
    with the run's summary as it is then (the shape of GET /api/sessions/{sid}/runs)."""
    transaction.on_commit(lambda: _announce(run_id, kind))


def _announce(run_id, kind: str) -> None:
    from ..api.run_serializers import serialize_run_summary

    try:
        run = ResearchRun.objects.select_related("created_by").filter(pk=run_id).first()
        if run is None:
            return
        message = {"type": kind, "run": serialize_run_summary(run)}
        if kind == "run.created":
            message["by"] = run.created_by.get_username() if run.created_by else None
        async_to_sync(get_channel_layer().group_send)(
            session_runs_group_name(run.session_id), {"type": "session.run", "message": message}
        )
    except Exception:  # the run is stored; a viewer that missed this sees it on its next load
        logger.exception("could not announce %s of run %s", kind, run_id)
