"""The team's document library: every extracted file as page/section records, ranked by BM25.

A record is a run of consecutive spans on one PDF page, under one heading path
(DOCX, Markdown, HTML), or a size-bounded run for formats without either (text,
CSV, JSON). Records are written when a file's text is extracted and removed with
the file, so search never reads a file's text at query time.

Ranking is Okapi BM25 over an inverted index kept in the database (`LibraryPosting`)
and ranked in memory (context_app.library_index), fused with a ranking by meaning
where embeddings are on (context_app.meaning). Terms are lower-cased, stop words dropped, and
stemmed with the Snowball English stemmer ("arguments" and "argument" match).
The heading path counts as part of a record's text, so a section about
"Default Argument Values" ranks for "default arguments" even when its body says
"defaults".

Results are deduplicated by (document, location) keeping the best score: the
same text uploaded to two sessions of a team is one document (its
`extracted_text_hash`), and a long PDF page or section split into several
records is one place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from django.db import transaction
from django.db.models import F

from extraction.blocks import SECTION_PATH_SEPARATOR
from llm_platform import embeddings
from llm_platform.ir.types import page_of_locator
from llm_platform.search_index import fuse_scores
from llm_platform.terms import analyze

from . import library_index
from .models import ContextFile, FileText, LibraryPosting, LibraryRecord

RECORD_MAX_CHARS = 4000
# Formats whose locators are headings: a record is one section.
SECTIONED_FORMATS = frozenset({"docx", "markdown", "html", "text"})
SECTION_LOCATION = "Section: "  # a section's place as references say it: "Section: Methods > Sampling"
# Formats whose locators are pages ("p. 3"): a record is one page (an image's pages are its frames).
PAGED_FORMATS = frozenset({"pdf", "image"})

# --- records -------------------------------------------------------------------


@dataclass(frozen=True)
class RecordDraft:
    position: int  # 1-based order in the file
    page: int | None  # PDF page; None for unpaginated formats
    section_path: str
    text: str
    first_span: str
    last_span: str

    @property
    def parent_heading(self) -> str:
        return self.section_path.rsplit(SECTION_PATH_SEPARATOR, 1)[-1] if self.section_path else ""


def records_from_spans(file_format: str, spans: Sequence[Mapping]) -> list[RecordDraft]:
    """Group spans into page/section records (see the module docstring).

    A CSV's header span starts no record of its own: a record cited by its first span
    would open the column names, not the rows it matched. Each record of rows
    starts with the header's text instead, so the column names are searchable.
    """
    header = ""
    if file_format == "csv" and len(spans) > 1 and spans[0].get("locator") == "header":
        header, spans = str(spans[0].get("text") or ""), spans[1:]
    groups: list[list[Mapping]] = []
    previous_key: str | None = None
    size = 0
    for span in spans:
        locator = str(span.get("locator") or "")
        if file_format in PAGED_FORMATS or file_format in SECTIONED_FORMATS:
            key = locator
        else:
            key = ""
        text = str(span.get("text") or "")
        if not groups or key != previous_key or size + len(text) > RECORD_MAX_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(span)
        size += len(text) + 2
        previous_key = key
    drafts = []
    for position, group in enumerate(groups, start=1):
        locator = str(group[0].get("locator") or "")
        page = page_of_locator(locator) if file_format in PAGED_FORMATS else None
        drafts.append(
            RecordDraft(
                position=position,
                page=page,
                section_path="" if page is not None or file_format not in SECTIONED_FORMATS else locator,
                text="\n\n".join(([header] if header else []) + [str(s.get("text") or "") for s in group]),
                first_span=str(group[0]["span_id"]),
                last_span=str(group[-1]["span_id"]),
            )
        )
    return drafts


def record_terms(draft: RecordDraft) -> Counter:
    """Term frequencies of a record; heading ancestors above its own heading add their words once."""
    terms = Counter(analyze(draft.text))
    terms.update(set(analyze(draft.section_path)) - set(terms))
    return terms


INDEX_RECORDS_PER_TRANSACTION = 200  # a write transaction stays short however large the file


def index_file(file: ContextFile, version: FileText) -> int:
    """(Re)write the library records of `file` from the spans of its current `version`; returns how many.

    Terms are computed before any transaction; records and postings are written in
    short transactions of INDEX_RECORDS_PER_TRANSACTION records each, each holding the
    file's row and writing only while `version` is still the file's current text (a
    newer extraction re-indexes the file itself; what this one wrote is removed).
    """
    drafts = records_from_spans(file.format, version.spans)
    terms = [record_terms(draft) for draft in drafts]
    scope = file.context_set.cache_scope
    written = 0
    for first in range(0, max(len(drafts), 1), INDEX_RECORDS_PER_TRANSACTION):
        with transaction.atomic():
            if not _still_current(file, version):
                LibraryRecord.objects.filter(file_id=file.pk, file_text=version).delete()
                return 0
            if first == 0:
                forget_file(file.pk)
            batch = slice(first, first + INDEX_RECORDS_PER_TRANSACTION)
            written += _write_records(file, version, scope, drafts[batch], terms[batch])
    return written


def _still_current(file: ContextFile, version: FileText) -> bool:
    ContextFile.objects.select_for_update().filter(pk=file.pk).first()  # in line after the file's writers
    return FileText.objects.current().filter(pk=version.pk, file_id=file.pk).exists()


def _write_records(
    file: ContextFile, version: FileText, scope: str, drafts: list[RecordDraft], terms: list[Counter]
) -> int:
    records = LibraryRecord.objects.bulk_create(
        [
            LibraryRecord(
                file=file,
                file_text=version,
                scope=scope,
                document_id=file.extracted_text_hash,
                position=draft.position,
                page=draft.page,
                section_path=draft.section_path[:500],
                parent_heading=draft.parent_heading[:255],
                text=draft.text,
                first_span=draft.first_span,
                last_span=draft.last_span,
                length=sum(counts.values()),
            )
            for draft, counts in zip(drafts, terms, strict=True)
        ]
    )
    LibraryPosting.objects.bulk_create(
        [
            LibraryPosting(record=record, scope=scope, term=term, tf=tf)
            for record, counts in zip(records, terms, strict=True)
            for term, tf in counts.items()
        ],
        batch_size=2000,
    )
    library_index.library_changed(scope)
    return len(records)


def forget_file(file_id) -> None:
    scope = LibraryRecord.objects.filter(file_id=file_id).values_list("scope", flat=True).first()
    if scope is not None:
        LibraryRecord.objects.filter(file_id=file_id).delete()
        library_index.library_changed(scope)


# --- search --------------------------------------------------------------------


def location_key(document_id: str, page: int | None, section_path: str, position: int) -> tuple[str, str]:
    """What counts as one place in a document: its page, else its section, else its record."""
    if page is not None:
        return document_id, f"p{page}"
    if section_path:
        return document_id, f"s{section_path}"
    return document_id, f"r{position}"


@dataclass(frozen=True)
class LibraryHit:
    record_id: int
    file_id: str
    context_set_id: str
    document_id: str
    filename: str
    file_format: str
    page: int | None
    position: int
    section_path: str
    parent_heading: str
    text: str
    first_span: str
    last_span: str
    uploaded_at: str
    score: float
    version: str = ""  # the FileText version the record was cut from (provenance.citation)
    origin_session_id: str = ""  # the session whose file it is
    origin_session_title: str = ""

    @property
    def location_key(self) -> tuple[str, str]:
        return location_key(self.document_id, self.page, self.section_path, self.position)

    @property
    def sourceref(self) -> str:
        """The SourceRef of the record's first span, e.g. "report.pdf::S4" (opens the raw preview)."""
        return f"{self.filename}::{self.first_span}"


