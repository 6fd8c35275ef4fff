"""Provenance: which exact extracted version of a file a citation was made from.

A SourceRef (`valve.pdf::S4`) names a span by filename, which is ambiguous
across sessions and over time. Every citation the product stores therefore also
carries the FileText version it was made from, and every citation object in the
API is built by `citation()`:

    {"sourceref": "valve.pdf::S4", "version": "<uuid>", "span": "S4",
     "source_url": "/api/sources/<uuid>/S4"}
    + for library evidence: "origin_session": {"id", "title"}, "from_library": bool

`resolve()` reads a citation for the members of the version's team: the one
resolver, behind `GET /api/sources/{version}/{span}` (context_app/api/sources.py)
and every export of a report (research_app.export). Versions are written here (a new one when a
file's text or spans change), marked superseded or deleted, and pruned by
`manage.py prune_source_texts` once nothing cites them: the apps that store
citations register a function listing the versions they cite (`register_citer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from django.urls import reverse
from django.utils import timezone

from llm_platform.sourcerefs import split_ref
from workspaces.models import Team
from workspaces.selectors import parse_uuid
from workspaces.services import team_cache_scope

from .models import ContextFile, ContextSet, FileText

# --- versions ----------------------------------------------------------------------


def record_version(file: ContextFile, *, text: str, spans: list[dict], text_hash: str, spans_hash: str) -> FileText:
    """The file's current version for this text: reused when text and spans are the same, else a new one.

    Runs inside the caller's transaction with the file (or its set) locked; the
    previous current version is marked superseded, never changed otherwise.
    """
    current = FileText.objects.current().filter(file=file).defer("text", "spans").first()
    if current is not None and current.extracted_text_hash == text_hash and current.spans_hash == spans_hash:
        return current
    if current is not None:
        FileText.objects.filter(pk=current.pk).update(superseded_at=timezone.now())
    return FileText.objects.create(
        file=file,
        scope=file.context_set.cache_scope,
        context_set_id=file.context_set_id,
        filename=file.filename,
        format=file.format,
        extracted_text_hash=text_hash,
        spans_hash=spans_hash,
        text=text,
        spans=spans,
    )


def supersede_current(file_id) -> int:
    """The file has no usable text any more (replaced, awaiting extraction, or failed): its current version goes."""
    return FileText.objects.current().filter(file_id=file_id).update(superseded_at=timezone.now())


def mark_deleted(file_ids: Iterable) -> int:
    """The files are about to be deleted: their versions say so (their text stays while cited)."""
    versions = FileText.objects.filter(file_id__in=list(file_ids), deleted_at__isnull=True)
    return versions.update(deleted_at=timezone.now())


def current_versions(context_set_id) -> dict[str, str]:
    """{filename: version} of the set's files that have a current text (one query)."""
    rows = FileText.objects.current().filter(file__context_set_id=context_set_id).values_list("filename", "version")
    return {filename: str(version) for filename, version in rows}


def aggregate_versions(context_set: ContextSet) -> dict[str, str]:
    """What the set's aggregate digest cites: the versions it was built from, else the current ones."""
    return {**current_versions(context_set.pk), **(context_set.aggregate_versions or {})}


# --- citation objects ----------------------------------------------------------------


def parse_sourceref(sourceref: str) -> tuple[str, str] | None:
    """("valve.pdf", "S4") from "valve.pdf::S4" (or "valve.pdf::S4::hint"); None for anything else."""
    parts = split_ref(sourceref)
    return (parts[0], parts[1]) if parts else None


def source_url(version, span: str) -> str:
    return reverse("source-detail", kwargs={"version": str(version), "span": span})


def origin_json(session_id, title) -> dict:
    return {"id": str(session_id) if session_id else None, "title": title}


def citation(sourceref: str, version, span: str | None = None, *, origin: dict | None = None, shown_in=None) -> dict:
    """The one citation object: display form, exact version, span, resolver URL; origin for library evidence."""
    span = span or parse_sourceref(sourceref)[1]
    link = {"sourceref": sourceref, "version": str(version), "span": span, "source_url": source_url(version, span)}
    if origin is not None:
        link["origin_session"] = origin
        link["from_library"] = origin["id"] != (str(shown_in) if shown_in else None)
    return link


