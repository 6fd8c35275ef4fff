"""What the Research tab shows (templates/research/_research_tab.html), read in a fixed number of queries.

A run is shown as of one of its events (`upto`, a seq): the thought stream up to it, and the run's and
its nodes' states as those events left them, so the tree, the status and the progress line agree with
the stream beside them, and a run that takes milliseconds is still seen stage by stage (the root alone,
then its children). Shown with every stored event, the states are the rows' own.
"""

import json
import math
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from context_app import provenance
from context_app.library import SECTION_LOCATION
from context_app.templatetags.citations import origin_title
from extraction.blocks import SECTION_PATH_SEPARATOR
from llm_platform.ledger import run_usage
from workspaces.models import ResearchSession
from workspaces.selectors import parse_uuid

from .models import ResearchNode, ResearchRun, RunEvent
from .runs.narration import NODE_LABEL, STATUS_LABEL, narrate, plural

ACTIVE = ("queued", "binding", "running", "reporting")
# Statuses only move forward; a run's events may name them in another order than the rows changed.
RUN_RANK = {"queued": 0, "binding": 1, "running": 2, "reporting": 3, "completed": 4, "failed": 4, "cancelled": 4}
OPEN_NODE = ("pending", "running")
EVENT_STATUS = {
    "context_binding_parsing_started": "binding",
    "context_binding_parsing_completed": "running",
    "report_context_attached": "reporting",
    "run_completed": "completed",
    "run_failed": "failed",
    "run_cancelled": "cancelled",
}
COVERAGE_LABEL = {
    "cited": "Cited",
    "read": "Read, not cited",
    "not_reached": "Not reached",
    "error": "In error",
    "parsing": "Still parsing at run start",
}
UPDATE_LABEL = {"changed": "Changed", "withdrawn": "Withdrawn", "new": "New from the changed files"}
SHOWN_LOCATIONS = 4
EXPORT_KINDS = (("md", "Markdown"), ("docx", "Word"), ("pdf", "PDF"))


@dataclass
class StreamLine:
    event: RunEvent
    text: str

    @property
    def warn(self) -> bool:
        return "fail" in self.event.type or "no_usable" in self.event.type


@dataclass
class ShownNode:
    node: ResearchNode
    status: str
    findings: list[dict] = field(default_factory=list)
    children: list["ShownNode"] = field(default_factory=list)

    @property
    def label(self) -> str:
        return NODE_LABEL.get(self.status, self.status)

    @property
    def context_note(self) -> str:
        context = getattr(self.node, "context_slice", None)
        if context is None:
            return ""
        items = plural(len(context.selected_items), "item")
        return f"Context: {items} ({context.mode.replace('_', ' ')}). {context.selection_reason}"


@dataclass
class Progress:
    text: str  # the line without its time
    elapsed: str
    since: str = ""  # ISO start while the run goes on: the page's clock counts on from it


@dataclass
class RunView:
    run: ResearchRun
    upto: int
    status: str
    lines: list[StreamLine]
    roots: list[ShownNode]
    nodes: list[ShownNode]
    progress: Progress
    report: dict | None
    coverage: dict | None
    debug: dict | None
    usage: dict  # the run's ledger in total (calls, tokens by kind, cost)

    @property
    def status_label(self) -> str:
        return STATUS_LABEL.get(self.status, self.status)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def empty_tree(self) -> str:
        if self.active:
            return "The tree starts once the context is parsed…"
        return "This run has no nodes."

    @property
    def empty_report(self) -> str:
        if self.status == "failed":
            return f"The run failed: {self.run.error}"
        if self.status == "cancelled":
            return "The run was cancelled before its report."
        return "The report appears here when the run has explored its question."

    @property
    def downloads(self) -> list[tuple[str, str]]:
        return list(EXPORT_KINDS) if self.report else []


@dataclass
class RunChoice:
    run: ResearchRun
    label: str


@dataclass
class ResearchPane:
    session: ResearchSession
    runs: list[RunChoice]
    shown: RunView | None
    offered: dict | None = None  # a run a teammate started while another is shown: {run_id, question, by, updates_run}

    @property
    def shown_id(self) -> str:
        return str(self.shown.run.pk) if self.shown else ""


def run_label(run: ResearchRun) -> str:
    """A run in the run list: status and time first (a narrow select cuts the end), the question last."""
    when = timezone.localtime(run.created_at).strftime("%d/%m/%Y %H:%M")
    update = "Update · " if run.updates_run_id else ""
    return f"{STATUS_LABEL.get(run.status, run.status)} · {when} · {update}{run.question}"


def run_of(session: ResearchSession, run_id) -> ResearchRun | None:
    """One run of the session (None for another session's, or an id that names none)."""
    pk = parse_uuid(run_id) if run_id else None
    return session.runs.filter(pk=pk).first() if pk else None


