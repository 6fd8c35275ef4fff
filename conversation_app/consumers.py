"""The session chat, live: `conversation:*` events for the session's members (API clients), and the
chat pane's rendered fragments for its page."""

from channels.db import database_sync_to_async

from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member, visible_session

from .events import conversation_group_name
from .fragments import chat_fragments


class ConversationConsumer(MemberGroupConsumer):
    def group_for(self, user, kwargs):
        return conversation_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def conversation_event(self, message):
        await self.send_json(message["event"])


class ChatPaneConsumer(MemberGroupConsumer):
    """The chat pane as it is after each event (`{"type": "fragments", "html"}`), from the templates the
    page was rendered with; `conversation:delta` events pass as they are (the page streams them into a
    draft). One consumer renders its events in turn, each from the rows as they are then: a later
    fragment is never older than an earlier one."""

    def group_for(self, user, kwargs):
        self.session = visible_session(user, kwargs["sid"])
        return conversation_group_name(kwargs["sid"]) if self.session is not None else None

    async def connect(self):
        await super().connect()
        if hasattr(self, "group"):
            await self.send_fragments()  # what changed while the page loaded, or while it was away

    async def conversation_event(self, message):
        if message["event"]["type"] == "conversation:delta":
            await self.send_json(message["event"])
        else:
            await self.send_fragments()

    async def send_fragments(self):
        await self.send_json({"type": "fragments", "html": await database_sync_to_async(chat_fragments)(self.session)})
