"""Update a report whose cited files changed (issue 25): a new run linked to the old one (`updates_run`).

The old run and its report are never touched. The update re-checks every claim (a report paragraph)
that cites a version no longer current, with the grounding check that gates reports
(llm_platform.grounding), against the spans of its file's current version:

- still supported → kept, its citation re-pinned to the supporting span of the new version
  ("unchanged" when that span says what the old one said, else "changed");
- supported by none of its citations any more, or its file deleted → "withdrawn", and the leaf node
  whose results held the lost citation is explored again through the engine (the only model calls);
- a paragraph citing no changed version is kept as it is, without a model call.

Every other node is copied with its findings. The updated report is written here, from the old one
and the re-explored nodes' findings (each checked again against the span its citation opens), with
`report["update"]`: the change summary and each changed claim's old and new text.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import NamedTuple

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from context_app import provenance
from context_app.selectors import digest_facts_of
from digests.offline_csv import ABOUT_THE_FILE, computed_label
from llm_platform import grounding
from llm_platform.models import LLMCall
from llm_platform.statements import statements
from llm_platform.terms import comparison_key, content_terms, cut_text, split_sentences
from workspaces.errors import ApplicationError

from ..models import NodeContextSlice, ResearchNode, ResearchRun
from . import coverage, jobs
from .engine import report_when_done
from .events import announce, emit
from .evidence import citation_of, link_opening
from .report import complete_with_report

Status = ResearchRun.Status
NodeStatus = ResearchNode.Status

UNCHANGED_MESSAGE = "no cited source changed"
NEW_SECTION = "From the changed files"
# A statement of a changed file's new version that holds this share of a withdrawn claim's words (and the
# claim of its own) says the same thing with other facts, and rewrites the claim. Chosen, not tuned: a
# corrected figure or name leaves most words; another statement of the same file shares its subject's few.
REWRITE_OVERLAP = 0.6
MAX_HEADING_CHARS = 300  # a report section's heading: its node's question, cut (offline/report.py)
MARKER_FIELDS = ("status", "old_text", "old_cited_text", "new_text", "new_cited_text")


def changed_sources(run: ResearchRun) -> list[dict]:
    """The versions the run's report cites that are no longer current (context_app.provenance)."""
    return provenance.sources_changed(provenance.versions_in(run.report))


def start_update(run: ResearchRun, user: AbstractBaseUser) -> ResearchRun | None:
    """The update run of `run`, running; None when no cited source changed (nothing made, no model call)."""
    if not run.is_finished:
        raise ApplicationError(f"the run is {run.status}; update it once it has finished", 409)
    if run.report is None:
        raise ApplicationError(f"the run has no report to update (status: {run.status})", 409)
    _refuse_while_updating(run)  # before the re-check: a refused request does no work
    changed = changed_sources(run)
    if not changed:
        return None
    successors = provenance.successors(c["version"] for c in changed)
    digest_facts = digest_facts_of(new for _old, new in successors.values() if new is not None)
    draft, claims, withdrawn = recheck(run.report, successors, digest_facts)
    old_nodes = list(ResearchNode.objects.filter(run=run).select_related("context_slice").order_by("depth", "path"))
    again = nodes_to_explore_again(old_nodes, withdrawn)
    counts = _counts(claims)
    summary = {
        "updates_run": str(run.pk),
        "changed_files": [{k: c[k] for k in ("filename", "status")} for c in changed],
        "claims": claims,
        "explored_again": sorted(old_nodes[i].path for i in again),
        "current_versions": sorted({str(new.version) for _old, new in successors.values() if new is not None}),
        "draft": draft,
        **counts,
    }
    try:
        return _create_update_run(run, user, old_nodes, again, summary, _bundle_now(run.context_bundle, successors))
    except IntegrityError:
        # Another request made its update run between our check and our insert: the database's
        # constraint (one_open_update_per_run) let only one in. Refused as the check refuses.
        _refuse_while_updating(run)
        raise


def open_update(run: ResearchRun) -> ResearchRun | None:
    """The update of `run` that has not finished yet, if any (at most one: one_open_update_per_run)."""
    return ResearchRun.objects.filter(updates_run=run).exclude(status__in=ResearchRun.FINISHED).first()


def _refuse_while_updating(run: ResearchRun) -> None:
    """409 naming the update run of `run` still under way: a second update would redo its work."""
    running = open_update(run)
    if running is not None:
        raise ApplicationError(
            f"an update of this run is already {running.status} (run {running.pk}); wait for it to finish",
            409,
            update_run_id=str(running.pk),
        )


