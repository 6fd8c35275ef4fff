"""The session chat, live: `conversation:*` events for the session's members."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from research_app.selectors import is_member

from .events import conversation_group_name


class ConversationConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        session_id = self.scope["url_route"]["kwargs"]["sid"]
        user = self.scope.get("user")
        if user is None or not await database_sync_to_async(is_member)(user, session_id):
            await self.close(code=4404)
            return
        self.group = conversation_group_name(session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def conversation_event(self, message):
        await self.send_json(message["event"])
