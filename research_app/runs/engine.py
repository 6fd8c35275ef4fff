"""A run from start to report. Each public function is one Celery step, guarded by a status claim.

A claim is one UPDATE … WHERE status = <expected>: of two deliveries of the
same task only one gets past it, so every step is safe to run twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from context_app import services as context_services
from context_app.models import ContextFile, ContextSet, DigestStatus
from digests.items import digest_items
from llm_platform import grounding
from llm_platform.model_task import TaskFailed
from workspaces.claims import claim
from workspaces.errors import ApplicationError
from workspaces.models import ResearchSession
from workspaces.services import team_cache_scope

from ..models import NodeContextSlice, ResearchNode, ResearchRun
from ..search.providers import SearchResult, deduplicate_results, providers_for_scope, search_all
from . import coverage, jobs, model_tasks
from .bundle import compact_items, context_bundle, processing_summary
from .events import RunStopped, announce, emit, ensure_status
from .evidence import RESULT_TEXT_CHARS, cited_findings, evidence, result_json
from .split import split_by_token_overlap

logger = logging.getLogger(__name__)

Status = ResearchRun.Status
NodeStatus = ResearchNode.Status
Mode = NodeContextSlice.Mode

MAX_QUERIES = 3


# --- start ----------------------------------------------------------------------


def run_limits(requested: dict) -> dict:
    """The run's limits: the defaults, overridden by what was asked, each within its maximum."""
    limits = dict(settings.GROUNDWORK_RUN_DEFAULTS)
    for name, maximum in settings.GROUNDWORK_RUN_LIMITS.items():
        if requested.get(name) is None:
            continue
        value = requested[name]
        minimum = 0 if name == "max_depth" else 1  # depth 0: the root alone, never decomposed
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise ApplicationError(f"{name} must be an integer from {minimum} to {maximum}")
        limits[name] = value
    return limits


def start_run(
    session: ResearchSession, user: AbstractBaseUser, *, question: str | None = None, limits: dict | None = None
) -> ResearchRun:
    question = (question if question is not None else session.question).strip()
    if not question:
        raise ApplicationError("a run needs a question: give one, or set the session's question")
    if len(question) > 2000:
        raise ApplicationError("the question is longer than 2000 characters")
    with transaction.atomic():
        run = ResearchRun.objects.create(
            session=session, created_by=user, question=question, **run_limits(limits or {})
        )
        emit(run.pk, "run_queued", question=question, limits=run_limits(limits or {}))
        announce(run.pk, "run.created")
        transaction.on_commit(lambda: jobs.enqueue(jobs.BIND_RUN, run.pk))
    return run


# --- bind -----------------------------------------------------------------------


def bind_run(run_id) -> None:
    """Bind phase: parse the session's files (SPEC §2.4 rules) before any node runs."""
    now = timezone.now()
    if not claim(ResearchRun.objects.filter(pk=run_id), from_=Status.QUEUED, to=Status.BINDING, started_at=now):
        return
    announce(run_id)
    run = ResearchRun.objects.get(pk=run_id)
    context_set = ContextSet.objects.get(session_id=run.session_id)
    summary = processing_summary(context_bundle(context_set), "parsing")
    try:
        with transaction.atomic():
            ResearchRun.objects.filter(pk=run_id, status=Status.BINDING).update(context_processing=summary)
            emit(
                run_id,
                "context_binding_parsing_started",
                while_status=Status.BINDING,
                revision=context_set.revision,
                **_counters(summary),
            )
    except RunStopped:
        return  # cancelled before its parsing began
    # Parsing runs in the context pipeline's own tasks (in parallel across workers);
    # its file_digest_finished and context_settled signals move the run on (receivers.py).
    context_services.request_parse(context_set)


def _counters(summary: dict) -> dict:
    return {k: summary[k] for k in ("files_total", "files_ready", "files_error")}


