"""The session chat, live: `conversation:*` events for the session's members (API clients), and the
chat pane's rendered fragments for its page."""

from channels.db import database_sync_to_async

from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member, visible_session

from .events import conversation_group_name
from .fragments import chat_fragments
from .selectors import message_ids


class ConversationConsumer(MemberGroupConsumer):
    def group_for(self, user, kwargs):
        return conversation_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def conversation_event(self, message):
        await self.send_json(message["event"])


class ChatPaneConsumer(MemberGroupConsumer):
    """The chat pane after each event (`{"type": "fragments", "html"}`), from the templates the page was
    rendered with; `conversation:delta` events pass as they are (the page streams them into a draft).

    A fragment shows the messages this page has been told of, in the order it was told: those there
    when it connected and those a `conversation:message` announced since. Rendering reads the rows
    when it runs, which on a busy server can be after later events were stored: an answer rendered
    before its own deltas reach the page would leave them nothing to draw (the draft never shows)."""

    def group_for(self, user, kwargs):
        self.session = visible_session(user, kwargs["sid"])
        return conversation_group_name(kwargs["sid"]) if self.session is not None else None

    async def connect(self):
        await super().connect()
        if hasattr(self, "group"):
            self.announced = await database_sync_to_async(message_ids)(self.session)
            await self.send_fragments()  # what changed while the page loaded, or while it was away

    async def conversation_event(self, message):
        event = message["event"]
        if event["type"] == "conversation:delta":
            await self.send_json(event)
            return
        if event["type"] == "conversation:message":
            self.announced.add(event["message"]["message_id"])
        await self.send_fragments()

    async def send_fragments(self):
        html = await database_sync_to_async(chat_fragments)(self.session, self.announced)
        await self.send_json({"type": "fragments", "html": html})