def _create_update_run(
    run: ResearchRun,
    user: AbstractBaseUser,
    old_nodes: list[ResearchNode],
    again: set[int],
    summary: dict,
    bundle: dict | None,
) -> ResearchRun:
    """The update run with its copied nodes and first events, in one transaction; the nodes to explore
    again are queued once it commits. IntegrityError when another open update of `run` exists."""
    counts = {k: summary[k] for k in ("changed", "withdrawn", "unchanged")}
    with transaction.atomic():
        new = ResearchRun.objects.create(
            session_id=run.session_id,
            created_by=user,
            question=run.question,
            max_depth=run.max_depth,
            max_children=run.max_children,
            # Room for no new node: a node explored again answers from the new text, it is not split anew.
            max_nodes=max(1, len(old_nodes)),
            token_budget=run.token_budget,
            status=Status.RUNNING,
            started_at=timezone.now(),
            context_bundle=bundle,
            context_processing=run.context_processing,
            updates_run=run,
            update_summary=summary,
        )
        limits = {k: getattr(new, k) for k in ("max_depth", "max_children", "max_nodes", "token_budget")}
        emit(new.pk, "run_queued", question=run.question, limits=limits, updates_run=str(run.pk))
        announce(new.pk, "run.created")
        pending = _copy_nodes(old_nodes, new, again)
        coverage.record_so_far(new.pk)  # the copied nodes' reach, before a node is explored again
        emit(
            new.pk,
            "update_checked",
            updates_run=str(run.pk),
            changed_files=summary["changed_files"],
            explored_again=summary["explored_again"],
            message=_summary_line(counts, None, None),
            **counts,
        )
        for node_id in pending:
            transaction.on_commit(lambda pk=node_id: jobs.enqueue(jobs.EXPLORE_NODE, pk))
        if not pending:
            transaction.on_commit(lambda: report_when_done(new.pk))
    return new


# --- the re-check ---------------------------------------------------------------------


class Withdrawn(NamedTuple):
    text: str
    lost: set  # the (version, span) citations it lost
    section: str  # the heading it stood under


