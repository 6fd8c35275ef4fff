"""What the Context tab's parsed-context pane shows (templates/context/_digest_view.html): the aggregate
digest, a file's digest, or a file's raw text (a cited span highlighted, of the exact version cited).
The page fetches it as a fragment (`GET /sessions/{sid}/context/view/?tab=…`) when a view is chosen and
after the context changes."""

import json
from dataclasses import dataclass
from itertools import pairwise

from workspaces.models import ResearchSession
from workspaces.selectors import parse_uuid

from . import provenance, selectors
from .models import ContextFile, FileText, StoredDigest

KINDS = [
    ("fact", "Facts"),
    ("definition", "Definitions"),
    ("constraint", "Constraints"),
    ("analysis", "Analyses"),
    ("case", "Cases"),
    ("lead", "Leads"),
    ("conflict", "Conflicts"),
]
TABS = ("aggregate", "file", "preview")


@dataclass(frozen=True)
class Choice:
    """The view the reader chose: a tab, the selected file, a cited version and span, cards or JSON."""

    tab: str = "aggregate"
    file_id: str = ""
    version: str = ""
    span: str = ""
    show_json: bool = False

    @classmethod
    def from_query(cls, query) -> "Choice":
        tab = query.get("tab", "aggregate")
        return cls(
            tab=tab if tab in TABS else "aggregate",
            file_id=query.get("file", ""),
            version=query.get("version", ""),
            span=query.get("span", ""),
            show_json=query.get("json") == "1",
        )


@dataclass
class DigestCards:
    """A stored digest as the pane shows it: its summary, its items by kind, every SourceRef's citation."""

    digest: StoredDigest
    links: dict[str, dict]
    show_json: bool

    @classmethod
    def pinned_to(cls, digest: StoredDigest, versions: dict[str, str], show_json: bool) -> "DigestCards":
        """The digest with its SourceRefs pinned to `versions` ({filename: version}), as the API pins them."""
        return cls(digest, provenance.digest_links(digest.content, versions), show_json)

    @property
    def provider_label(self) -> str:
        if self.digest.provider == "offline":
            return "offline extractive mode"
        return f"{self.digest.provider} · {self.digest.model}"

    @property
    def content(self) -> dict:
        return self.digest.content

    @property
    def summary_paragraphs(self) -> list[str]:
        """The summary, each file's part of an aggregate's ("6 files. report.pdf: … memo.docx: …") a paragraph
        of its own: run together, six files' lines were one wall of text."""
        summary = str(self.digest.content.get("summary") or "")
        starts, searched_from = [], 0
        for document in self.digest.content.get("documents") or []:
            # A file's part follows a sentence's end; a file named inside another's line ("see memo.docx: p. 2")
            # does not start one.
            found = summary.find(f". {document.get('filename')}: ", searched_from) if isinstance(document, dict) else -1
            if found >= 0:
                starts.append(found + 2)
                searched_from = found + 2
        bounds = [0, *starts, len(summary)]
        return [part for a, b in pairwise(bounds) if (part := summary[a:b].strip())]

    @property
    def as_json(self) -> str:
        return json.dumps(self.digest.content, indent=2, ensure_ascii=False)

    @property
    def groups(self) -> list[tuple[str, str, list[dict]]]:
        facts = self.digest.content.get("facts") or []
        grouped = [(kind, label, [f for f in facts if (f.get("kind") or "fact") == kind]) for kind, label in KINDS]
        return [group for group in grouped if group[2]]

    @property
    def dropped(self) -> int:
        return len(self.digest.validation_report or [])


def no_text_yet(file: ContextFile | None) -> str:
    """A preview with no text says why, rather than show a title over nothing."""
    if file is not None and file.error:
        error = file.error if isinstance(file.error, dict) else {}
        return ". ".join(part for part in (error.get("message"), error.get("help")) if part)
    return "No text has been read from this file yet: it shows here once it is parsed."


def header_span(spans: list[dict]) -> dict | None:
    """A CSV's header span: its column names head every run of rows the preview shows."""
    return next((span for span in spans if span["locator"] == "header"), None)


def source_context(source: dict, viewing_session_id: str | None) -> dict:
    """The template context of a resolved source (templates/context/_source.html)."""
    spans = source.get("spans", [])
    origin = source["origin_session"].get("id")
    return {
        "source": source,
        "spans": spans,
        "highlight": source["span_id"],
        "header": header_span(spans),
        "from_other_session": bool(origin and origin != viewing_session_id),
    }


def digest_view(session: ResearchSession, user, choice: Choice) -> dict:
    """The template context of the pane for `choice`."""
    context_set = session.context_set
    file_id = parse_uuid(choice.file_id)
    file = context_set.files.select_related("digest").filter(pk=file_id).first() if file_id else None
    view = {"choice": choice, "context_set": context_set, "file": file}
    if choice.tab == "aggregate":
        digest = context_set.aggregate_digest
        if digest is not None:
            view["cards"] = DigestCards.pinned_to(digest, provenance.aggregate_versions(context_set), choice.show_json)
            built_for_now = context_set.aggregate_revision == context_set.revision
            view["current"] = built_for_now and context_set.aggregate_digest_status == "ready"
        view["has_files"] = context_set.files.exists()
    elif choice.tab == "file" and file is not None and file.digest is not None:
        # A file's digest is always of its current text (a new text drops it).
        versions = provenance.current_versions(context_set.pk)
        view["cards"] = DigestCards.pinned_to(file.digest, versions, choice.show_json)
    elif choice.tab == "preview":
        view |= _preview(session, user, file, choice)
    return view


def _preview(session: ResearchSession, user, file: ContextFile | None, choice: Choice) -> dict:
    if choice.version:  # a cited span: the exact version it was made from, whatever the file holds now
        source = provenance.resolve(user, [(choice.version, choice.span)]).get((choice.version, choice.span))
        if source is None:
            return {"gone": True}
        # The file of this session whose current text it is, if any: its row is the one selected.
        version = parse_uuid(choice.version)  # resolve found it: a valid id
        current = FileText.objects.current().filter(version=version, file__context_set=session.context_set)
        shown_file_id = current.values_list("file_id", flat=True).first()
        return source_context(source, str(session.pk)) | {"resolved": True, "shown_file_id": shown_file_id}
    if file is None:
        return {}
    spans = selectors.spans_of(file)
    return {
        "spans": spans,
        "filename": file.filename,
        "highlight": choice.span,
        "header": header_span(spans),
        "empty": no_text_yet(file),
    }
