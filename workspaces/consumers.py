"""The consumer base every app's websocket shares: a session's members join its group, others get 4404."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer


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