def recheck(
    report: dict, successors: dict, digest_facts: dict[str, list[dict]] | None = None
) -> tuple[dict, list[dict], list[Withdrawn]]:
    """(the report with every claim re-checked, the claims that cite a changed version, the withdrawn
    ones). `successors`: provenance.successors; `digest_facts`: the facts of the new versions' digests
    (context_app.selectors.digest_facts_of).

    A claim that none of its citations supports any more is rewritten from the new text when one of
    its files' new versions says it again with other facts (`_rewritten`: "… unavailable for 52
    minutes …" of "… for 47 minutes …"). An item of the user's files that no span says word for word (a
    total computed from a table's rows) is kept or rewritten by its file's new digest (`_restated`);
    else a claim is withdrawn."""
    digest_facts = digest_facts or {}
    refs = {r["n"]: dict(r) for r in report["references"]}
    stale = {n for n, r in refs.items() if r.get("version") in successors}
    repinned: dict[int, dict] = {}
    next_n = max(refs, default=0) + 1
    sections, claims, withdrawn = [], [], []
    rewritten: dict[str, str] = {}  # a claim's old text → the sentence of the new text that says it now
    unchanged = 0
    pins: dict[tuple, tuple] = {}

    def repin(statement: str, link: dict, weaves: bool) -> tuple[str, tuple[dict, str] | None]:
        """`_repin`, once a (statement, cited span): a claim checked before a rewrite is not checked again."""
        key = (statement, link["version"], link["span"], weaves)
        if key not in pins:
            pins[key] = _repin(statement, link, successors, weaves=weaves)
        return pins[key]

    for section in report["sections"]:
        paragraphs = []
        for paragraph in section["paragraphs"]:
            links = paragraph.get("source_links", [])
            touched_refs = [n for n in paragraph["citations"] if n in stale]
            touched_links = [link for link in links if link.get("version") in successors]
            paragraph = {k: v for k, v in paragraph.items() if k != "update"}  # an earlier update's marker
            if not touched_refs and not touched_links:
                paragraphs.append(paragraph)
                unchanged += 1
                continue
            original = paragraph["text"]
            citations = [n for n in paragraph["citations"] if n not in stale]
            text = original
            touched = [refs[n] for n in touched_refs] + touched_links
            weaves = len(paragraph["citations"]) + len(links) > 1  # a claim of several sources
            # No unchanged citation backs it, and none of its changed ones does any more: say it from the new text.
            alone = not citations and len(touched_links) == len(links)
            if alone and all(repin(original, link, weaves)[1] is None for link in touched):
                text = _rewritten(original, touched, successors)
                if text != original:
                    rewritten[original] = text
            renumber: dict[int, int] = {}
            old_cited, new_cited, lost_here, same = [], [], [], True
            for n in touched_refs:
                old_text, found = repin(text, refs[n], weaves)
                old_cited.append(old_text)
                if found is None:
                    lost_here.append((refs[n]["version"], refs[n]["span"]))
                    continue
                link, new_text = found
                same = same and _same_sentences(text, old_text, new_text)
                if n not in repinned:
                    repinned[n] = {**refs[n], **link, "_text": new_text}
                    m = n
                elif repinned[n]["span"] == link["span"] or grounding.supports(text, repinned[n]["_text"]):
                    m, new_text = n, repinned[n]["_text"]
                else:  # the number already stands for another span of the new version
                    m, next_n = next_n, next_n + 1
                    repinned[m] = {**refs[n], **link, "n": m, "_text": new_text}
                    renumber[n] = m
                citations.append(m)
                new_cited.append(new_text)
            sources = [ref for ref in paragraph["sources"] if ref not in {k["sourceref"] for k in touched_links}]
            kept_links = [link for link in links if link not in touched_links]
            for link in touched_links:
                old_text, found = repin(text, link, weaves)
                old_cited.append(old_text)
                if found is None:
                    lost_here.append((link["version"], link["span"]))
                    continue
                new_link, new_text = found
                same = same and _same_sentences(text, old_text, new_text)
                sources.append(new_link["sourceref"])
                kept_links.append(new_link)
                new_cited.append(new_text)
            old_cited, new_cited = list(dict.fromkeys(old_cited)), list(dict.fromkeys(new_cited))
            entry = {"section": section["heading"], "old_text": original, "old_cited_text": "\n".join(old_cited)}
            restated = None if citations or kept_links else _restated(text, touched_links, successors, digest_facts)
            if restated is not None:
                text, kept_links, new_cited, restated_sources = restated
                sources += restated_sources
                same, lost_here = comparison_key(text) == comparison_key(original), []
                if not same:
                    rewritten[original] = text
            if not citations and not kept_links:
                claims.append({**entry, "status": "withdrawn", "new_text": None, "new_cited_text": None})
                withdrawn.append(Withdrawn(original, set(lost_here), section["heading"]))
                continue
            new_text = grounding.keeping_marks(_renumbered(text, renumber), set(citations))
            status = "unchanged" if same and not lost_here and new_text == original else "changed"
            if status == "unchanged":
                unchanged += 1
                marker = None
            else:
                marker = {**entry, "status": status, "new_text": new_text, "new_cited_text": "\n".join(new_cited)}
                claims.append(marker)
            kept = {**paragraph, "text": new_text, "citations": list(dict.fromkeys(citations))}
            kept.update(sources=list(dict.fromkeys(sources)), source_links=kept_links)
            if marker is not None:
                kept["update"] = {k: marker[k] for k in MARKER_FIELDS}
            paragraphs.append(kept)
        if paragraphs:
            sections.append({**section, "paragraphs": paragraphs})
    cited = {n for s in sections for p in s["paragraphs"] for n in p["citations"]}
    references = [r for n, r in refs.items() if n not in stale]
    references += [{k: v for k, v in r.items() if k != "_text"} for n, r in repinned.items() if n in cited]
    draft = {**report, "sections": sections, "references": sorted(references, key=lambda r: r["n"])}
    draft["summary"] = summary_now(report.get("summary", ""), [w.text for w in withdrawn], rewritten)
    claims.append({"status": "unchanged", "count": unchanged})
    return draft, claims, withdrawn


def summary_now(summary: str, withdrawn: list[str], rewritten: dict[str, str]) -> str:
    """The report's summary without its sentences that state a withdrawn claim (they cite nothing,
    so no citation check would catch them), and with those that state a rewritten one said anew."""
    old_claims = [*withdrawn, *rewritten]
    if not old_claims:
        return summary
    said = []
    for sentence in grounding.sentences(summary):
        stated = next((claim for claim in old_claims if _states(sentence, claim)), None)
        if stated is None:
            said.append(sentence)
        elif stated in rewritten:
            said.append(_plain(rewritten[stated]))
    return " ".join(said)