def links_for(sourcerefs: Iterable[str], versions: Mapping[str, str]) -> dict[str, dict]:
    """{sourceref: citation} for every SourceRef whose file has a version in `versions` ({filename: version})."""
    links = {}
    for ref in sourcerefs:
        parsed = parse_sourceref(ref)
        if parsed and parsed[0] in versions and ref not in links:
            links[ref] = citation(ref, versions[parsed[0]], parsed[1])
    return links


def span_in(spans: Iterable[dict], span_id: str) -> dict | None:
    """The span of a version's `spans` with this id, or None."""
    return next((span for span in spans if span.get("span_id") == span_id), None)


def spans_of_versions(versions: Iterable[str]) -> dict[str, list[dict]]:
    """{version: its spans} (one query)."""
    rows = FileText.objects.filter(version__in={v for v in versions if parse_uuid(v)})
    return {str(version): spans for version, spans in rows.values_list("version", "spans")}


def span_texts(sourcerefs: Iterable[str], versions: Mapping[str, str]) -> dict[str, str]:
    """{sourceref: the span's text in the version `versions` pins its file to} (one query)."""
    return {ref: span.get("text", "") for ref, span in _pinned_spans(sourcerefs, versions).items()}


def span_locators(sourcerefs: Iterable[str], versions: Mapping[str, str]) -> dict[str, str]:
    """{sourceref: its span's locator ("p. 3", "Methods > Sampling", "rows 2-41", or "")} in the
    version `versions` pins its file to (one query; a span not found is left out)."""
    return {ref: str(span.get("locator") or "") for ref, span in _pinned_spans(sourcerefs, versions).items()}


def _pinned_spans(sourcerefs: Iterable[str], versions: Mapping[str, str]) -> dict[str, dict]:
    wanted = {ref: parsed for ref in sourcerefs if (parsed := parse_sourceref(ref)) and parsed[0] in versions}
    if not wanted:
        return {}
    spans_of = spans_of_versions(versions[filename] for filename, _ in wanted.values())
    found = {}
    for ref, (filename, span_id) in wanted.items():
        span = span_in(spans_of.get(versions[filename], []), span_id)
        if span is not None:
            found[ref] = span
    return found


def digest_links(content: dict, versions: Mapping[str, str]) -> dict[str, dict]:
    """{SourceRef: citation} for every SourceRef a digest's content cites, pinned to `versions`."""
    return links_for(sourcerefs_in(content), versions)


def sourcerefs_in(value) -> Iterator[str]:
    """Every SourceRef string inside a JSON value (a digest's facts' and uncertainties' sources)."""
    if isinstance(value, str):
        if parse_sourceref(value):
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from sourcerefs_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from sourcerefs_in(item)


def versions_in(value) -> Iterator[str]:
    """The versions of every citation object inside a JSON value."""
    if isinstance(value, Mapping):
        if "source_url" in value and value.get("version"):
            yield str(value["version"])
        for item in value.values():
            yield from versions_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from versions_in(item)


def sources_changed(versions: Iterable[str]) -> list[dict]:
    """The cited versions that are no longer current, oldest change first (one query)."""
    wanted = {v for v in versions if v}
    if not wanted:
        return []
    rows = (
        FileText.objects.filter(version__in=wanted)
        .exclude(superseded_at__isnull=True, deleted_at__isnull=True)
        .values("filename", "version", "superseded_at", "deleted_at")
    )
    changed = [
        {
            "filename": row["filename"],
            "version": str(row["version"]),
            "status": "deleted" if row["deleted_at"] else "superseded",
            "changed_at": (row["deleted_at"] or row["superseded_at"]).isoformat(),
        }
        for row in rows
    ]
    return sorted(changed, key=lambda c: (c["changed_at"], c["filename"]))


