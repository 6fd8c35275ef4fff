"""Run events: numbered, stored, pushed to the run's websocket group (SPEC §4)."""

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