def _states(sentence: str, claim: str) -> bool:
    return _plain(sentence) == _plain(claim) or grounding.supports(sentence, _plain(claim))


def _rewritten(statement: str, touched: list[dict], successors: dict) -> str:
    """The statement of the new versions of `touched` (citations no longer supporting `statement`) that
    says it again with other facts (it and `statement` share REWRITE_OVERLAP of the longer one's words: a
    corrected figure, a new date), with `statement`'s citation marks, which the re-check then pins to that
    sentence's span; else `statement`."""
    news = {id(new): new for link in touched if (new := successors[link["version"]][1]) is not None}
    candidates = [sentence for new in news.values() for span in new.spans for sentence in statements(span["text"])]
    said = _plain(statement)
    best = max(candidates, key=lambda sentence: _shared_words(said, sentence), default=None)
    if best is None or _shared_words(said, best) < REWRITE_OVERLAP:
        return statement
    return " ".join([best, *(mark.group(0) for mark in grounding.CITATION_MARKS.finditer(statement))])


def _restated(
    item: str, touched: list[dict], successors: dict, digest_facts: dict[str, list[dict]]
) -> tuple[str, list[dict], list[str], list[str]] | None:
    """(the text, citations, cited texts and SourceRefs) of an item of the user's files as its file's new
    digest says it: the same claim, or the claim the digest computed anew under the item's label ("activity_pct
    by variant, on average: …", "tm_celsius ranges from …" of a table whose rows changed); None when it says
    neither."""
    label = computed_label(item)
    for link in touched:
        new = successors[link["version"]][1]
        facts = digest_facts.get(str(new.version), []) if new is not None else []
        same = [f for f in facts if comparison_key(f.get("claim")) == comparison_key(item)]
        computed = [
            f
            for f in facts
            if label and f.get("reliability_note") in ABOUT_THE_FILE and computed_label(f.get("claim", "")) == label
        ]
        fact = next(iter(same or computed), None)
        pinned = [provenance.parse_sourceref(ref) for ref in fact.get("sources", [])] if fact else []
        spans = [span for filename, span in filter(None, pinned) if filename == new.filename]
        if spans:
            links = [provenance.citation(f"{new.filename}::{span}", new.version, span) for span in spans]
            cited = [(provenance.span_in(new.spans, span) or {}).get("text", "") for span in spans]
            return fact["claim"], links, cited, [link["sourceref"] for link in links]
    return None


def _shared_words(old: str, new: str) -> float:
    """The share of the longer statement's words that both hold (figures count as words)."""
    a, b = set(content_terms(old)), set(content_terms(new))
    return len(a & b) / max(len(a), len(b), 1)


def _same_sentences(statement: str, old_text: str, new_text: str) -> bool:
    """Whether the new cited text still holds every sentence of the old one that supports the statement
    (the whole old text when no single sentence does): the claim is unchanged, only re-pinned."""
    # A list's items are its sentences ("- Vendor chosen: 15 January 2027"): a changed item leaves the others.
    supporting = [s for s in split_sentences(old_text) if grounding.supports(statement, s)]
    if not supporting:
        return " ".join(old_text.split()) == " ".join(new_text.split())
    flat = " ".join(new_text.split())
    return all(" ".join(s.split()) in flat for s in supporting)


def _repin(statement: str, link: dict, successors: dict, *, weaves: bool) -> tuple[str, tuple[dict, str] | None]:
    """(the old cited span's text, (the citation re-pinned to the new version's span that supports
    `statement`, that span's text) or None). The span with the old text is preferred when it still supports.
    A claim that `weaves` several sources is supported clause by clause; one with a single source only by a
    span that says it whole ("First delivery …: 12 April 2027", not its label alone)."""
    old, new = successors[link["version"]]
    old_text = (provenance.span_in(old.spans, link["span"]) or {}).get("text", "")
    if new is None:
        return old_text, None
    spans = {s["span_id"]: s["text"] for s in new.spans}
    if weaves:
        supported, _ = grounding.supporting(statement, spans)
    else:
        supported = [span for span, text in spans.items() if grounding.supports(statement, text)]
    if not supported:
        return old_text, None
    span = next((s for s in supported if spans[s] == old_text), supported[0])
    ref = f"{new.filename}::{span}"
    pinned = provenance.citation(ref, new.version, span)
    pinned.update({k: link[k] for k in ("origin_session", "from_library") if k in link})
    return old_text, (pinned, spans[span])


