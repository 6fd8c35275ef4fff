"""Live context status (SPEC §2.7) and run events (SPEC §4) for a session's members."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from context_app.notify import context_group_name

from .runs.events import run_group_name
from .selectors import is_member, visible_run


class ContextConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        session_id = self.scope["url_route"]["kwargs"]["sid"]
        user = self.scope.get("user")
        if user is None or not await database_sync_to_async(is_member)(user, session_id):
            await self.close(code=4404)  # before accept: the handshake is refused
            return
        self.group = context_group_name(session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def context_updated(self, event):
        await self.send_json(event)


class RunConsumer(AsyncJsonWebsocketConsumer):
    """A run's events as they happen (`{"type": "run.event", "event": {seq, type, payload, created_at}}`).

    A client that was away asks GET /api/runs/{rid}/events?after=<last seq it saw>.
    """

    async def connect(self):
        run_id = self.scope["url_route"]["kwargs"]["rid"]
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await database_sync_to_async(visible_run)(user, run_id):
            await self.close(code=4404)
            return
        self.group = run_group_name(run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_event(self, event):
        await self.send_json(event)