def file_parsed_during_bind(session_id, filename: str, digest_status: str) -> None:
    """One event per finished file of a binding run, its counters a running tally that agrees with itself.

    The tally is the previous event's (or the bind start's) plus this file, not a count of
    the files now: files finishing together would otherwise read each other's results
    (`files_done 1` next to `files_ready 2`). A file told before (parsed again during the
    bind) moves its count instead of adding one; a file that is not ready or failed (its
    digest was dropped, it is parsing again) has not finished.
    """
    if digest_status not in (DigestStatus.READY, DigestStatus.ERROR):
        return
    binding = list(
        ResearchRun.objects.filter(session_id=session_id, status=Status.BINDING).values_list("pk", flat=True)
    )
    if not binding:
        return
    total = ContextFile.objects.filter(context_set__session_id=session_id).count()
    for run_id in binding:
        with transaction.atomic():
            # Files finishing together must still count 1/n, 2/n: the run's row lock orders them.
            run = ResearchRun.objects.select_for_update().get(pk=run_id)
            told = run.events.filter(type="context_binding_parsing_file_completed").order_by("-seq")
            last = told.first()
            tally = dict(last.payload if last else run.context_processing)
            ready, failed = tally.get("files_ready", 0), tally.get("files_error", 0)
            before = told.filter(payload__filename=filename).values_list("payload__status", flat=True).first()
            if before == DigestStatus.READY:
                ready -= 1
            elif before == DigestStatus.ERROR:
                failed -= 1
            if digest_status == DigestStatus.READY:
                ready += 1
            else:
                failed += 1
            ready = min(ready, total)
            failed = min(failed, total - ready)
            if run.status != Status.BINDING:
                continue  # cancelled (or bound) since: nothing more to tell
            emit(
                run_id,
                "context_binding_parsing_file_completed",
                filename=filename,
                status=digest_status,
                files_done=ready + failed,
                files_total=total,
                files_ready=ready,
                files_error=failed,
            )


def context_settled_during_bind(session_id) -> None:
    for run_id in ResearchRun.objects.filter(session_id=session_id, status=Status.BINDING).values_list("pk", flat=True):
        jobs.enqueue(jobs.BEGIN_EXPLORATION, run_id)


def begin_exploration(run_id) -> None:
    """The bind phase is over: store the ContextBundle, plant the root with the full context.

    One transaction from the claim to the root: a worker dying in between leaves
    the run binding (resume starts this step again), never running without a root.
    """
    with transaction.atomic():
        if not claim(ResearchRun.objects.filter(pk=run_id), from_=Status.BINDING, to=Status.RUNNING):
            return
        announce(run_id)
        run = ResearchRun.objects.get(pk=run_id)
        bundle = context_bundle(ContextSet.objects.get(session_id=run.session_id))
        summary = processing_summary(bundle, "completed")
        run.context_bundle, run.context_processing = bundle, summary
        run.save(update_fields=["context_bundle", "context_processing"])
        emit(run_id, "context_binding_parsing_completed", revision=bundle["revision"], **_counters(summary))
        if summary["files_total"] and bundle["aggregate_digest"] is None:
            emit(
                run_id,
                "context_binding_no_usable_context",
                message="no usable context: every file failed to parse; the run goes on with search alone",
            )
        items, cut = compact_items(digest_items(bundle["aggregate_digest"]), run.question)
        reason = "the full aggregate digest"
        if cut:
            reason += f", compacted to the node budget ({cut} least relevant items left out)"
        root = ResearchNode.objects.create(run=run, path="1", depth=0, question=run.question)
        NodeContextSlice.objects.create(
            node=root,
            mode=Mode.ROOT_FULL,
            selection_reason=reason,
            selected_items=items,
            bundle_revision=bundle["revision"],
        )
        # Every file of the bundle listed from the start (none reached yet); it grows as nodes end.
        coverage.record_so_far(run_id)
        transaction.on_commit(lambda: jobs.enqueue(jobs.EXPLORE_NODE, root.pk))


# --- nodes ----------------------------------------------------------------------