def research_pane(
    session: ResearchSession,
    run: ResearchRun | None = None,
    *,
    latest: bool = True,
    upto: int | None = None,
    after: int = 0,
    offered: dict | None = None,
) -> ResearchPane:
    """The tab with `run` shown (the latest when None and `latest`), as of its event `upto` (every
    contiguous stored event when None); the stream holds the lines after `after`."""
    runs = list(session.runs.all())
    if run is None and latest and runs:
        run = runs[0]
    if offered and run is not None and offered.get("run_id") == str(run.pk):
        offered = None
    return ResearchPane(
        session=session,
        runs=[RunChoice(run=choice, label=run_label(choice)) for choice in runs],
        shown=run_view(run, upto=upto, after=after) if run else None,
        offered=offered,
    )


def contiguous_last_seq(events: list[RunEvent]) -> int:
    """The last seq of the unbroken run 1..n: a gap is an event still being committed."""
    last = 0
    for event in events:
        if event.seq != last + 1:
            break
        last = event.seq
    return last


def run_view(run: ResearchRun, *, upto: int | None = None, after: int = 0) -> RunView:
    run = ResearchRun.objects.get(pk=run.pk)  # the row as it is now
    events = list(RunEvent.objects.filter(run=run).order_by("seq"))
    last = contiguous_last_seq(events)
    upto = last if upto is None else min(upto, last)
    seen = [event for event in events if event.seq <= upto]
    nodes = list(ResearchNode.objects.filter(run=run).select_related("context_slice").order_by("depth", "path"))
    caught_up = upto >= run.last_seq
    status, node_status = _replay(run, seen, events, nodes, caught_up)
    shown_nodes = [
        ShownNode(node=node, status=node_status[node.path], findings=finding_rows(node, run.session_id))
        for node in nodes
        if node.path in node_status
    ]
    by_path = {shown.node.path: shown for shown in shown_nodes}
    roots = []
    for shown in shown_nodes:
        parent = by_path.get(shown.node.path.rpartition(".")[0])
        (parent.children if parent else roots).append(shown)
    finished = status not in ACTIVE
    report = _report(run) if run.report and finished else None
    return RunView(
        run=run,
        upto=upto,
        status=status,
        lines=[StreamLine(event=e, text=narrate(e.type, e.payload)) for e in seen if e.seq > after],
        roots=roots,
        nodes=shown_nodes,
        progress=_progress(run, status, seen, shown_nodes),
        report=report,
        coverage=_coverage(run.coverage, run.session_id) if run.coverage else None,
        debug=_debug(seen),
        usage=run_usage(run.pk)["total"],
    )


def _replay(run, seen, events, nodes, caught_up) -> tuple[str, dict[str, str]]:
    """The run's status and each shown node's, as the events up to `seen`'s last left them."""
    if caught_up:
        return run.status, {node.path: node.status for node in nodes}
    status = "queued"
    named: set[str] = (
        set()
    )  # nodes some event of the run names; the others (an update's carried-over nodes) show as stored
    for event in events:
        payload = event.payload or {}
        named.update(str(p) for p in (payload.get("node_id"), payload.get("node")) if p)
        named.update(str(c.get("node")) for c in payload.get("children") or [] if isinstance(c, dict))
    states = {node.path: node.status for node in nodes if node.path not in named}

    def set_node(path, to):
        current = states.get(path)
        if current is None or current in OPEN_NODE and (to not in OPEN_NODE or to == "running"):
            states[path] = to

    for event in seen:
        payload = event.payload or {}
        moved = EVENT_STATUS.get(event.type)
        if moved and RUN_RANK[moved] >= RUN_RANK[status]:
            status = moved
        if event.type == "context_for_node_ready":
            set_node(str(payload.get("node_id")), "running")
        elif event.type == "node_decomposed":
            for child in payload.get("children") or []:
                states.setdefault(str(child.get("node")), "pending")
        elif event.type == "node_completed":
            set_node(str(payload.get("node")), payload.get("status") or "sufficient")
        elif event.type == "node_failed":
            set_node(str(payload.get("node")), "failed")
        elif event.type in ("run_failed", "run_cancelled"):
            states = {path: "cancelled" if state in OPEN_NODE else state for path, state in states.items()}
    if RUN_RANK.get(run.status, 0) < RUN_RANK[status]:
        status = run.status  # never ahead of the row
    return status, states


def _latest(events: list[RunEvent], types: tuple[str, ...]) -> dict | None:
    for event in reversed(events):
        if event.type in types:
            return event.payload or {}
    return None


