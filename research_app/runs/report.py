"""The run's cited report (SPEC §4): findings of every node plus the full user context again.

Search results are renumbered across the run (one number per document, page and the
span its findings open in it) and cited as [n] with a reference list in seed 002's
style; the user's files
are cited by SourceRef (`report.pdf::S4`), which the page opens in the raw
preview. Citations and SourceRefs the writer was not given are removed and
recorded in `dropped` before the report is stored.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from context_app import provenance
from digests.items import digest_items
from llm_platform import grounding
from llm_platform.model_task import TaskFailed
from workspaces.claims import claim

from ..models import ResearchNode, ResearchRun
from . import coverage, model_tasks
from .bundle import compact_items
from .ending import fail_run
from .events import RunStopped, announce, emit
from .evidence import citation_of, evidence, evidence_text, link_opening

Status = ResearchRun.Status


def write_report(run_id) -> None:
    run = ResearchRun.objects.filter(pk=run_id, status=Status.REPORTING).first()
    if run is None or run.report is not None:
        return
    bundle = run.context_bundle or {}
    nodes = list(ResearchNode.objects.filter(run=run).order_by("depth", "path"))
    references, findings = _numbered_references(nodes)
    versions = bundle.get("source_versions") or provenance.current_versions(bundle.get("session_context_id"))
    every_item = digest_items(bundle.get("aggregate_digest"))
    source_texts = provenance.span_texts({ref for item in every_item for ref in item["sources"]}, versions)
    citable = citable_items(every_item, source_texts)
    items, cut = compact_items(citable, run.question)
    file_summaries = [
        {"filename": f["filename"], "summary": f["summary"]} for f in bundle.get("files", []) if f["summary"]
    ]
    inputs = {
        "question": run.question,
        "findings": findings,
        "context_items": items,
        "file_summaries": file_summaries,
        "open_gaps": _open_gaps(nodes),
        "search_stats": {
            "nodes": len(nodes),
            "queries": sum(len(n.queries) for n in nodes),
            "results": len(references),
        },
    }
    try:
        emit(
            run.pk,
            "report_context_attached",
            while_status=Status.REPORTING,
            items=len(items),
            items_left_out=cut,
            items_not_citable=len(every_item) - len(citable),
            files=len(file_summaries),
            findings=len(findings),
            references=len(references),
        )
        result = model_tasks.run_task(
            model_tasks.REPORT,
            inputs,
            evidence(references),
            run=run,
            subject=f"run:{run.pk}:report",
            while_status=Status.REPORTING,
        )
    except RunStopped:
        return  # cancelled while the report was being written: nothing is stored
    except TaskFailed as exc:
        fail_run(run.pk, str(exc))
        return
    reference_texts = {r["n"]: evidence_text(r) for r in references}
    report, dropped = checked_report(result.output, reference_texts, source_texts)
    pin_sources(report, versions)
    report.update(
        question=run.question,
        references=[{**{k: r[k] for k in REFERENCE_FIELDS}, **citation_of(r)} for r in references],
        dropped=dropped,
        provider=result.call.provider,
        model=result.call.model,
        generated_at=timezone.now().isoformat(),
    )
    complete_with_report(run, report)


def complete_with_report(run: ResearchRun, report: dict, **told) -> None:
    """Store the report with the run's coverage record and end the run completed: `run_completed`
    (with `told`), then the coverage line, the thought stream's last. Nothing is stored when the
    run left `reporting` meanwhile (cancelled)."""
    record = coverage.recorded(run, report)
    with transaction.atomic():
        if not claim(
            ResearchRun.objects.filter(pk=run.pk),
            from_=Status.REPORTING,
            to=Status.COMPLETED,
            report=report,
            coverage=record,
            finished_at=timezone.now(),
        ):
            return  # cancelled meanwhile: the report is not stored
        emit(
            run.pk,
            "run_completed",
            title=report["title"],
            sections=len(report["sections"]),
            references=len(report["references"]),
            usage=model_tasks.run_progress(run.pk),
            **told,
        )
        if record is not None:
            emit(run.pk, "coverage_recorded", **coverage.event_payload(record))
        announce(run.pk)


REFERENCE_FIELDS = ("n", "provider", "title", "location", "page", "section", "url", "sourceref", "file_id")


def pin_sources(report: dict, versions: dict[str, str]) -> None:
    """Each paragraph's `source_links`: its SourceRefs pinned to the versions the run's bundle was bound to."""
    for section in report["sections"]:
        for paragraph in section["paragraphs"]:
            links = provenance.links_for(paragraph["sources"], versions)
            paragraph["source_links"] = [links[ref] for ref in paragraph["sources"] if ref in links]


def report_json(report: dict | None) -> dict | None:
    """The stored report as the API shows it: plus `sources_changed`, read now from the versions it cites."""
    if report is None:
        return None
    return {**report, "sources_changed": provenance.sources_changed(provenance.versions_in(report))}


def _numbered_references(nodes: list[ResearchNode]) -> tuple[list[dict], list[dict]]:
    """One number per (document, location, span) across the run, and per text: the same section
    found in two files by two nodes is one reference. A result is listed at each span its node's
    findings open in it (evidence.pinpointed), with that span's text, else whole at its first span
    (what a finding no one span supports is held to). The nodes' findings cite those numbers."""
    references: list[dict] = []
    number_of: dict[tuple, int] = {}
    number_of_text: dict[str, int] = {}
    findings = []
    opened = provenance.spans_of_versions(
        link["version"] for node in nodes for f in node.findings for link in f.get("source_links", [])
    )

    def number(result: dict, link: dict | None) -> int:
        listed = _listed_at(result, link, opened)
        key = (result["document"], result["location"], listed.get("span"))
        if key not in number_of:
            text = " ".join(evidence_text(listed).split())
            if text not in number_of_text:
                number_of_text[text] = len(references) + 1
                references.append({**listed, "n": number_of_text[text]})
            number_of[key] = number_of_text[text]
        return number_of[key]

    for node in nodes:
        by_n = {r["n"]: r for r in node.results}
        for result in node.results:
            citing = [f for f in node.findings if result["n"] in f["citations"]]
            for link in [link_opening(result, f.get("source_links", [])) for f in citing] or [None]:
                number(result, link)
        for finding in node.findings:
            cited = [by_n[n] for n in finding["citations"] if n in by_n]
            numbers = {number(result, link_opening(result, finding.get("source_links", []))) for result in cited}
            findings.append(
                {"node": node.path, "question": node.question, "text": finding["text"], "citations": sorted(numbers)}
            )
    return references, findings