def explore_node(node_id) -> None:
    now = timezone.now()
    if not claim(
        ResearchNode.objects.filter(pk=node_id), from_=NodeStatus.PENDING, to=NodeStatus.RUNNING, started_at=now
    ):
        return
    node = ResearchNode.objects.select_related("run", "run__session__team").get(pk=node_id)
    run = node.run
    try:
        ensure_status(run.pk, Status.RUNNING, f"node {node.path}")
        try:
            _explore(node, run)
        except TaskFailed as exc:
            node.error = str(exc)
            _finish_node(node, NodeStatus.FAILED)
        except RunStopped:
            raise
        except Exception:
            logger.exception("node %s of run %s crashed", node.path, run.pk)
            node.error = "internal error while exploring this node"
            _finish_node(node, NodeStatus.FAILED)
    except RunStopped:
        # The run was cancelled or failed while this node ran (its nodes were cancelled with it),
        # or a resume handed the node to another worker: this one stops and stores nothing more.
        return
    report_when_done(run.pk)


def _explore(node: ResearchNode, run: ResearchRun) -> None:
    context = _slice_of(node, run)
    emit(
        run.pk,
        "context_for_node_ready",
        while_status=Status.RUNNING,
        node_id=node.path,
        depth=node.depth,
        selected_items_count=len(context.selected_items),
        mode=context.mode,
        context_slice=slice_json(context),
    )
    subject = f"run:{run.pk}:node:{node.path}"
    queries = model_tasks.run_task(
        model_tasks.NODE_QUERIES, {"question": node.question, "max_queries": MAX_QUERIES}, run=run, subject=subject
    ).output["queries"][:MAX_QUERIES]
    node.queries = queries
    emit(run.pk, "node_queries", while_status=Status.RUNNING, node=node.path, queries=queries)

    results, errors = _search(run, queries)
    node.results = results
    emit(
        run.pk,
        "node_search_completed",
        while_status=Status.RUNNING,
        node=node.path,
        results=len(results),
        documents=len({r["document"] for r in results}),
        errors=errors,
    )

    asked = {"question": node.question}
    if node.parent_id:  # what the sibling nodes ask is theirs to answer
        siblings = ResearchNode.objects.filter(parent_id=node.parent_id).exclude(pk=node.pk).order_by("path")
        asked["other_parts"] = list(siblings.values_list("question", flat=True))
    findings = model_tasks.run_task(
        model_tasks.NODE_FINDINGS, asked, evidence(results), run=run, subject=subject
    ).output["findings"]
    node.findings = cited_findings(findings, results)
    emit(run.pk, "node_findings", while_status=Status.RUNNING, node=node.path, findings=len(node.findings))

    verdict = model_tasks.run_task(
        model_tasks.NODE_SUFFICIENCY,
        {
            "question": node.question,
            "findings": [{"text": f["text"], "citations": f["citations"]} for f in node.findings],
            "context_items": context.selected_items,
        },
        run=run,
        subject=subject,
    ).output
    # The reasoning may repeat a citation the findings no longer have: never show an invented ref.
    cited = {n for finding in node.findings for n in finding["citations"]}
    verdict["reasoning"] = grounding.keeping_marks(verdict["reasoning"], cited)
    node.sufficiency = verdict
    emit(run.pk, "node_sufficiency", while_status=Status.RUNNING, node=node.path, **verdict)

    if verdict["is_sufficient"]:
        _finish_node(node, NodeStatus.SUFFICIENT)
        return
    room = _room_for_children(node, run)
    if room == 0:
        _finish_node(node, NodeStatus.LIMITED, ("node_limited", {"reason": _limit_reason(node, run)}))
        return
    children = model_tasks.run_task(
        model_tasks.NODE_DECOMPOSE,
        {
            "question": node.question,
            "gaps": verdict["gaps"],
            "context_items": context.selected_items,
            "max_children": room,
        },
        run=run,
        subject=subject,
    ).output["children"]
    children = _distinct_children(children, node.question)[:room]
    if not children:
        reason = "the question could not be split further"
        _finish_node(node, NodeStatus.LIMITED, ("node_limited", {"reason": reason}))
        return
    slices, mode = _split_context(node, run, context, [c["question"] for c in children], subject)
    with transaction.atomic():
        created = []
        for number, (child, child_slice) in enumerate(zip(children, slices, strict=True), start=1):
            created.append(
                ResearchNode.objects.create(
                    run=run,
                    parent=node,
                    path=f"{node.path}.{number}",
                    depth=node.depth + 1,
                    question=child["question"],
                    rationale=child["rationale"],
                )
            )
            NodeContextSlice.objects.create(
                node=created[-1],
                mode=mode,
                selection_reason=child_slice["selection_reason"],
                selected_items=child_slice["selected_items"],
                bundle_revision=context.bundle_revision,
            )
        told = [
            {"node": c.path, "question": c.question, "items": len(s["selected_items"])}
            for c, s in zip(created, slices, strict=True)
        ]
        _finish_node(node, NodeStatus.DECOMPOSED, ("node_decomposed", {"mode": mode, "children": told}))
        for child_node in created:
            transaction.on_commit(lambda pk=child_node.pk: jobs.enqueue(jobs.EXPLORE_NODE, pk))


