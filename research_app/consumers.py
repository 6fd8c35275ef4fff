"""Run events (SPEC §4) for a session's members: JSON for API clients, and the Research tab's
rendered fragments for its page."""

from urllib.parse import parse_qs

from channels.db import database_sync_to_async

from context_app.notify import context_group_name
from context_app.usage import usage_fragments
from workspaces.consumers import MemberGroupConsumer
from workspaces.selectors import is_member, visible_session

from .fragments import LIST_FRAGMENTS, research_fragments
from .pane import research_pane, run_of
from .runs.events import run_group_name, session_runs_group_name
from .selectors import visible_run


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


class ResearchPaneConsumer(MemberGroupConsumer):
    """The Research tab as it is after each event (`{"type": "fragments", "html"}`), from the templates
    the page was rendered with, for the run the page shows (`?run=<id>`; none: the first run started).

    On connect, the whole tab with every stored event (what changed while the page loaded or was away);
    then, per event of the run, its state as of that event and the stream's lines after the last one
    sent, up to the first gap (an event still being committed; its own message comes once it is).
    When the session's files change, a finished run's report again ("Sources changed"); when a run
    starts or changes status, the Usage panel too (templates/context/_usage.html).
    One consumer handles its messages in turn, each rendered from the rows as they are then: a line is
    never sent twice nor out of order, and a later fragment is never older than an earlier one.
    """

    def group_for(self, user, kwargs):
        self.session = visible_session(user, kwargs["sid"])
        self.username = user.get_username()
        return session_runs_group_name(kwargs["sid"]) if self.session is not None else None

    async def connect(self):
        await super().connect()
        if not hasattr(self, "group"):
            return
        wanted = parse_qs(self.scope.get("query_string", b"").decode()).get("run", [""])[0]
        self.run = await database_sync_to_async(run_of)(self.session, wanted)
        self.offered = None  # a teammate's run offered while another is shown
        self.sent = 0  # the last seq the page shows
        self.heard = 0  # the highest seq announced
        self.report_sent = ""  # the report as the last context change rendered it
        await self.channel_layer.group_add(context_group_name(self.session.pk), self.channel_name)
        if self.run is not None:
            await self.channel_layer.group_add(run_group_name(self.run.pk), self.channel_name)
        await self.send_everything()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(context_group_name(self.session.pk), self.channel_name)
        if getattr(self, "run", None) is not None:
            await self.channel_layer.group_discard(run_group_name(self.run.pk), self.channel_name)
        await super().disconnect(code)

    async def run_event(self, message):
        self.heard = max(self.heard, message["event"]["seq"])
        if self.heard > self.sent:
            await self.send_fragments(await database_sync_to_async(self.render_news)())

    async def session_run(self, event):
        message = event["message"]
        summary = message["run"]
        if self.run is None and message["type"] == "run.created":
            self.run = await database_sync_to_async(run_of)(self.session, summary["run_id"])
            if self.run is not None:
                await self.channel_layer.group_add(run_group_name(self.run.pk), self.channel_name)
            await self.send_everything()
            return
        ours = self.run is not None and summary["run_id"] == str(self.run.pk)
        if message["type"] == "run.created" and not ours and message.get("by") != self.username:
            self.offered = {key: summary.get(key) for key in ("run_id", "question", "updates_run")}
            self.offered["by"] = message.get("by")
        names = None if ours else LIST_FRAGMENTS
        await self.send_fragments(await database_sync_to_async(self.render_status)(names))

    async def context_updated(self, event):
        # Any push may be the one after a file's new version is stored (the upload's own comes before
        # it): the report is read again each time, and sent when its markup changed.
        if self.run is not None:
            await self.send_fragments(await database_sync_to_async(self.render_report)())

    async def send_everything(self):
        await self.send_fragments(await database_sync_to_async(self.render_everything)())

    async def send_fragments(self, html: str | None):
        if html:
            await self.send_json({"type": "fragments", "html": html})

    def render_everything(self) -> str:
        pane = research_pane(self.session, self.run, latest=False, offered=self.offered)
        self.sent = self.heard = max(self.heard, pane.shown.upto if pane.shown else 0)
        return research_fragments(pane)

    def render_report(self) -> str | None:
        """A finished run's report, its "Sources changed" read now (None while the run has no report)."""
        pane = research_pane(self.session, self.run, latest=False, upto=self.heard, offered=self.offered)
        if not (pane.shown and pane.shown.report):
            return None
        html = research_fragments(pane, names=("report",))
        if html == self.report_sent:
            return None
        self.report_sent = html
        return html

    def render_status(self, names: tuple[str, ...] | None) -> str:
        """After a run started or changed status: the tab as of the last event heard, and the Usage panel."""
        return self.render_news(names, always=True) + usage_fragments(self.session.context_set)

    def render_news(self, names: tuple[str, ...] | None = None, *, always: bool = False) -> str | None:
        """The tab as of the last event heard, its stream's lines after the last one sent (None when nothing is new)."""
        pane = research_pane(
            self.session, self.run, latest=False, upto=self.heard, after=self.sent, offered=self.offered
        )
        shown_upto = pane.shown.upto if pane.shown else 0
        if shown_upto <= self.sent and not always:
            return None
        self.sent = max(self.sent, shown_upto)
        return research_fragments(pane, append=True) if names is None else research_fragments(pane, names=names)
