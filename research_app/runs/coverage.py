"""What a run looked at (issue 25): for every file of its session, cited, read, or never reached.

Written as the run goes, from what it stored: a record so far (`final` false) when the run has bound
its context and each time one of its nodes ends, in the transaction that stores the node's end; the
final record (`final` true) when its report is written, and when it ends without one (failed,
cancelled, stopped at a limit) after binding its context. A record so far counts the nodes' findings
as the report's citations, as the record of a run that ended without a report does.

    cited        the report's text cites it: a paragraph's [n] that is one of its pages, or one of
                 its SourceRefs (a run that ended without a report: a node's finding cites it)
    read         not cited, but in a started node's context slice (a SourceRef of its items) or
                 among a node's stored search results
    not_reached  in neither: no node's slice and no node's results hold any part of it
    error        failed to parse at run start, and not read (its text was not there to read)
    parsing      not parsed yet at run start (stale or parsing), and not read

A file not parsed at run start also says so in `at_run_start` ("error" or "parsing", with its
`error` message) whatever its state: one read all the same was read in an older text.

Every file of the run's ContextBundle is listed once, in the bundle's order; after them, each
file the run drew on that is not in the bundle (another session's file found in the team
library, or one uploaded after the run bound its context) once, with its `origin_session`.
Web results are no files and are left out.
Every file that has a text version carries a citation object (`citation`): the first place it
was cited or read, else its first span, opened through its `source_url` like any citation.
Two queries whatever the run's size: its nodes with their slices, the cited spans' locators.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from context_app import provenance
from context_app.library import SECTION_LOCATION, SECTIONED_FORMATS
from context_app.models import DigestStatus
from llm_platform.ir.types import page_of_locator
from llm_platform.sourcerefs import ref_key, split_ref

from ..models import ResearchNode, ResearchRun
from .evidence import citation_of

CITED, READ, NOT_REACHED, ERROR, PARSING = "cited", "read", "not_reached", "error", "parsing"
STATES = (CITED, READ, NOT_REACHED, ERROR, PARSING)
NAMES_IN_SUMMARY = 10  # of the never-reached (or failed) files, named in the summary line

# {location label: its citation object or None}, in the order first seen.
Places = dict[str, dict | None]

logger = logging.getLogger(__name__)


def recorded(run: ResearchRun, report: dict | None = None, *, final: bool = True) -> dict | None:
    """`coverage_record`, never in the way of the run's end: a record that cannot be made is
    logged and left out (the report is stored, the failure told), never a run left open."""
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction goes on after a database error
            return coverage_record(run, report, final=final)
    except Exception:
        logger.exception("the coverage record of run %s could not be made", run.pk)
        return None


def record_so_far(run_id) -> None:
    """Store the record so far of a running run (GET /api/runs/{rid} shows it grow), without an event:
    the thought stream's coverage line stays the run's last, told once with the final record.

    Called inside the transaction that stores a node's end, after its event: the event's UPDATE of
    the run's row holds that row until the commit, so nodes ending together write their records one
    after the other, each made from every node stored before it (a later record never lacks what an
    earlier one had). Only while the run is running: the final record is never written over.
    Six queries whatever the run's size: the run, its nodes, the spans' locators, the UPDATE and the
    savepoint's two."""
    run = ResearchRun.objects.only("id", "session_id", "context_bundle").get(pk=run_id)
    record = recorded(run, final=False)
    if record is not None:
        ResearchRun.objects.filter(pk=run_id, status=ResearchRun.Status.RUNNING).update(coverage=record)


def coverage_record(run: ResearchRun, report: dict | None = None, *, final: bool = True) -> dict | None:
    """The run's coverage record, or None for a run that never bound its context (nothing to cover).
    `final` False: a record so far of a running run, whose files not reached may be reached yet."""
    bundle = run.context_bundle
    if not bundle:
        return None
    files = bundle.get("files", [])
    by_name = {f["filename"]: f for f in files}
    in_bundle = {f["file_id"] for f in files}
    versions = bundle.get("source_versions") or {}
    nodes = list(ResearchNode.objects.filter(run_id=run.pk).select_related("context_slice").order_by("depth", "path"))

    slice_refs = [
        ref
        for node in nodes
        if node.started_at is not None and (context := getattr(node, "context_slice", None)) is not None
        for item in context.selected_items
        for ref in item.get("sources", [])
    ]
    cited_refs, cited_results = _cited(report, nodes)
    locators = provenance.span_locators({key for ref in [*slice_refs, *cited_refs] if (key := ref_key(ref))}, versions)

    read: dict[str, Places] = {}
    cited: dict[str, Places] = {}
    others: dict[str, dict] = {}  # file_id → what a result says of a file not in the bundle
    for ref in slice_refs:
        _add_ref(read, ref, by_name, versions, locators)
    for ref in cited_refs:
        _add_ref(cited, ref, by_name, versions, locators)
    for places, results in ((read, (r for node in nodes for r in node.results)), (cited, cited_results)):
        for result in results:
            file_id = result.get("file_id")
            if not file_id:
                continue  # a web page
            if file_id not in in_bundle:
                others.setdefault(file_id, result)
            link = citation_of(result) if result.get("source_url") else None
            places.setdefault(file_id, {}).setdefault(result["location"], link)

    entries = [_session_entry(f, cited.get(f["file_id"]), read.get(f["file_id"])) for f in files]
    for file_id, result in others.items():
        state, places = (CITED, cited[file_id]) if file_id in cited else (READ, read.get(file_id, {}))
        origin = result.get("origin_session") or provenance.origin_json(None, None)
        entries.append(_entry(result["title"], file_id, state, places, origin=origin))
    record = {
        "files": entries,
        "counts": {state: sum(1 for e in entries if e["state"] == state) for state in STATES},
        "session_files": len(files),
        "recorded_at": timezone.now().isoformat(),
        "final": final,
    }
    record["summary"] = summary_text(record)
    return record


