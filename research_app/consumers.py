"""Live context status (SPEC §2.7) and run events (SPEC §4) for a session's members."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from context_app.notify import context_group_name

from .runs.events import run_group_name
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


class ContextConsumer(MemberGroupConsumer):
    def group_for(self, user, kwargs):
        return context_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def context_updated(self, event):
        await self.send_json(event)


class RunConsumer(MemberGroupConsumer):
    """A run's events as they happen (`{"type": "run.event", "event": {seq, type, payload, created_at}}`).

    A client that was away asks GET /api/runs/{rid}/events?after=<last seq it saw>.
    """

    def group_for(self, user, kwargs):
        return run_group_name(kwargs["rid"]) if visible_run(user, kwargs["rid"]) else None

    async def run_event(self, event):
        await self.send_json(event)