def _slice_of(node: ResearchNode, run: ResearchRun) -> NodeContextSlice:
    """The slice the parent assigned; a lost one is inherited from the parent (or the root's)."""
    existing = NodeContextSlice.objects.filter(node=node).first()
    if existing is not None:
        return existing
    parent_slice = NodeContextSlice.objects.filter(node=node.parent).first() if node.parent_id else None
    items = parent_slice.selected_items if parent_slice else []
    return NodeContextSlice.objects.create(
        node=node,
        mode=Mode.FALLBACK_INHERIT_MISSING_PARENT,
        selection_reason="no slice was assigned; the parent's context is inherited",
        selected_items=items,
        bundle_revision=(run.context_bundle or {}).get("revision"),
    )


def slice_json(context: NodeContextSlice) -> dict:
    return {
        "mode": context.mode,
        "selection_reason": context.selection_reason,
        "selected_items": context.selected_items,
        "bundle_revision": context.bundle_revision,
    }


def _search(run: ResearchRun, queries: Sequence[str]) -> tuple[list[dict], list[str]]:
    """Every query against every provider; one list, deduplicated by (document, page), numbered."""
    providers = providers_for_scope(team_cache_scope(run.session.team), own_session=str(run.session_id))
    found: list[SearchResult] = []
    errors: list[str] = []
    for query in queries:
        response = search_all(providers, query, settings.GROUNDWORK_NODE_SEARCH_RESULTS)
        found.extend(response.results)
        errors.extend(e for e in response.errors if e not in errors)
    best = distinct_texts(deduplicate_results(found), run.session_id)[: settings.GROUNDWORK_NODE_SEARCH_RESULTS]
    return [result_json(n, r, shown_in=run.session_id) for n, r in enumerate(best, start=1)], errors


def distinct_texts(results: Sequence[SearchResult], session_id) -> list[SearchResult]:
    """One result per evidence text: the same section in two files of the team (a boilerplate
    "Confidentiality" page) is one result, the best-scored, on a tie the run's own session's.
    Results stay in their order (best first)."""
    kept: dict[str, SearchResult] = {}
    for result in results:
        key = _text_key(result.text[:RESULT_TEXT_CHARS] or result.filename)
        other = kept.get(key)
        if other is None or (
            result.relevance_score == other.relevance_score
            and str(result.origin_session_id) == str(session_id) != str(other.origin_session_id)
        ):
            kept[key] = result
    chosen = {id(r) for r in kept.values()}
    return [r for r in results if id(r) in chosen]


def _text_key(text: str) -> str:
    return " ".join(text.split())


def _room_for_children(node: ResearchNode, run: ResearchRun) -> int:
    run.refresh_from_db(fields=["tokens_used"])
    if node.depth >= run.max_depth or run.tokens_used >= run.token_budget:
        return 0
    left = run.max_nodes - ResearchNode.objects.filter(run=run).count()
    return max(0, min(run.max_children, left))


def _limit_reason(node: ResearchNode, run: ResearchRun) -> str:
    if node.depth >= run.max_depth:
        return f"max_depth {run.max_depth} reached"
    if run.tokens_used >= run.token_budget:
        return f"token budget of {run.token_budget} used up"
    return f"max_nodes {run.max_nodes} reached"


