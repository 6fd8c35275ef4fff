"""Everything a session holds that a chat turn may use, each under a citable key.

    digest:aggregate            the aggregate digest's items ("[fact] … (report.pdf::S4)")
    digest:<filename>           one file's digest items
    report:<run id>             the report of a finished run
    findings:<run id>/<node>    one node's findings
    supply:<id>                 context a person supplied in this chat
    passage:<filename>::<span>  a page or section of the session's files that library search
                                (BM25) ranks best for this turn's question, a sentence a line,
                                each with the SourceRef of its span

They travel to the model as IR sources (a Context Index of the whole session,
chunks cut by the degrade ladder), and a request for one of them is answered
from here without asking a person (seed 003: the system supplies what it holds).
"""

from __future__ import annotations

from dataclasses import dataclass

from context_app import library, provenance
from context_app.models import ContextFile, ContextSet, DigestStatus, FileText
from digests.items import digest_items, item_line
from extraction import JSON_ROOT
from extraction.blocks import opening_heading
from llm_platform import sourcerefs
from llm_platform.ir import note_source
from llm_platform.ir.types import Source
from llm_platform.json_records import said_records
from llm_platform.prose import salutation
from llm_platform.sourcerefs import split_ref
from llm_platform.tables import said_as_records
from llm_platform.terms import heading_alone, sentences_by_line, split_leading_heading, split_sentences
from research_app.models import ResearchRun
from workspaces.models import ResearchSession

from .models import ChatMessage, ContextRequest, ContextSupply


@dataclass(frozen=True)
class Artifact:
    key: str
    title: str
    text: str


def session_artifacts(session: ResearchSession) -> list[Artifact]:
    artifacts: list[Artifact] = []
    context_set = ContextSet.objects.filter(session=session).select_related("aggregate_digest").first()
    if context_set and context_set.aggregate_digest_id:
        lines = [item_line(i) for i in digest_items(context_set.aggregate_digest.content)]
        artifacts.append(Artifact("digest:aggregate", "Aggregate digest of the session's files", "\n".join(lines)))
    files = ContextFile.objects.filter(context_set__session=session, digest_status=DigestStatus.READY)
    for file in files.select_related("digest").order_by("filename"):
        lines = [item_line(i) for i in digest_items(file.digest.content)] if file.digest else []
        artifacts.append(Artifact(f"digest:{file.filename}", f"Digest of {file.filename}", "\n".join(lines)))
    run = ResearchRun.objects.filter(session=session, status=ResearchRun.Status.COMPLETED).first()  # the newest
    if run is not None:
        nodes = list(run.nodes.exclude(findings=[]).order_by("depth", "path"))
        cited = provenance.versions_in([run.report.get("references", []), *(n.findings for n in nodes)])
        replaced = {c["version"] for c in provenance.sources_changed(cited)}
        artifacts.append(Artifact(f"report:{run.pk}", f"Report: {run.question}", report_text(run.report, replaced)))
        # A finding that cites a version since replaced or deleted is no longer told: an update run keeps its
        # nodes' findings as they were found while its report says the new text ("three consultants", not
        # "two"), and the chat quoted both.
        for node in nodes:
            current = [f for f in node.findings if replaced.isdisjoint(provenance.versions_in(f))]
            if not current:
                continue
            text = "\n".join(f["text"] for f in current)
            artifacts.append(
                Artifact(f"findings:{run.pk}/{node.path}", f"Findings of node {node.path}: {node.question}", text)
            )
    supplies = ContextSupply.objects.filter(request__conversation__session=session).exclude(
        kind=ContextSupply.Kind.SKIP
    )
    for supply in supplies.select_related("supplied_by"):
        who = supply.supplied_by.username if supply.supplied_by else "the system"
        artifacts.append(Artifact(f"supply:{supply.pk}", f"{supply.kind} from {who}", supply.payload.get("text", "")))
    return artifacts


QUESTION_PASSAGES = 3  # the library's best pages or sections for a question that a turn reads