def elapsed_text(start: datetime, end: datetime | None) -> str:
    """A running run counts up ("0:42 elapsed"); a finished one says how long it took, in tenths of a
    second under ten seconds (an offline run is), rather than "0:00 elapsed"."""
    seconds = max(0.0, ((end or timezone.now()) - start).total_seconds())
    whole = math.floor(seconds + 0.5)
    clock = f"{whole // 60}:{whole % 60:02d}"
    if end is None:
        return f"{clock} elapsed"
    return f"took {seconds:.1f} s" if seconds < 10 else f"took {clock}"


def _progress(run: ResearchRun, status: str, seen: list[RunEvent], nodes: list[ShownNode]) -> Progress:
    start = run.started_at or run.created_at
    end = run.finished_at if status not in ACTIVE else None
    elapsed = elapsed_text(start, end)
    since = start.isoformat() if end is None else ""
    if status == "queued":
        return Progress("Queued", elapsed, since)
    if status == "binding":
        files = _latest(seen, ("context_binding_parsing_file_completed", "context_binding_parsing_started"))
        files = files or run.context_processing or {}
        done = files.get("files_done")
        if done is None:
            done = (files.get("files_ready") or 0) + (files.get("files_error") or 0)
        return Progress(f"Parsing context: {done}/{files.get('files_total') or 0} files", elapsed, since)
    open_nodes = sum(1 for shown in nodes if shown.status in OPEN_NODE)
    # Node and run ends carry the calls and tokens so far; the row may be newer still.
    usage = (_latest(seen, ("node_completed", "node_failed", "run_completed")) or {}).get("usage") or {}
    calls = max(usage.get("calls") or 0, run.model_calls or 0)
    tokens = max(usage.get("tokens") or 0, run.tokens_used or 0)
    text = (
        f"Nodes: {len(nodes) - open_nodes} done · {open_nodes} open · limit {run.max_nodes} · "
        f"{plural(calls, 'model call')} · {tokens:,} tokens"
    )
    return Progress(text, elapsed, since)


def _debug(seen: list[RunEvent]) -> dict | None:
    """ui_debug (seed 001 §7.2): parsing progress during bind, the node's slice on entry, the attached
    context at report time: what the latest of those steps received."""
    for event in reversed(seen):
        p = event.payload or {}
        if event.type.startswith("context_binding_parsing"):
            body = {k: p.get(k) for k in ("files_total", "files_ready", "files_error")}
            if p.get("filename"):
                body["last_file"] = p["filename"]
            return {"title": "Parsing the session's context", "body": json.dumps(body, indent=2, ensure_ascii=False)}
        if event.type == "context_for_node_ready":
            title = f"Context slice of node {p.get('node_id')} ({p.get('mode')})"
            return {"title": title, "body": json.dumps(p.get("context_slice"), indent=2, ensure_ascii=False)}
        if event.type == "report_context_attached":
            title = "Full user context attached for the report"
            return {"title": title, "body": json.dumps(p, indent=2, ensure_ascii=False)}
    return None


# --- the report -------------------------------------------------------------------------------


def _reference(reference: dict, session_id) -> dict:
    url = reference.get("url") or ""
    return {
        **reference,
        "web": url.startswith(("http://", "https://")),
        "origin_title": origin_title(reference, session_id),
        "link": reference if reference.get("source_url") else None,
    }


def _marker(change: dict | None) -> dict | None:
    """A paragraph's (or a withdrawn claim's) marker: its old and new text, opened on demand."""
    if not change:
        return None
    status = change.get("status")
    if status == "withdrawn":
        title = f"Withdrawn: “{(change.get('old_text') or '')[:80]}”"
    else:
        title = UPDATE_LABEL.get(status, status)
    rows = [
        (label, change.get(key))
        for label, key in (
            ("Before", "old_text"),
            ("Cited before", "old_cited_text"),
            ("Now", "new_text"),
            ("Cited now", "new_cited_text"),
        )
        if change.get(key)
    ]
    return {"status": status, "title": title, "rows": rows}


