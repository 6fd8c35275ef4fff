"""A node's numbered search results as the models' evidence, and the citations findings keep."""

from __future__ import annotations

from collections.abc import Sequence

from context_app import provenance
from llm_platform import grounding
from llm_platform.ir import note_source
from llm_platform.ir.types import Source

from ..search.providers import SearchResult

RESULT_TEXT_CHARS = 3000  # of a result's text: what the model reads, and what is stored with the node


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

    `source_links` are the citation objects of the library results it cites (web results have none).
    """
    by_number = {r["n"]: r for r in results}
    kept = []
    for finding in findings:
        cited = {
            n: by_number[n]["text"] or by_number[n]["title"]
            for n in sorted(set(finding["citations"]))
            if n in by_number
        }
        supported, _unsupported = grounding.supporting(finding["text"], cited)
        if supported:
            links = [citation_of(by_number[n]) for n in supported if by_number[n].get("source_url")]
            text = grounding.keeping_marks(finding["text"], set(supported))
            kept.append({"text": text, "citations": supported, "source_links": links})
    return kept


CITATION_FIELDS = ("sourceref", "version", "span", "source_url", "origin_session", "from_library")


def citation_of(result: dict) -> dict:
    """The citation object a library result carries."""
    return {k: result[k] for k in CITATION_FIELDS if k in result}
