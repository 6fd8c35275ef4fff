"""Live context status (SPEC §2.7): `context.updated` with the whole manifest, for a session's members
(API clients), and the file list's rendered fragments for the session page."""

from channels.db import database_sync_to_async

from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member, visible_session

from .files_pane import context_stamp, files_fragments
from .notify import context_group_name
from .selectors import manifest_of
from .usage import usage_fragments


class ContextConsumer(MemberGroupConsumer):
    def group_for(self, user, kwargs):
        return context_group_name(kwargs["sid"]) if is_member(user, kwargs["sid"]) else None

    async def context_updated(self, event):
        await self.send_json(event)


class FilesPaneConsumer(MemberGroupConsumer):
    """The file list after each `context.updated` (`{"type": "fragments", "html", "manifest": <its stamp>}`),
    rendered from the manifest the update carries, and the Usage panel as the ledger is then. Manifests are
    numbered in the order the server read them (manifest_seq): one read earlier that arrives later is older
    news, and is not rendered (a chip never moves back from Ready to Parsing)."""

    def group_for(self, user, kwargs):
        session = visible_session(user, kwargs["sid"])
        self.context_set = session.context_set if session is not None else None
        return context_group_name(kwargs["sid"]) if session is not None else None

    async def connect(self):
        self.shown_seq = -1
        await super().connect()
        if hasattr(self, "group"):  # what changed while the page loaded, or while it was away
            await self.send_manifest(await database_sync_to_async(manifest_of)(self.context_set))

    async def context_updated(self, event):
        await self.send_manifest(event)

    async def send_manifest(self, manifest: dict):
        if manifest["manifest_seq"] <= self.shown_seq:
            return
        self.shown_seq = manifest["manifest_seq"]
        html = await database_sync_to_async(self.render)(manifest)
        await self.send_json({"type": "fragments", "html": html, "manifest": context_stamp(manifest)})

    def render(self, manifest: dict) -> str:
        return files_fragments(manifest) + usage_fragments(self.context_set)
