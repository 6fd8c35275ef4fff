"""A report as one document every format writes: header, body with its [n] marks, numbered sources.

Every citation is read through the resolver (`context_app.provenance.resolve`, the code
behind `GET /api/sources/{version}/{span}` and the page's source dialog), so each source
entry quotes the text its `source_url` opens, with the state of its version now.
Nothing here formats: the text stays as the report and the files hold it, and each
writer escapes it for its own format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from urllib.parse import quote

from context_app import provenance
from context_app.library import SECTION_LOCATION
from llm_platform import grounding
from llm_platform.ledger import run_usage

from ..models import ResearchRun
from ..runs.report import report_json

QUOTE_CHARS = 300  # of a span's text in a source entry; longer ones are cut at a word, with an ellipsis
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # no format can hold these; \t and \n stay

Piece = str | int  # a paragraph is text and citation numbers, in reading order


@dataclass(frozen=True)
class SourceEntry:
    """One numbered source: where the cited text is, what it says, whether it is still current, its link."""

    n: int
    name: str  # the file's name, or a web page's title
    location: str = ""  # "p. 4", "Section: Methods", "CSV rows 2–10"
    sourceref: str = ""  # "valves.md::S4"
    origin_session: str = ""  # the session's title when it came from the team library
    quote: str = ""  # the span's text (cut), as the resolver reads it
    state: str = ""  # "" while current, else "superseded on 2026-11-26" or "deleted on …"
    url: str = ""  # absolute: the resolver's source_url, or a web page's address
    note: str = ""  # why there is no quote, when there is none

    @property
    def facts(self) -> list[str]:
        """What is said after the name, in every format's words alike."""
        said = [self.location, self.sourceref]
        if self.origin_session:
            said.append(f"from session “{self.origin_session}”")
        return [fact for fact in (*said, self.state, self.note) if fact]


@dataclass(frozen=True)
class Section:
    heading: str
    paragraphs: list[list[Piece]]


@dataclass(frozen=True)
class ReportDocument:
    title: str  # the question
    report_title: str
    session_title: str
    finished_at: datetime | None
    written_by: str
    cost: str
    summary: str
    sections: list[Section]
    open_questions: list[str]
    sources: list[SourceEntry]  # the cited ones, by number
    also_read: list[SourceEntry] = field(default_factory=list)  # references the text never cites
    sources_changed: list[str] = field(default_factory=list)  # "valves.md — superseded on 2026-11-26"
    # An update's change summary (runs/update.py): its counts line, then "Withdrawn: “…”" per withdrawn claim.
    update: list[str] = field(default_factory=list)
    dropped: int = 0

    @property
    def finished(self) -> str:
        return self.finished_at.strftime("%Y-%m-%d %H:%M UTC") if self.finished_at else "not finished"


def build(run: ResearchRun, user, absolute: Callable[[str], str]) -> ReportDocument:
    """The run's report as a document for `user` (a member of its team); `absolute` makes a path a full URL."""
    report = report_json(run.report)
    references = {r["n"]: r for r in report["references"]}
    numbers = _Numbering(references)
    sections = [
        Section(section["heading"], [numbers.pieces(paragraph) for paragraph in section["paragraphs"]])
        for section in report["sections"]
    ]
    entries = _entries(numbers.links, user, str(run.session_id), absolute)
    cited = [entries[n] for n in sorted(numbers.cited)]
    also_read = [entries[n] for n in sorted(set(references) - numbers.cited)]
    return ReportDocument(
        title=clean(report.get("question") or run.question),
        report_title=clean(report["title"]),
        session_title=clean(run.session.title),
        finished_at=run.finished_at,
        written_by=written_by(report),
        cost=run_cost(run_usage(run.pk)),
        summary=clean(report["summary"]),
        sections=sections,
        open_questions=[clean(q) for q in report["open_questions"]],
        sources=cited,
        also_read=also_read,
        sources_changed=[
            f"{change['filename']} — {state_of(change['status'], change['changed_at'])}"
            for change in report["sources_changed"]
        ],
        dropped=len(report.get("dropped", [])),
        update=update_lines(report.get("update")),
    )


def update_lines(update: dict | None) -> list[str]:
    """An updated report's change summary as plain lines: what it re-checked, the counts, each withdrawn
    claim and each claim rewritten from the new text."""
    if not update:
        return []
    files = ", ".join(f"{f['filename']} ({f['status']})" for f in update["changed_files"])
    lines = [f"An update of an earlier report, re-checked against {files}: {update['summary']}."]
    for claim in update["claims"]:
        old, new = clean(claim["old_text"]), clean(claim["new_text"])
        if claim["status"] == "withdrawn":
            lines.append(f"Withdrawn: “{old}”")
        elif claim["status"] == "changed" and old != new:  # rewritten from the new text
            lines.append(f"Now says: “{new}” (was: “{old}”)")
    return lines