def question_passages(session: ResearchSession, queries: list[str], limit: int = QUESTION_PASSAGES) -> list[Artifact]:
    """The pages or sections of the session's own files that library search ranks best for the
    question (the first of `queries`; each further query adds what it finds best that the others did
    not), each a sentence a line with its span's SourceRef ("… about three weeks (ops_memo.md::S2).")."""
    context_set = ContextSet.objects.filter(session=session).first()
    if context_set is None:
        return []
    hits: dict[int, library.LibraryHit] = {}  # by record, in the order found
    for query in queries:
        for hit in library.search(context_set.cache_scope, query, limit, context_set_id=context_set.pk).hits:
            hits.setdefault(hit.record_id, hit)
    versions = FileText.objects.filter(version__in=[hit.version for hit in hits.values() if hit.version])
    spans_of = {str(text.version): text.spans for text in versions.only("version", "spans")}
    passages = []
    for hit in hits.values():
        spans = spans_of.get(hit.version, [])
        ids = [span["span_id"] for span in spans]
        if hit.first_span in ids and hit.last_span in ids:
            chosen = spans[ids.index(hit.first_span) : ids.index(hit.last_span) + 1]
            passages += _hit_passages(hit, chosen, json_name(spans))
    return passages


MAX_JSON_NAME = 80  # characters of a JSON object's first plain field that may name it


def json_name(spans: list[dict]) -> str:
    """What a JSON file of one object is about, named by its first field when that holds a plain value ("route:
    X3", "instrument: Bruker D8 Advance"): every field of it is about that thing ("journey_minutes: 38" is the
    X3's journey), as a section's sentences are about its heading. "" for another file."""
    first = spans[0] if spans else {}
    text = str(first.get("text") or "")
    _label, separator, value = text.partition(": ")
    plain = value.strip() and value.lstrip()[:1] not in "{[" and "\n" not in value
    located = str(first.get("locator") or "").startswith(f"{JSON_ROOT}.")
    return text if located and separator and plain and len(text) <= MAX_JSON_NAME else ""


def _hit_passages(hit: library.LibraryHit, spans: list[dict], named: str = "") -> list[Artifact]:
    """A search hit's spans as passages: one, titled with its section's path or page and the headings its spans
    open with; a page's sections one each ("report.pdf › page 1 › 2. Receiving", "… › page 1 › Root cause":
    the PDF reader opens a span at a numbered heading or a line set larger than the text), whose sentences
    stand under that heading, not under the page's others. A JSON object's fields stand under its name
    (`json_name`)."""
    parts: list[tuple[str, list[str], list[str]]] = []  # (first span, headings, lines) of each passage
    for span in spans:
        # A JSON value's records in words (llm_platform.json_records), not its lines of keys and braces.
        records = said_records(span["text"])
        alone = heading_alone(span["text"])
        # A JSON file's plain value ("prepared_by: Ines Moreau") reads as a heading, yet states what it holds.
        if records is None and alone and span.get("locator", "").startswith(JSON_ROOT):
            records = [alone]
        section = opening_heading(span["text"]) if hit.page is not None else ""
        if section or not parts:  # a page's section opens a passage of its own
            parts.append((span["span_id"], [section] if section else [], []))
        if section:
            said = sentences_by_line(said_as_records(span["text"].partition("\n")[2]))
        elif records is None:
            # A span's heading names what its sentences are about: the passage's title says it, and it
            # is no sentence of an answer (nor of a card's suggestion).
            heading, text = (alone, "") if alone else split_leading_heading(span["text"])
            if heading and heading not in hit.section_path:
                parts[-1][1].append(heading)
            # A letter's sentences are said to the one its greeting names ("As an apology we are refunding your
            # weekly ticket" to "Dear Ms Harper"): the greeting heads them, as a section's heading does.
            greeting = next(filter(None, map(salutation, text.split("\n\n"))), "")
            if greeting:
                parts[-1][1].append(greeting)
            said = sentences_by_line(said_as_records(text))  # a table's rows as records under its header
        else:
            said = [[record] for record in records]
        # A sentence a line, and a blank line where the file's line ends: a question alone on its line may
        # head what follows (an FAQ's), one followed on its line is a request (conversation_app.offline).
        ref = f"{hit.filename}::{span['span_id']}"
        parts[-1][2].extend("\n".join(cited_sentence(sentence, ref) for sentence in line) for line in said)
    passages = []
    for first_span, headings, lines in parts:
        if not lines:
            continue  # a heading alone: nothing to quote
        located = hit.section_path or (f"page {hit.page}" if hit.page else named)
        where = " › ".join(filter(None, [located, *headings]))
        title = f"{hit.filename} › {where}" if where else hit.filename
        passages.append(Artifact(f"passage:{hit.filename}::{first_span}", title, "\n\n".join(lines)))
    return passages