FUSION_DEPTH = 100


class SearchMode(StrEnum):
    BM25 = "bm25"  # by the query's words alone
    DENSE = "dense"  # by meaning alone (cosine of embeddings)
    HYBRID = "hybrid"  # both, their scores fused (llm_platform.search_index.fuse_scores)


@dataclass(frozen=True)
class LibraryResults:
    hits: list[LibraryHit]
    mode: SearchMode  # what ranked them: HYBRID falls back to BM25 when meaning is unavailable
    warning: str = ""  # why it fell back, for the thought stream and the search output


def default_mode() -> SearchMode:
    return SearchMode.HYBRID if embeddings.enabled() else SearchMode.BM25


def search(
    scope: str,
    query: str,
    limit: int = 10,
    *,
    context_set_id=None,
    mode: SearchMode | None = None,
    own_session_id: str = "",
) -> LibraryResults:
    """The best `limit` records of the scope's library for `query`, deduplicated by (document, location);
    with `context_set_id`, the library of that set's files alone (a session's chat). Of copies of one
    document that score alike, the one in `own_session_id` (the session searching) is the hit: a file the
    session holds is cited as its own, not as a teammate's copy.

    Hybrid (the default with embeddings on) fuses BM25's ranking with the ranking by meaning;
    when the query cannot be embedded (provider off, down, or answering garbage) it is BM25's
    ranking alone, with a warning that says why."""
    mode = mode or default_mode()
    if limit <= 0 or not query.strip():
        return LibraryResults([], mode)
    depth = max(limit * 4, FUSION_DEPTH)  # each ranking's candidates: deeper than `limit`, for dedup and agreement
    keyword = [] if mode == SearchMode.DENSE else bm25_ranking(scope, query, depth, context_set_id=context_set_id)
    warning = ""
    if mode != SearchMode.BM25:
        try:
            query_vector = embeddings.embed([query], subject="search")[0]
            vectors = library_index.vector_index(scope, embeddings.model_key())
            dense = vectors.nearest(query_vector, depth, library_index.stored_vectors, group=_group(context_set_id))
        except embeddings.EmbeddingsUnavailable as exc:
            warning = f"searched by keywords only: {exc}"
            mode, keyword = SearchMode.BM25, keyword or bm25_ranking(scope, query, depth, context_set_id=context_set_id)
        else:
            keyword = fuse_scores(keyword, dense)
    return LibraryResults(_distinct_hits(keyword, limit, own_session_id), mode, warning)