def _report(run: ResearchRun) -> dict:
    report = dict(run.report)
    session_id = run.session_id
    report["sources_changed"] = [
        {
            **changed,
            "changed_at": parse_datetime(changed["changed_at"])
            if isinstance(changed.get("changed_at"), str)
            else changed.get("changed_at"),
        }
        for changed in provenance.sources_changed(provenance.versions_in(run.report))
    ]
    references = {r["n"]: _reference(r, session_id) for r in report.get("references") or []}
    cited: set[int] = set()
    sections = []
    for section in report.get("sections") or []:
        paragraphs = []
        for paragraph in section.get("paragraphs") or []:
            cited.update(paragraph.get("citations") or [])
            links = {
                link.get("sourceref"): link for link in paragraph.get("source_links") or [] if isinstance(link, dict)
            }
            paragraphs.append(
                {
                    "text": paragraph.get("text", ""),
                    "marks": [{"n": n, "reference": references.get(n)} for n in paragraph.get("citations") or []],
                    "sources": [{"ref": ref, "link": links.get(ref)} for ref in paragraph.get("sources") or []],
                    "update": _marker(paragraph.get("update")),
                }
            )
        sections.append({"heading": section.get("heading", ""), "paragraphs": paragraphs})
    update = report.get("update")
    if update:
        update = {
            **update,
            "files": ", ".join(f"{f['filename']} ({f['status']})" for f in update.get("changed_files") or []),
            "withdrawn": [_marker(c) for c in update.get("claims") or [] if c.get("status") == "withdrawn"],
        }
    return {
        **report,
        "meta": "offline extractive mode"
        if report.get("provider") == "offline"
        else f"{report.get('provider')} · {report.get('model')}",
        "sections": sections,
        "update": update,
        "cited_references": [r for n, r in references.items() if n in cited],
        "uncited_references": [r for n, r in references.items() if n not in cited],
        "dropped_note": f"Validation removed {plural(len(report['dropped']), 'unsupported citation')}."
        if report.get("dropped")
        else "",
    }


def _coverage(coverage: dict, session_id) -> dict:
    """What the run looked at: every file of the session once, cited, read or not reached."""
    c = coverage.get("counts") or {}
    counts = [f"{c.get('cited', 0)} cited", f"{c.get('read', 0)} read", f"{c.get('not_reached', 0)} not reached"]
    if c.get("error"):
        counts.append(f"{c['error']} in error")
    if c.get("parsing"):
        counts.append(f"{c['parsing']} still parsing")
    rows = []
    for entry in coverage.get("files") or []:
        if entry.get("state") == "error":
            where = entry.get("error") or ""
        else:
            where = places_read(entry.get("locations") or [])
        origin = entry.get("citation") or {"origin_session": entry.get("origin_session")}
        rows.append(
            {
                **entry,
                "label": COVERAGE_LABEL.get(entry.get("state"), entry.get("state")),
                "where": where,
                "origin_title": origin_title(origin, session_id),
            }
        )
    # A running run's record so far (`final` false) grows as its nodes end.
    heading = "What the run has read so far" if coverage.get("final") is False else "What the run read"
    return {"heading": heading, "counts": " · ".join(counts), "rows": rows}


def places_read(locations: list[str]) -> str:
    """Where a file was read, the path its sections share said once: "Section: Postmortem > Cause, What we
    changed" for "Section: Postmortem > Cause" and "Section: Postmortem > What we changed" (a page's full
    path a place ran to five lines on a phone). At most SHOWN_LOCATIONS places, then how many more."""
    paths = [location.removeprefix(SECTION_LOCATION).split(SECTION_PATH_SEPARATOR) for location in locations]
    shared: list[str] = []
    if len(paths) > 1 and all(location.startswith(SECTION_LOCATION) for location in locations):
        for parts in zip(*paths, strict=False):
            if len(set(parts)) > 1:
                break
            shared.append(parts[0])
    if shared:
        rest = [SECTION_PATH_SEPARATOR.join(path[len(shared) :]) for path in paths]
        places = [part for part in rest if part]  # the shared section itself was read too when one is empty
        joint = ", and under it: " if len(places) < len(rest) else SECTION_PATH_SEPARATOR
        lead = SECTION_LOCATION + SECTION_PATH_SEPARATOR.join(shared) + joint
    else:
        lead, places = "", locations
    where = lead + ", ".join(places[:SHOWN_LOCATIONS])
    if len(places) > SHOWN_LOCATIONS:
        where += f" and {len(places) - SHOWN_LOCATIONS} more"
    return where


# --- a node's detail --------------------------------------------------------------------------


def finding_rows(node: ResearchNode, session_id) -> list[dict]:
    """A node's findings, their [n] marks, and the pages they cite (each opening its pinned version)."""
    results = {r.get("n"): r for r in node.results or []}
    rows = []
    for finding in node.findings or []:
        links = finding.get("source_links") or []
        sources = []
        for n in finding.get("citations") or []:
            result = results.get(n)
            url = result and result.get("source_url")
            link = next((link for link in links if url and link.get("source_url") == url), None)
            if link:
                sources.append({"n": n, "link": link, "origin_title": origin_title(link, session_id)})
        marks = [
            {"n": n, "title": f"{results[n].get('title')}, {results[n].get('location')}" if n in results else ""}
            for n in finding.get("citations") or []
        ]
        rows.append({"text": finding.get("text", ""), "marks": marks, "sources": sources})
    return rows