def _listed_at(result: dict, link: dict | None, spans_of: dict[str, list[dict]]) -> dict:
    """A result as a reference: at the span a finding's link pins it to, with that span's text; else whole."""
    if link is None or link["span"] == result.get("span"):
        return result
    span = provenance.span_in(spans_of.get(link["version"], []), link["span"]) or {}
    return {**result, **link, "text": span.get("text", "")}


def citable_items(items: list[dict], source_texts: dict[str, str]) -> list[dict]:
    """The items a report can cite: those one of their own sources supports (llm_platform.grounding).
    A digest's computed fact ("the total over 4 rows is 322") states what no span says; given to the
    writer, it would be cited, then removed by the check every report passes (checked_report)."""
    return [
        item
        for item in items
        if grounding.supporting(item["text"], {ref: source_texts.get(ref, "") for ref in item["sources"]})[0]
    ]


def _open_gaps(nodes: list[ResearchNode]) -> list[str]:
    """Gaps of the nodes that stayed unanswered (leaves, not the decomposed ones whose children took them over)."""
    gaps: list[str] = []
    for node in nodes:
        if node.status == ResearchNode.Status.DECOMPOSED or not node.sufficiency:
            continue
        for gap in node.sufficiency.get("gaps", []):
            if gap not in gaps:
                gaps.append(gap)
    return gaps


def checked_report(
    output: dict, reference_texts: dict[int, str], source_texts: dict[str, str]
) -> tuple[dict, list[str]]:
    """The report with only the citations and SourceRefs that were given and whose text supports
    the paragraph (llm_platform.grounding); a paragraph left with no support is dropped. What was
    removed is said plainly."""
    dropped: list[str] = []
    sections = []
    for section in output["sections"]:
        where = f"in “{section['heading']}”"
        paragraphs = []
        for number, paragraph in enumerate(section["paragraphs"], start=1):
            asked_citations, asked_sources = paragraph.get("citations", []), paragraph.get("sources", [])
            for n in sorted(set(asked_citations) - set(reference_texts)):
                dropped.append(f"citation [{n}] {where}: no such reference")
            for ref in sorted(set(asked_sources) - set(source_texts)):
                dropped.append(f"source {ref} {where}: not in the user's context")
            cited = {n: reference_texts[n] for n in dict.fromkeys(asked_citations) if n in reference_texts}
            cited |= {ref: source_texts[ref] for ref in dict.fromkeys(asked_sources) if ref in source_texts}
            supported, unsupported = grounding.supporting(paragraph["text"], cited)
            for key in unsupported:
                shown = f"citation [{key}]" if isinstance(key, int) else f"source {key}"
                dropped.append(f"{shown} {where}: its text does not support the paragraph")
            if (asked_citations or asked_sources) and not supported:
                dropped.append(f"paragraph {number} {where} dropped, no cited text supports it")
                continue
            citations = [key for key in supported if isinstance(key, int)]
            paragraphs.append(
                {
                    "text": grounding.keeping_marks(paragraph["text"], set(citations)),
                    "citations": citations,
                    "sources": [key for key in supported if isinstance(key, str)],
                }
            )
        if paragraphs:
            sections.append({"heading": section["heading"], "paragraphs": paragraphs})
    report = {
        "title": output["title"],
        "summary": output["summary"],
        "sections": sections,
        "open_questions": output.get("open_questions", []),
    }
    return report, dropped