def summary_text(record: dict) -> str:
    """The thought stream's last line: "cited 7 of 12 files; 3 never reached: a.md, b.pdf, c.csv"."""
    own = [e for e in record["files"] if e["origin_session"] is None]
    others = [e for e in record["files"] if e["origin_session"] is not None]
    of_state = {state: [e["filename"] for e in own if e["state"] == state] for state in STATES}
    final = record.get("final", True)
    parts = [f"cited {len(of_state[CITED])} of {_plural(len(own), 'file')}{'' if final else ' so far'}"]
    if of_state[READ]:
        parts.append(f"{len(of_state[READ])} read without being cited")
    not_reached = "never reached" if final else "not reached yet"
    for state, said in ((NOT_REACHED, not_reached), (ERROR, "in error"), (PARSING, "still parsing at run start")):
        if of_state[state]:
            parts.append(f"{len(of_state[state])} {said}: {_names(of_state[state])}")
    if others:
        cited_others = sum(1 for e in others if e["state"] == CITED)
        parts.append(f"{_plural(len(others), 'other file')} of the team library drawn on ({cited_others} cited)")
    return "; ".join(parts)


def event_payload(record: dict) -> dict:
    """What the `coverage_recorded` event carries (the record itself is on the run)."""
    return {"summary": record["summary"], "counts": record["counts"], "session_files": record["session_files"]}


# --- what was cited --------------------------------------------------------------------


def _cited(report: dict | None, nodes: list[ResearchNode]) -> tuple[list[str], list[dict]]:
    """The SourceRefs and the results the run cites: its report's paragraphs, else its nodes' findings."""
    if report is not None:
        paragraphs = [p for section in report.get("sections", []) for p in section["paragraphs"]]
        numbers = {n for p in paragraphs for n in p.get("citations", [])}
        refs = [ref for p in paragraphs for ref in p.get("sources", [])]
        return refs, [r for r in report.get("references", []) if r["n"] in numbers]
    results = []
    for node in nodes:
        by_number = {r["n"]: r for r in node.results}
        numbers = {n for finding in node.findings for n in finding.get("citations", [])}
        results.extend(by_number[n] for n in sorted(numbers) if n in by_number)
    return [], results


# --- entries -----------------------------------------------------------------------------


def _add_ref(places: dict[str, Places], ref: str, by_name: dict, versions: dict, locators: dict) -> None:
    """A SourceRef of a file of the bundle, at its span's place; one of no file of the bundle is no file's."""
    key = ref_key(ref)
    parts = split_ref(ref)
    if key is None or parts is None or parts[0] not in by_name:
        return
    file = by_name[parts[0]]
    label = _span_label(parts[1], locators.get(key, ""), file["format"])
    link = provenance.citation(key, versions[parts[0]], parts[1]) if parts[0] in versions else None
    places.setdefault(file["file_id"], {}).setdefault(label, link)


def _span_label(span_id: str, locator: str, file_format: str) -> str:
    """Where a span is, in the words the references use: "Page 3", "Section: Methods", "rows 2-41", else "S4"."""
    page = page_of_locator(locator)
    if page is not None:
        return f"Page {page}"
    if not locator:
        return span_id
    return f"{SECTION_LOCATION}{locator}" if file_format in SECTIONED_FORMATS else locator


def _session_entry(file: dict, cited: Places | None, read: Places | None) -> dict:
    first_span = provenance.citation(f"{file['filename']}::S1", file["version"], "S1") if file.get("version") else None
    if cited:
        state, places = CITED, cited
    elif read:
        state, places = READ, read
    elif file["digest_status"] == DigestStatus.ERROR:
        state, places = ERROR, {}
    elif file["digest_status"] != DigestStatus.READY:
        state, places = PARSING, {}
    else:
        state, places = NOT_REACHED, {}
    entry = _entry(file["filename"], file["file_id"], state, places, fallback=first_span)
    if file["digest_status"] != DigestStatus.READY:  # said even when an older text of it was read
        entry["at_run_start"] = ERROR if file["digest_status"] == DigestStatus.ERROR else PARSING
        error = file.get("error")
        entry["error"] = str(error.get("message", "")) if isinstance(error, dict) else ""
    return entry


def _entry(
    filename: str,
    file_id: str,
    state: str,
    places: Places,
    *,
    origin: dict | None = None,
    fallback: dict | None = None,
) -> dict:
    link = next((link for link in places.values() if link is not None), fallback)
    return {
        "filename": filename,
        "file_id": file_id,
        "state": state,
        "locations": list(places),
        "citation": link,
        "origin_session": origin,
    }


def _names(filenames: Iterable[str]) -> str:
    names = list(filenames)
    shown = ", ".join(names[:NAMES_IN_SUMMARY])
    return shown if len(names) <= NAMES_IN_SUMMARY else f"{shown} and {len(names) - NAMES_IN_SUMMARY} more"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
