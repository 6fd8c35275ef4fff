"""What the Context tab's file list shows, read from a manifest (SPEC §2.7): each file's chip, the change
banner and whether Parse now can help. The page renders it (templates/context/_files.html) and the files
pane consumer renders it again from every `context.updated` manifest."""

from dataclasses import dataclass
from datetime import datetime

from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string

CHIP_LABELS = {"ready": "Ready", "parsing": "Parsing", "stale": "Stale", "error": "Error"}


@dataclass
class FileRow:
    file: dict
    chip_status: str
    chip_text: str
    size: str
    notes: list[str]
    requeued_note: str
    meaning_progress: str  # "indexing meaning 3/10" while vectors are still to make, else ""
    updated_at: datetime


@dataclass
class FilesPane:
    manifest: dict
    rows: list[FileRow]
    banner: str
    parse_now_disabled: bool


def _busy(manifest: dict) -> bool:
    return manifest["aggregate_digest_status"] == "parsing" or any(
        f["digest_status"] == "parsing" for f in manifest["files"]
    )


def _pending(manifest: dict) -> bool:
    return manifest["aggregate_digest_status"] == "stale" or any(
        f["digest_status"] == "stale" for f in manifest["files"]
    )


def _row(file: dict, touched: dict[str, str]) -> FileRow:
    status = file["digest_status"]
    chip_status = "unchanged" if touched.get(file["file_id"]) == "unchanged" and status != "parsing" else status
    chip_text = "Unchanged" if chip_status == "unchanged" else CHIP_LABELS.get(status, status)
    if status == "parsing" and file.get("extraction_progress"):
        chip_text = file["extraction_progress"]  # a long read says how it goes while it runs ("OCR page 12/80")
    requeued = file.get("requeued_because") if status in ("stale", "parsing") else ""
    windows, embedded = file.get("meaning_windows") or 0, file.get("meaning_embedded") or 0
    return FileRow(
        file=file,
        chip_status=chip_status,
        chip_text=chip_text,
        size=filesizeformat(file["size_bytes"]),
        # What reading it has to say ("low OCR confidence on pages 3, 7"), as a sentence.
        notes=[f"{note[:1].upper()}{note[1:]}." for note in file.get("notes") or []],
        requeued_note=f"Parsing again: {requeued}." if requeued else "",
        # Vectors are made after the file is ready; search uses the ones that exist meanwhile.
        meaning_progress=f"indexing meaning {embedded}/{windows}" if embedded < windows else "",
        updated_at=datetime.fromisoformat(file["updated_at"]),
    )


def _banner(manifest: dict) -> str:
    diff = manifest.get("last_diff") or {}
    if not diff.get("revision"):
        return ""
    new, changed, deleted = diff.get("new", 0), diff.get("changed", 0), diff.get("deleted", 0)
    if new + changed + deleted == 0:
        return "No changes detected — using cached digest"
    # last_diff sums every change since the last parse, so the counter is over those files.
    counts = f"+{new} new, ~{changed} changed, -{deleted} deleted"
    files = {f["file_id"]: f for f in manifest["files"]}
    to_parse = [
        files[item["file_id"]]
        for item in diff.get("items", [])
        if item["change"] in ("new", "changed") and item["file_id"] in files
    ]
    parsed = sum(f["digest_status"] in ("ready", "error") for f in to_parse)
    failed = sum(f["digest_status"] == "error" for f in manifest["files"])
    if _busy(manifest):
        return f"{counts} — parsing {parsed}/{len(to_parse)}" if to_parse else f"{counts} — parsing…"
    if _pending(manifest):
        return f"{counts} — press Parse now to update the digests"
    if failed:
        ready = sum(f["digest_status"] == "ready" for f in manifest["files"])
        up_to_date = f"{ready} up to date, " if ready else ""
        return f"{counts} — {up_to_date}{failed} {'file' if failed == 1 else 'files'} failed to parse"
    return f"{counts} — digests up to date"


def files_pane(manifest: dict) -> FilesPane:
    touched = {item["file_id"]: item["change"] for item in (manifest.get("last_diff") or {}).get("items", [])}
    failed_aggregate = manifest["aggregate_digest_status"] == "error" and any(
        f["digest_status"] == "ready" for f in manifest["files"]
    )
    return FilesPane(
        manifest=manifest,
        rows=[_row(file, touched) for file in manifest["files"]],
        banner=_banner(manifest),
        parse_now_disabled=_busy(manifest) or not (_pending(manifest) or failed_aggregate),
    )


FILES_FRAGMENTS = ("revision", "controls", "banner", "rows", "empty")


def files_fragments(manifest: dict) -> str:
    # No request: the forms carry no CSRF token, key or revision field (page_form_fields); script posts them.
    context = {"files_pane": files_pane(manifest)}
    fragments = {name: render_to_string(f"context/_files.html#{name}", context) for name in FILES_FRAGMENTS}
    fragments["rows"] = f"<table>{fragments['rows']}</table>"  # the parser drops a <tbody> outside a table
    return "".join(fragments.values())