def bm25_ranking(scope: str, query: str, limit: int, *, context_set_id=None) -> list[tuple[int, float]]:
    """(record id, BM25 score) of the records that hold the query's terms, best first; ties by record id."""
    terms = sorted(set(analyze(query)))
    if not terms:
        return []
    return library_index.term_index(scope).rank(terms, limit, group=_group(context_set_id))


def _group(context_set_id) -> str | None:
    return str(context_set_id) if context_set_id is not None else None


def _distinct_hits(ranked: list[tuple[int, float]], limit: int, own_session_id: str = "") -> list[LibraryHit]:
    """The ranked records as hits, one per (document, location), of two alike the one in `own_session_id`;
    a record deleted meanwhile is skipped."""
    hits: dict[tuple[str, str], LibraryHit] = {}  # in rank order
    # Duplicates are rare (copies of a document, split pages), so a small
    # overfetch almost always fills `limit` in one query.
    for start in range(0, len(ranked), limit * 2):
        window = ranked[start : start + limit * 2]
        records = _load_records([record_id for record_id, _s in window])
        for record_id, score in window:
            if record_id not in records:
                continue
            hit = _hit(records[record_id], score)
            seen = hits.get(hit.location_key)
            if seen is None:
                if len(hits) == limit:
                    return list(hits.values())
                hits[hit.location_key] = hit
            elif hit.score == seen.score and own_session_id and hit.origin_session_id == own_session_id:
                hits[hit.location_key] = hit
    return list(hits.values())


def _load_records(record_ids: list[int]) -> dict[int, LibraryRecord]:
    records = (
        LibraryRecord.objects.filter(pk__in=record_ids)
        .select_related("file")
        .annotate(
            version=F("file_text__version"),
            origin_session_id=F("file__context_set__session_id"),
            origin_session_title=F("file__context_set__session__title"),
        )
    )
    return {record.pk: record for record in records}


def _hit(record: LibraryRecord, score: float) -> LibraryHit:
    file = record.file
    return LibraryHit(
        record_id=record.pk,
        file_id=str(file.pk),
        context_set_id=str(file.context_set_id),
        document_id=record.document_id,
        filename=file.filename,
        file_format=file.format,
        page=record.page,
        position=record.position,
        section_path=record.section_path,
        parent_heading=record.parent_heading,
        text=record.text,
        first_span=record.first_span,
        last_span=record.last_span,
        uploaded_at=file.uploaded_at.isoformat(),
        score=round(score, 6),
        version=str(record.version) if record.version else "",
        origin_session_id=str(record.origin_session_id) if record.origin_session_id else "",
        origin_session_title=record.origin_session_title or "",
    )
