"""The session chat, live: `conversation:*` events for the session's members."""

from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member

from .events import conversation_group_name


class ConversationConsumer(MemberGroupConsumer):
    def group_for(self, user, kwargs):
        return conversation_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def conversation_event(self, message):
        await self.send_json(message["event"])
