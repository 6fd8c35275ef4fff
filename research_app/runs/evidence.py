"""A node's numbered search results as the models' evidence, and the citations findings keep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from context_app import provenance
from context_app.library import RECORD_MAX_CHARS
from llm_platform import grounding
from llm_platform.ir import note_source
from llm_platform.ir.types import Source

from ..search.providers import SearchResult

# What the model reads of a result, and what is stored with the node: a library record whole (its spans, at most
# RECORD_MAX_CHARS unless one span alone is longer, and a CSV's header line). Cut at 3,000 characters, the last
# quarter of a long record was out of sight: find(1)'s "-iname" stood at character 3,443 of its section.
RESULT_TEXT_CHARS = RECORD_MAX_CHARS + 1000


def result_json(n: int, result: SearchResult, *, shown_in=None) -> dict:
    """A numbered result; a library one also carries its citation (version, span, source_url, origin session)."""
    numbered = {
        "n": n,
        "provider": result.provider,
        "document": result.doc_id,
        "title": result.filename,
        "location": result.location,
        "page": result.page,
        "section": result.section_path,
        "url": result.url,
        "sourceref": result.sourceref,
        "file_id": result.file_id,
        "score": round(result.relevance_score, 4),
        "text": result.text[:RESULT_TEXT_CHARS],
    }
    if result.version:
        origin = provenance.origin_json(result.origin_session_id, result.origin_session_title)
        numbered.update(
            provenance.citation(result.sourceref, result.version, result.span, origin=origin, shown_in=shown_in)
        )
        numbered["last_span"] = result.last_span or result.span
    return numbered


def result_label(result: dict) -> str:
    """ "report.pdf, Page 3" (seed 002 citation style) or a web page's title."""
    return result["title"] if result["url"] else f"{result['title']}, {result['location']}"


def evidence_text(result: dict) -> str:
    """What a numbered result shows the model (and what its evidence source's id hashes)."""
    return result["text"] or result["title"]


def evidence(results: Sequence[dict]) -> list[Source]:
    """The numbered results as IR sources; one that repeats an earlier one's text merges into it (one source)."""
    return [note_source(f"[{r['n']}] {result_label(r)}", evidence_text(r)) for r in results]


def cited_findings(findings: Sequence[dict], results: Sequence[dict]) -> list[dict]:
    """Findings with their citations to results that exist and support them (llm_platform.grounding);
    a finding left citing none of them is dropped, and its marks of dropped citations go with them.

    `source_links` are the citation objects of the library results it cites (web results have none),
    each opening the span of its result's section or page that holds the finding (`pinpointed`).
    """
    by_number = {r["n"]: r for r in results}
    several = {n for n, r in by_number.items() if r.get("version") and len(_record_span_numbers(r)) > 1}
    # Only a record of several spans has one to choose: the other records' texts are not read.
    cited = {n for finding in findings for n in finding["citations"]}
    spans_of = provenance.spans_of_versions(by_number[n]["version"] for n in cited & several)
    kept = []
    for finding in findings:
        cited = {
            n: by_number[n]["text"] or by_number[n]["title"]
            for n in sorted(set(finding["citations"]))
            if n in by_number
        }
        supported, _unsupported = grounding.supporting(finding["text"], cited)
        if supported:
            links = [
                pinpointed(by_number[n], finding["text"], spans_of) for n in supported if by_number[n].get("source_url")
            ]
            text = grounding.keeping_marks(finding["text"], set(supported))
            kept.append({"text": text, "citations": supported, "source_links": links})
    return kept


def pinpointed(result: dict, statement: str, spans_of: Mapping[str, list[dict]]) -> dict:
    """The result's citation, opening the span of its record that best supports `statement`: a record
    is a section or a page of several spans, and its first need not say what was found in it."""
    link = citation_of(result)
    record = _record_spans(result, spans_of.get(result["version"], []))
    if len(record) > 1:
        best = max(record, key=lambda span: _support_rank(statement, span.get("text", "")))
        if grounding.supporting(statement, {0: best.get("text", "")})[0]:  # else the finding weaves several
            filename = provenance.parse_sourceref(result["sourceref"])[0]
            link.update(provenance.citation(f"{filename}::{best['span_id']}", result["version"], best["span_id"]))
    return link


def _record_spans(result: dict, spans: Sequence[dict]) -> list[dict]:
    """The spans of a library result's record, its first to its last."""
    numbers = _record_span_numbers(result)
    return [span for span in spans if _span_number(span["span_id"]) in numbers]


def link_opening(result: dict, links: Sequence[dict]) -> dict | None:
    """Of a finding's `source_links`, the one that opens a span of `result`'s record."""
    if not result.get("version"):
        return None  # a web page
    version, numbers = result["version"], _record_span_numbers(result)
    opening = [link for link in links if link.get("version") == version and _span_number(link["span"]) in numbers]
    return opening[0] if opening else None


def _span_number(span_id: str) -> int:
    return int(span_id[1:])


def _record_span_numbers(result: dict) -> range:
    # A result stored before results knew their last span stands for its first alone.
    return range(_span_number(result["span"]), _span_number(result.get("last_span") or result["span"]) + 1)


def _support_rank(statement: str, text: str) -> tuple[bool, float]:
    found = grounding.support(statement, text)
    return (not found.missing_figures, found.score)


CITATION_FIELDS = ("sourceref", "version", "span", "source_url", "origin_session", "from_library")


def citation_of(result: dict) -> dict:
    """The citation object a library result carries."""
    return {k: result[k] for k in CITATION_FIELDS if k in result}