class _Numbering:
    """The report's [n] keep their numbers; a paragraph's SourceRef (a span of the user's files) is the
    reference of the same pinned span when there is one, else a number after the last reference."""

    def __init__(self, references: dict[int, dict]):
        self.links: dict[int, dict] = dict(references)
        self.by_span = {(r["version"], r["span"]): n for n, r in references.items() if r.get("version")}
        self.next = max(references, default=0) + 1
        self.cited: set[int] = set()

    def number(self, sourceref: str, link: dict | None) -> int:
        key = (link["version"], link["span"]) if link else ("", sourceref)
        if key not in self.by_span:
            self.by_span[key] = self.next
            self.links[self.next] = {"title": sourceref, "sourceref": sourceref, **(link or {})}
            self.next += 1
        return self.by_span[key]

    def pieces(self, paragraph: dict) -> list[Piece]:
        """The paragraph's text with its inline marks as numbers, then the citations it does not mark inline."""
        allowed = set(paragraph["citations"])
        pieces: list[Piece] = []
        at = 0
        text = clean(paragraph["text"])
        for mark in grounding.CITATION_MARKS.finditer(text):
            shown = grounding.mark_numbers(mark)
            if not set(shown) <= allowed:
                continue  # "[2020]" or a mark the report does not cite: text
            pieces += [text[at : mark.start()], *shown]
            at = mark.end()
        pieces.append(text[at:].rstrip())
        links = {link["sourceref"]: link for link in paragraph.get("source_links", [])}
        marks = [*paragraph["citations"], *(self.number(ref, links.get(ref)) for ref in paragraph["sources"])]
        for n in dict.fromkeys(marks):
            self.cited.add(n)
            if n not in pieces:
                pieces.append(n)
        return [piece for piece in pieces if piece != ""]


def _entries(links: dict[int, dict], user, session_id: str, absolute: Callable[[str], str]) -> dict[int, SourceEntry]:
    """Each numbered citation as the resolver reads it now (one call for them all)."""
    pinned = {(link["version"], link["span"]) for link in links.values() if link.get("version")}
    resolved = provenance.resolve(user, pinned, with_spans=False)
    entries = {}
    for n, link in links.items():
        found = resolved.get((link.get("version"), link.get("span")))
        if found is not None:
            origin = found["origin_session"]
            entries[n] = SourceEntry(
                n=n,
                name=clean(found["filename"]),
                location=location(found["locator"], found["format"]),
                sourceref=clean(link.get("sourceref", "")),
                origin_session=clean(origin["title"] or "") if origin["id"] and origin["id"] != session_id else "",
                quote=cut(clean(found["text"])),
                state=state_of(found["status"], found["deleted_at"] or found["superseded_at"]),
                url=safe_url(absolute(link["source_url"])),
            )
        elif link.get("url"):  # a web page: its address is the source
            entries[n] = SourceEntry(n=n, name=clean(link.get("title") or link["url"]), url=safe_url(link["url"]))
        else:
            entries[n] = SourceEntry(
                n=n,
                name=clean(link.get("title", "")),
                location=clean(link.get("location", "")),
                sourceref=clean(link.get("sourceref", "")),
                url=safe_url(absolute(link["source_url"])) if link.get("source_url") else "",
                note="the cited text is not available" if link.get("version") else "not pinned to a version",
            )
    return entries


def location(locator: str, file_format: str) -> str:
    """A span's locator as a reader says it: "p. 4", "Section: Methods > Sampling", "CSV rows 2–10"."""
    locator = clean(locator)
    if not locator or re.fullmatch(r"p\. \d+", locator):
        return locator
    if file_format == "csv":
        return "CSV header row" if locator == "header" else f"CSV {locator.replace('-', '–')}"
    if file_format == "json":
        return f"JSON {locator}"
    return f"{SECTION_LOCATION}{locator}"


def state_of(status: str, changed_at: str | None) -> str:
    if status == "current" or not changed_at:
        return ""
    return f"{status} on {datetime.fromisoformat(changed_at).strftime('%Y-%m-%d')}"


def written_by(report: dict) -> str:
    if report.get("provider") == "offline":
        return "offline extractive"
    return f"{report.get('model') or 'unknown model'} ({report.get('provider') or 'unknown provider'})"


def run_cost(usage: dict) -> str:
    """The run's line of the ledger (llm_platform.ledger.run_usage) in words."""
    total = usage["total"]
    calls = f"{total['calls']} model call{'' if total['calls'] == 1 else 's'}"
    said = f"{dollars(total['cost'])} ({calls}"
    if usage["free"]:
        said += "; the offline mode costs nothing"
    if usage["unpriced_models"]:
        said += f"; {total['unpriced_calls']} not priced: {', '.join(usage['unpriced_models'])}"
    return said + ")"


def dollars(amount: str) -> str:
    """As the usage panel shows money: cents, and four places while an amount is under a dollar."""
    value = Decimal(amount)
    if value == 0:
        return "$0.00"
    return f"${value:.4f}" if abs(value) < 1 else f"${value:.2f}"


def cut(text: str, most: int = QUOTE_CHARS) -> str:
    if len(text) <= most:
        return text
    head = text[:most]
    space = head.rfind(" ")
    return (head[:space] if space > most * 0.6 else head).rstrip() + "…"


def safe_url(url: str) -> str:
    """An http(s) address with nothing that could end a link in any format (spaces, quotes, angle
    brackets percent-encoded); anything else (javascript:, data:, a bare word) is no link at all."""
    url = clean(url).strip()
    if not re.match(r"https?://[^\s/]", url, re.IGNORECASE):
        return ""
    return quote(url, safe=":/?#@!$&'()*+,;=%~[]-._")


def clean(text: str) -> str:
    """Text any format can hold: no control characters but tab and line end."""
    return CONTROL.sub("", text or "")


def marks_of(pieces: Iterable[Piece]) -> list[int]:
    return [piece for piece in pieces if isinstance(piece, int)]
