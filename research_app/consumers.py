"""Run events (SPEC §4) for a session's members."""

from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member

from .runs.events import run_group_name, session_runs_group_name
from .selectors import visible_run


class RunConsumer(MemberGroupConsumer):
    """A run's events as they happen (`{"type": "run.event", "event": {seq, type, payload, created_at}}`).

    A client that was away asks GET /api/runs/{rid}/events?after=<last seq it saw>.
    """

    def group_for(self, user, kwargs):
        return run_group_name(kwargs["rid"]) if visible_run(user, kwargs["rid"]) else None

    async def run_event(self, event):
        await self.send_json(event)


class SessionRunsConsumer(MemberGroupConsumer):
    """The session's runs as they start and change status, for every member watching the session:
    `{"type": "run.created", "run": <summary>, "by": "<username>"}` and `{"type": "run.status", "run": <summary>}`.

    A run's own events are on its socket (`/ws/runs/{rid}/`).
    """

    def group_for(self, user, kwargs):
        return session_runs_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def session_run(self, event):
        await self.send_json(event["message"])
