"""A run's events in plain words (SPEC §4: the thought stream narrates every event type), and the
run's and its nodes' states in words. One place says them, for the page and its live fragments."""

from collections.abc import Callable

STATUS_LABEL = {
    "queued": "Queued",
    "binding": "Parsing context",
    "running": "Exploring",
    "reporting": "Writing report",
    "completed": "Completed",
    "failed": "Failed",
    "cancelled": "Cancelled",
}
NODE_LABEL = {
    "pending": "Pending",
    "running": "Running",
    "sufficient": "Answered",
    "decomposed": "Split",
    "limited": "Left open",  # a limit reached, or nothing narrower to ask: the report names it open
    "failed": "Failed",
    "cancelled": "Cancelled",
}


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _quoted(items) -> str:
    return ", ".join(f"“{item}”" for item in items)


def _changed_files(files) -> str:
    return ", ".join(f"{f['filename']} ({f['status']})" for f in files)


def _update_checked(p: dict) -> str:
    again = p.get("explored_again") or []
    tail = (
        f"; exploring again {', '.join(f'node {n}' for n in again)}." if again else "; no node needs exploring again."
    )
    return f"Re-checked the claims citing {_changed_files(p.get('changed_files') or [])}: {p.get('message', '')}{tail}"


def _parsing_started(p: dict) -> str:
    if not p.get("files_total"):
        return "No context files in this session: the run relies on search alone."
    return (
        f"Parsing the session's context: {plural(p['files_total'], 'file')}, {p.get('files_ready', 0)} already parsed…"
    )


def _parsing_completed(p: dict) -> str:
    failed = f", {p['files_error']} failed" if p.get("files_error") else ""
    return f"Context ready: {p.get('files_ready', 0)} of {plural(p.get('files_total', 0), 'file')} parsed{failed}."


def _child(child: dict) -> str:
    return f"{child['node']} “{child['question']}”"


def _search_completed(p: dict) -> str:
    errors = p.get("errors") or []
    problems = f" Search problems: {'; '.join(errors)}." if errors else ""
    found = f"{plural(p.get('results', 0), 'result')} from {plural(p.get('documents', 0), 'document')}"
    return f"Node {p['node']}: {found}.{problems}"


NARRATE: dict[str, Callable[[dict], str]] = {
    "run_queued": lambda p: (
        f"Update of an earlier report queued: “{p.get('question', '')}”."
        if p.get("updates_run")
        else f"Run queued: “{p.get('question', '')}”."
    ),
    "update_checked": _update_checked,
    "context_binding_parsing_started": _parsing_started,
    "context_binding_parsing_file_completed": lambda p: (
        f"Parsing context file {p.get('files_done')}/{p.get('files_total')}… {p.get('filename')} "
        f"{'is ready' if p.get('status') == 'ready' else 'failed'}."
    ),
    "context_binding_parsing_completed": _parsing_completed,
    "context_binding_no_usable_context": lambda p: f"Warning: {p.get('message', '')}.",
    "context_for_node_ready": lambda p: (
        f"Gave node {p['node_id']} the full user context ({plural(p.get('selected_items_count', 0), 'item')})."
        if p.get("mode") == "root_full"
        else f"Prepared context slice for node {p['node_id']} ({plural(p.get('selected_items_count', 0), 'item')})."
    ),
    "node_queries": lambda p: f"Node {p['node']}: searching for {_quoted(p.get('queries') or [])}.",
    "node_search_completed": _search_completed,
    "node_findings": lambda p: f"Node {p['node']}: {plural(p.get('findings', 0), 'finding')} drawn from the results.",
    "node_sufficiency": lambda p: (
        f"Node {p['node']} is answered. {p.get('reasoning', '')}"
        if p.get("is_sufficient")
        else f"Node {p['node']} needs more. {p.get('reasoning', '')}"
    ),
    "node_decomposed": lambda p: (
        f"Node {p['node']} splits into {', '.join(_child(c) for c in p.get('children') or [])}."
    ),
    "context_split_fallback": lambda p: (
        f"The context split for node {p['node']} could not be used ({p.get('reason', '')}); "
        "items were assigned by shared words instead."
    ),
    "node_limited": lambda p: f"Node {p['node']} stops here: {p.get('reason', '')}.",
    "node_completed": lambda p: f"Node {p['node']} done: {NODE_LABEL.get(p.get('status'), p.get('status'))}.",
    "node_failed": lambda p: f"Node {p['node']} failed: {p.get('error', '')}",
    "report_context_attached": lambda p: (
        f"Attached full user context for report writing ({plural(p.get('items', 0), 'item')} from "
        f"{plural(p.get('files', 0), 'file')}, {plural(p.get('findings', 0), 'finding')}, "
        f"{plural(p.get('references', 0), 'reference')})"
        + (
            f"; left out {plural(p['items_not_citable'], 'item')} no cited span states (a total, a paraphrase)."
            if p.get("items_not_citable")
            else "."
        )
    ),
    "run_completed": lambda p: (
        f"Updated report ready: {p['update']}." if p.get("update") else f"Report ready: “{p.get('title', '')}”."
    ),
    "run_failed": lambda p: f"The run failed: {p.get('error', '')}",
    "run_cancelled": lambda p: "The run was cancelled.",
    "coverage_recorded": lambda p: f"Coverage: {p.get('summary', '')}.",
}


def narrate(event_type: str, payload: dict) -> str:
    say = NARRATE.get(event_type)
    if say is None:
        return f"{event_type.replace('_', ' ')}."
    try:
        return say(payload or {})
    except (KeyError, TypeError):  # an event of an older shape: its name still says what happened
        return f"{event_type.replace('_', ' ')}."
