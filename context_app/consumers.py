"""Live context status (SPEC §2.7): `context.updated` with the whole manifest, for a session's members."""

from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member

from .notify import context_group_name


class ContextConsumer(MemberGroupConsumer):
    def group_for(self, user, kwargs):
        return context_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def context_updated(self, event):
        await self.send_json(event)