def successors(versions: Iterable[str]) -> dict[str, tuple[FileText, FileText | None]]:
    """{cited version: (that version, the current version of its file or None)}: what a citation of a
    replaced file would be re-pinned to; None when the file was deleted or has no text now (two queries)."""
    wanted = {v for v in versions if parse_uuid(v)}
    if not wanted:
        return {}
    old = list(FileText.objects.filter(version__in=wanted))
    files = {t.file_id for t in old if t.file_id}
    current = {t.file_id: t for t in FileText.objects.current().filter(file_id__in=files)}
    return {str(t.version): (t, current.get(t.file_id) if t.file_id and t.deleted_at is None else None) for t in old}


# --- the resolver ---------------------------------------------------------------------


def readable_versions(user):
    """The versions `user` may read: those of the libraries of the teams they belong to (staff: all)."""
    versions = FileText.objects.select_related("context_set__session")
    if user.is_staff:
        return versions
    return versions.filter(scope__in=[team_cache_scope(team) for team in Team.objects.filter(members=user)])


def resolve(user, pinned: Iterable[tuple[str, str]], *, with_spans: bool = True) -> dict[tuple[str, str], dict]:
    """{(version, span): what the citation opens} for every pinned span `user` may read; an unknown
    version or span, or one of another team, is left out (two queries: the user's teams, the versions)."""
    wanted = [(version, span, pk) for version, span in pinned if (pk := parse_uuid(version))]
    if not wanted:
        return {}
    versions = readable_versions(user).filter(version__in={pk for *_, pk in wanted}).defer("text")
    texts = {text.version: text for text in versions}
    resolved = {}
    for version, span_id, pk in wanted:
        text = texts.get(pk)
        span = span_in(text.spans, span_id) if text else None
        if span is not None:
            resolved[(version, span_id)] = source_json(text, span, with_spans=with_spans)
    return resolved


def source_json(text: FileText, span: dict, *, with_spans: bool = True) -> dict:
    session = text.context_set.session if text.context_set_id else None
    found = {
        "version": str(text.version),
        **span_json(span),
        "filename": text.filename,
        "format": text.format,
        "extracted_text_hash": text.extracted_text_hash,
        "created_at": text.created_at.isoformat(),
        "status": text.status,
        "superseded_at": text.superseded_at.isoformat() if text.superseded_at else None,
        "deleted_at": text.deleted_at.isoformat() if text.deleted_at else None,
        "origin_session": origin_json(session.pk, session.title) if session else origin_json(None, None),
    }
    if with_spans:
        found["spans"] = [span_json(s) for s in text.spans]
    return found


def span_json(span: dict) -> dict:
    shown = {"span_id": span["span_id"], "text": span.get("text", ""), "locator": span.get("locator", "")}
    if span.get("read_by"):  # its page was a scan: "read_by": "ocr", and the page's mean word confidence
        shown["read_by"] = span["read_by"]
        shown["confidence"] = span.get("confidence")
    return shown


# --- retention -----------------------------------------------------------------------

_citers: list[Callable[[], Iterable[str]]] = []


def register_citer(citer: Callable[[], Iterable[str]]) -> None:
    """An app that stores citations lists the versions it cites (called once, from its AppConfig.ready)."""
    if citer not in _citers:
        _citers.append(citer)


def cited_by_digests() -> Iterator[str]:
    for versions in ContextSet.objects.exclude(aggregate_versions={}).values_list("aggregate_versions", flat=True):
        yield from (str(v) for v in (versions or {}).values())


def cited_versions() -> set[str]:
    cited = set(cited_by_digests())
    for citer in _citers:
        cited.update(str(v) for v in citer())
    return cited


def prune(*, dry_run: bool = False) -> list[dict]:
    """Delete the versions that are not current and that nothing cites; returns what went (or would go)."""
    keep = cited_versions()
    old = FileText.objects.exclude(superseded_at__isnull=True, deleted_at__isnull=True)
    doomed = [
        {
            "version": str(row["version"]),
            "filename": row["filename"],
            "status": "deleted" if row["deleted_at"] else "superseded",
        }
        for row in old.values("version", "filename", "superseded_at", "deleted_at").order_by("created_at")
        if str(row["version"]) not in keep
    ]
    if doomed and not dry_run:
        FileText.objects.filter(version__in=[d["version"] for d in doomed]).exclude(
            superseded_at__isnull=True, deleted_at__isnull=True
        ).delete()
    return doomed