def _renumbered(text: str, renumber: dict[int, int]) -> str:
    if not renumber:
        return text

    def marks(match: re.Match) -> str:
        return f"[{', '.join(str(renumber.get(n, n)) for n in grounding.mark_numbers(match))}]"

    return grounding.CITATION_MARKS.sub(marks, text)


def nodes_to_explore_again(nodes: list[ResearchNode], withdrawn: list[Withdrawn]) -> set[int]:
    """The indexes of the nodes that made the withdrawn claims: for each, of the leaves whose finding is
    the claim's text and cites what it lost (else whose findings cite what it lost), the one whose
    question heads the claim's section, else the deepest (a decomposed node's children hold its work:
    it is not explored again). Parts of a question often find the same sentence, and the report tells
    it under the one it answers. A claim no node made (a paragraph from the user's files' digest)
    explores nothing."""
    leaves = [(i, node) for i, node in enumerate(nodes) if node.status != NodeStatus.DECOMPOSED]
    again = set()
    for claim in withdrawn:
        citing = [(i, node) for i, node in leaves if _cited_by_findings(node) & claim.lost]
        by_text = [(i, n) for i, n in citing if _plain(claim.text) in {_plain(f["text"]) for f in n.findings}]
        makers = by_text or citing
        if makers:
            heads = [(i, n) for i, n in makers if claim.section == cut_text(n.question, MAX_HEADING_CHARS)]
            again.add(max(heads or makers, key=lambda pair: (pair[1].depth, -pair[0]))[0])
    return again


def _cited_by_findings(node: ResearchNode) -> set[tuple[str, str]]:
    return {(link.get("version"), link.get("span")) for f in node.findings for link in f.get("source_links", [])}


def _plain(text: str) -> str:
    return " ".join(grounding.keeping_marks(text, set()).split())


def _copy_nodes(old_nodes: list[ResearchNode], run: ResearchRun, again: set[int]) -> list:
    """The old run's tree under the new run: every node with its findings and slice, except those
    explored again (pending, their slice kept). The ids of the pending ones."""
    new_of: dict = {}
    pending = []
    for i, node in enumerate(old_nodes):
        fields = {
            "run": run,
            "parent": new_of.get(node.parent_id),
            "path": node.path,
            "depth": node.depth,
            "question": node.question,
            "rationale": node.rationale,
        }
        if i in again:
            created = ResearchNode.objects.create(**fields, status=NodeStatus.PENDING)
            pending.append(created.pk)
        else:
            created = ResearchNode.objects.create(
                **fields,
                status=node.status,
                queries=node.queries,
                results=node.results,
                findings=node.findings,
                sufficiency=node.sufficiency,
                error=node.error,
                started_at=node.started_at,
                finished_at=node.finished_at,
            )
        new_of[node.pk] = created
        old_slice = getattr(node, "context_slice", None)
        if old_slice is not None:
            NodeContextSlice.objects.create(
                node=created,
                mode=old_slice.mode,
                selection_reason=old_slice.selection_reason,
                selected_items=old_slice.selected_items,
                bundle_revision=old_slice.bundle_revision,
            )
    return pending


def _bundle_now(bundle: dict | None, successors: dict) -> dict | None:
    """The old run's bundle with each changed file pinned to its current version (dropped when deleted)."""
    if bundle is None:
        return None
    bundle = copy.deepcopy(bundle)
    versions = bundle.get("source_versions") or {}
    for old, new in successors.values():
        if versions.get(old.filename) == str(old.version):
            if new is None:
                versions.pop(old.filename)
            else:
                versions[old.filename] = str(new.version)
    return bundle


# --- the updated report ------------------------------------------------------------------


def write_updated_report(run_id) -> None:
    """The update run's report: the re-checked draft, the re-explored nodes' findings, the change summary."""
    run = ResearchRun.objects.filter(pk=run_id, status=Status.REPORTING).first()
    if run is None or run.report is not None or run.update_summary is None:
        return
    summary = run.update_summary
    report = copy.deepcopy(summary["draft"])
    again = set(summary["explored_again"])
    nodes = ResearchNode.objects.filter(run=run, path__in=again).order_by("depth", "path")
    current = {str(v) for v in summary["current_versions"]}
    added = _new_paragraphs(report, [node for node in nodes if node.findings], current)
    claims = [c for c in summary["claims"] if c["status"] != "unchanged"]
    claims += [{"section": NEW_SECTION, **p["update"]} for p in added]
    counts = {**_counts(summary["claims"]), "new": len(added)}
    calls = LLMCall.objects.filter(run_id=run.pk).count()
    original = LLMCall.objects.filter(run_id=run.updates_run_id).count() if run.updates_run_id else None
    report["update"] = {
        "updates_run": summary["updates_run"],
        "changed_files": summary["changed_files"],
        "explored_again": summary["explored_again"],
        **counts,
        "model_calls": calls,
        "original_model_calls": original,
        "summary": _summary_line(counts, calls, original),
        "claims": claims,
    }
    report["generated_at"] = timezone.now().isoformat()
    complete_with_report(run, report, update=report["update"]["summary"])


