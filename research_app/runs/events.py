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


def emit(run_id, type: str, **payload) -> RunEvent:
    """Store the run's next event and push it once the transaction commits."""
    with transaction.atomic():
        ResearchRun.objects.filter(pk=run_id).update(last_seq=F("last_seq") + 1)
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