def _distinct_children(children: Sequence[dict], parent_question: str) -> list[dict]:
    seen = {parent_question.strip().casefold()}
    distinct = []
    for child in children:
        key = child["question"].strip().casefold()
        if key not in seen:
            seen.add(key)
            distinct.append(child)
    return distinct


def _split_context(
    node: ResearchNode, run: ResearchRun, context: NodeContextSlice, questions: list[str], subject: str
) -> tuple[list[dict], str]:
    """One split for the decomposition (seed 001 §4.4); a malformed one falls back to token overlap."""
    items = context.selected_items
    if not items:
        empty = [{"selection_reason": "the parent had no context items", "selected_items": []} for _ in questions]
        return empty, Mode.SPLIT_FROM_PARENT
    try:
        output = model_tasks.run_task(
            model_tasks.CONTEXT_SPLIT, {"children": questions, "parent_items": items}, run=run, subject=subject
        ).output
        problem = split_problem(output, questions, items)
    except TaskFailed as exc:
        problem = str(exc)
    if problem is None:
        by_question = {c["child_question"]: c for c in output["child_contexts"]}
        return [by_question[q] for q in questions], Mode.SPLIT_FROM_PARENT
    emit(run.pk, "context_split_fallback", while_status=Status.RUNNING, node=node.path, reason=problem)
    return split_by_token_overlap(questions, items), Mode.SPLIT_FALLBACK


def split_problem(output: dict, questions: Sequence[str], items: Sequence[dict]) -> str | None:
    """Why a model's split cannot be used, or None: every child exactly once, only the parent's items."""
    answered = [c["child_question"] for c in output["child_contexts"]]
    if sorted(answered) != sorted(questions):
        return "the split does not name each child question exactly once"
    known = {_item_key(item) for item in items}
    for child in output["child_contexts"]:
        for item in child["selected_items"]:
            if _item_key(item) not in known:
                return f"the split invents an item not in the parent's context: {item['text'][:80]!r}"
    return None


def _item_key(item: dict) -> tuple:
    return (item["kind"], item["text"], tuple(item["sources"]))


def _finish_node(node: ResearchNode, status: str, then: tuple[str, dict] | None = None) -> None:
    """Store the node's work and its status, and tell it (node_completed or node_failed, then `then`),
    in one transaction, only while the node is still running in a running run (else RunStopped)."""
    node.status, node.finished_at = status, timezone.now()
    with transaction.atomic():
        stored = claim(
            ResearchNode.objects.filter(pk=node.pk),
            from_=NodeStatus.RUNNING,
            to=status,
            finished_at=node.finished_at,
            queries=node.queries,
            results=node.results,
            findings=node.findings,
            sufficiency=node.sufficiency,
            error=node.error,
        )
        if not stored:
            raise RunStopped(node.run_id, f"node {node.path}")
        usage = model_tasks.run_progress(node.run_id)
        if status == NodeStatus.FAILED:
            emit(node.run_id, "node_failed", while_status=Status.RUNNING, node=node.path, error=node.error, usage=usage)
        else:
            emit(node.run_id, "node_completed", while_status=Status.RUNNING, node=node.path, status=status, usage=usage)
        if then is not None:
            emit(node.run_id, then[0], while_status=Status.RUNNING, node=node.path, **then[1])
        # What the run has looked at so far, with this node's slice, results and findings in it.
        coverage.record_so_far(node.run_id)


def report_when_done(run_id) -> None:
    """The last node to finish moves the run to its report (one UPDATE decides who is last)."""
    open_nodes = ResearchNode.objects.filter(run_id=run_id, status__in=[NodeStatus.PENDING, NodeStatus.RUNNING])
    if claim(
        ResearchRun.objects.filter(pk=run_id).exclude(pk__in=open_nodes.values("run_id")),
        from_=Status.RUNNING,
        to=Status.REPORTING,
    ):
        announce(run_id)
        jobs.enqueue(jobs.WRITE_REPORT, run_id)