def _new_paragraphs(report: dict, nodes: Iterable[ResearchNode], current: set[str]) -> list[dict]:
    """The re-explored nodes' findings that cite a changed file's current version and are not in the
    report already, as paragraphs of a new section; each citation numbered in the report's references
    and kept only if the span it opens supports the finding (the report's check)."""
    said = {_plain(p["text"]) for s in report["sections"] for p in s["paragraphs"]}
    refs = report["references"]
    number_of = {(r.get("version"), r.get("span"), r.get("url")): r["n"] for r in refs}
    next_n = max((r["n"] for r in refs), default=0) + 1
    paragraphs = []
    for node in nodes:
        by_n = {r["n"]: r for r in node.results}
        for finding in node.findings:
            cites_new = any(by_n.get(n, {}).get("version") in current for n in finding["citations"])
            plain = _plain(finding["text"])
            if not cites_new or plain in said or any(grounding.supports(plain, text) for text in said):
                continue  # the report says it already (a reworded sentence's claim, re-pinned above)
            said.add(plain)
            renumber, cited_texts = {}, []
            for n in finding["citations"]:
                if n not in by_n:
                    continue
                result = {**by_n[n], **(link_opening(by_n[n], finding.get("source_links", [])) or {})}
                opened = _opened_text(result)
                if not grounding.supports(finding["text"], opened):
                    continue
                key = (result.get("version"), result.get("span"), result.get("url"))
                if key not in number_of:
                    number_of[key], next_n = next_n, next_n + 1
                    listed = {k: result.get(k) for k in _REFERENCE_FIELDS}
                    refs.append({**listed, **citation_of(result), "n": number_of[key]})
                renumber[n] = number_of[key]
                cited_texts.append(opened)
            if not renumber:
                continue
            text = grounding.keeping_marks(_renumbered(finding["text"], renumber), set(renumber.values()))
            paragraphs.append(
                {
                    "text": text,
                    "citations": sorted(set(renumber.values())),
                    "sources": [],
                    "source_links": [],
                    "update": {
                        "status": "new",
                        "old_text": None,
                        "old_cited_text": None,
                        "new_text": text,
                        "new_cited_text": "\n".join(cited_texts),
                    },
                }
            )
    if paragraphs:
        report["sections"].append({"heading": NEW_SECTION, "paragraphs": paragraphs})
    return paragraphs


_REFERENCE_FIELDS = ("provider", "title", "location", "page", "section", "url", "sourceref", "file_id")


def _opened_text(result: dict) -> str:
    """What a result's citation opens: its pinned span's text; a web result, its own text."""
    if not result.get("version") or not result.get("sourceref"):
        return result.get("text") or result.get("title") or ""
    filename = provenance.parse_sourceref(result["sourceref"])[0]
    ref = f"{filename}::{result['span']}"
    return provenance.span_texts([ref], {filename: result["version"]}).get(ref, "")


def _counts(claims: list[dict]) -> dict:
    counts = {"changed": 0, "withdrawn": 0, "unchanged": 0}
    for entry in claims:
        if entry["status"] == "unchanged":
            counts["unchanged"] += entry.get("count", 1)
        elif entry["status"] in counts:
            counts[entry["status"]] += 1
    return counts


def _summary_line(counts: dict, calls: int | None, original: int | None) -> str:
    """ "2 claims changed, 1 withdrawn, 14 unchanged; 3 model calls instead of 19" """

    def claims(n: int) -> str:
        return f"{n} claim{'s' if n != 1 else ''}"

    line = f"{claims(counts['changed'])} changed, {counts['withdrawn']} withdrawn, {counts['unchanged']} unchanged"
    if counts.get("new"):
        line += f", {counts['new']} new from the changed files"
    if calls is not None:
        line += f"; {calls} model call{'s' if calls != 1 else ''}"
        if original is not None:
            line += f" instead of {original}"
    return line
