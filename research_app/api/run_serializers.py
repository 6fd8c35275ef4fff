"""The JSON of research runs (SPEC §4): snapshot, node tree, events, report."""

from django.urls import reverse

from llm_platform.ledger import run_usage
from workspaces.api.bodies import AsSent, Body, Text

from ..models import NodeContextSlice, ResearchNode, ResearchRun
from ..runs.events import event_json, serialize_run_summary
from ..runs.report import report_json


class NewRunBody(Body):
    """POST /api/sessions/{sid}/runs. The limits' ranges and defaults, and the question's rules, are the engine's."""

    refuse_unknown = True
    question = Text(required=False, allow_null=True, error_messages={"invalid": "question must be a string"})
    max_depth = AsSent(required=False, allow_null=True)
    max_children = AsSent(required=False, allow_null=True)
    max_nodes = AsSent(required=False, allow_null=True)
    token_budget = AsSent(required=False, allow_null=True)


def serialize_run(run: ResearchRun) -> dict:
    nodes = list(ResearchNode.objects.filter(run=run).select_related("context_slice").order_by("depth", "path"))
    return {
        **serialize_run_summary(run),
        "limits": {
            "max_depth": run.max_depth,
            "max_children": run.max_children,
            "max_nodes": run.max_nodes,
            "token_budget": run.token_budget,
        },
        "tokens_used": run.tokens_used,
        "usage": run_usage(run.pk),
        "model_calls": run.model_calls,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "error": run.error,
        "context_processing": run.context_processing,
        "context_revision": (run.context_bundle or {}).get("revision"),
        "nodes": [serialize_node(node) for node in nodes],
        "report": report_json(run.report),
        "coverage": run.coverage,
        "last_seq": run.last_seq,
        "events_url": reverse("run-events", kwargs={"rid": run.id}),
        "report_url": reverse("run-report", kwargs={"rid": run.id}),
    }


def serialize_node(node: ResearchNode) -> dict:
    context = getattr(node, "context_slice", None)
    return {
        "node_id": node.path,
        "parent_id": node.path.rpartition(".")[0] or None,
        "depth": node.depth,
        "status": node.status,
        "question": node.question,
        "rationale": node.rationale,
        "queries": node.queries,
        "results": [{k: v for k, v in r.items() if k != "text"} for r in node.results],
        "findings": node.findings,
        "sufficiency": node.sufficiency,
        "error": node.error,
        "context_slice": compact_slice(context) if context else None,
    }


def compact_slice(context: NodeContextSlice) -> dict:
    """What a node received, in short: the full items are in its context_for_node_ready event."""
    return {
        "mode": context.mode,
        "selection_reason": context.selection_reason,
        "selected_items_count": len(context.selected_items),
        "sources": sorted({ref for item in context.selected_items for ref in item["sources"]}),
        "bundle_revision": context.bundle_revision,
    }


def serialize_events(run: ResearchRun, after: int, limit: int) -> dict:
    events = list(run.events.filter(seq__gt=after).order_by("seq")[:limit])
    return {
        "run_id": str(run.id),
        "status": run.status,
        "events": [event_json(e) for e in events],
        "last_seq": events[-1].seq if events else after,
    }