def cited_sentence(sentence: str, sourceref: str) -> str:
    """ "Losses fell by 18 percent (valves.md::S3)." — the reference inside the sentence's end, so the
    line still ends a sentence (a line ending in ")" would be read as wrapped into the next)."""
    body, end = (sentence[:-1], sentence[-1]) if sentence[-1:] in ".!?" else (sentence, ".")
    return f"{body} ({sourceref}){end}"


def report_text(report: dict, replaced: set[str] = frozenset()) -> str:
    """The report as lines of sentences, each paragraph's sources inside every one of its sentences: a
    paragraph's "(refs)" after its last sentence joined it to the next paragraph (a line ending in ")"
    reads as wrapped), and a chat answer quoted three paragraphs as one sentence.

    A paragraph's sources are its SourceRefs and the spans of the session's own files its [n] citations
    open, while their version is current (not in `replaced`): a sentence the chat quotes from the report
    then cites the span it came from, which opens in one click, not the report."""
    opened = {
        reference.get("n"): reference["sourceref"]
        for reference in report.get("references", [])
        if reference.get("sourceref")
        and not reference.get("from_library")  # another session's file: this session's links do not open it
        and str(reference.get("version")) not in replaced
    }
    lines = [report["summary"]]
    for section in report["sections"]:
        for paragraph in section["paragraphs"]:
            spans = [opened[n] for n in paragraph.get("citations", []) if n in opened]
            refs = ", ".join(dict.fromkeys([*paragraph.get("sources", []), *spans]))
            sentences = split_sentences(paragraph["text"])
            lines.append(" ".join(cited_sentence(s, refs) for s in sentences) if refs else paragraph["text"])
    return "\n".join(lines)


def evidence_sources(artifacts: list[Artifact]) -> list[Source]:
    """One source per artifact; one that repeats an earlier one's text (a copy the system supplied) once."""
    sources: dict[str, Source] = {}
    for artifact in artifacts:
        source = note_source(f"[{artifact.key}] {artifact.title}", artifact.text or artifact.title)
        sources.setdefault(source.id, source)
    return list(sources.values())


def known_citations(artifacts: list[Artifact]) -> set[str]:
    """What an answer may cite: the artifacts' keys and the SourceRefs inside them."""
    keys = {a.key for a in artifacts}
    refs = {m for a in artifacts for m in sourcerefs.IN_TEXT.findall(a.text)}
    return keys | refs


def held_text(anchor: str, session: ResearchSession, artifacts: list[Artifact]) -> str | None:
    """The session's own text for an anchor the model asked for (an artifact key or a SourceRef), if it has it."""
    for artifact in artifacts:
        if artifact.key == anchor and artifact.text:
            return artifact.text
    parts = split_ref(anchor)
    if parts is None:
        return None
    filename, span_id, _hint = parts
    text = (
        FileText.objects.current()
        .filter(file__context_set__session=session, file__filename=filename)
        .values_list("spans", flat=True)
        .first()
    )
    span = provenance.span_in(text or [], span_id)
    return span["text"] if span else None


def source_versions(session: ResearchSession) -> dict[str, str]:
    """{filename: version} the SourceRefs of the session's artifacts cite, newest first:

    the files' current texts (their digests), then the versions the aggregate was
    built from, then those the newest report pinned (a file since deleted or replaced).
    """
    versions: dict[str, str] = {}
    run = ResearchRun.objects.filter(session=session, status=ResearchRun.Status.COMPLETED).only("report").first()
    for section in (run.report or {}).get("sections", []) if run else []:
        for paragraph in section["paragraphs"]:
            for link in paragraph.get("source_links", []):
                versions[provenance.parse_sourceref(link["sourceref"])[0]] = link["version"]
    context_set = ContextSet.objects.filter(session=session).first()
    if context_set is not None:
        versions.update(context_set.aggregate_versions or {})
        versions.update(provenance.current_versions(context_set.pk))
    return versions


def first_sourceref(text: str) -> str | None:
    match = sourcerefs.IN_TEXT.search(text or "")
    return match.group(0) if match else None


def cited_source_versions():
    """The text versions the chat cites (context_app.provenance retention): messages and request suggestions."""
    for links in ChatMessage.objects.exclude(source_links=[]).values_list("source_links", flat=True).iterator():
        yield from provenance.versions_in(links)
    for required in ContextRequest.objects.values_list("required", flat=True).iterator():
        yield from provenance.versions_in(required)
