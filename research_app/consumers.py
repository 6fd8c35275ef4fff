"""Run events (SPEC §4) for a session's members, and the consumer base every app's websocket shares."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .runs.events import run_group_name, session_runs_group_name
from .selectors import is_member, visible_run


class MemberGroupConsumer(AsyncJsonWebsocketConsumer):
    """Joins the one group the URL names when the user may watch it; refuses the handshake (4404) otherwise."""

    def group_for(self, user, kwargs: dict) -> str | None:
        """The group to join, or None when this user may not watch it (runs in a thread: it may query)."""
        raise NotImplementedError

    async def connect(self):
        user = self.scope.get("user")
        group = None
        if user is not None and user.is_authenticated:
            group = await database_sync_to_async(self.group_for)(user, self.scope["url_route"]["kwargs"])
        if group is None:
            await self.close(code=4404)  # before accept: the handshake is refused
            return
        self.group = group
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)


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
