"""Context IR (SPEC §6, seed 004): provider-agnostic sources, anchors, envelopes, budgets and adapters.

Typical use:

    sources = [sources_from_spans(f.filename, f.format, f.text.spans) for f in files]
    envelope = build_envelope(task, sources, capabilities=capabilities_for("anthropic"))
    fitted = fit_to_budget(envelope, 20_000, provider_token_counter(provider))
    body = to_anthropic(fitted, system=system, model=model, max_tokens=4096)
"""

from llm_platform.ir.adapters import to_anthropic, to_gemini, to_openai, to_provider
from llm_platform.ir.anchors import Anchor, anchor_to_sourceref, format_anchor, parse_anchor, sourceref_to_anchor
from llm_platform.ir.budget import envelope_cost, extractive_summary, fit_to_budget, stage_costs
from llm_platform.ir.envelope import build_envelope, build_index
from llm_platform.ir.modality import (
    ProviderCapabilities,
    capabilities_for,
    pdf_fallback,
    route_image,
    route_pdf,
    route_webpage,
)
from llm_platform.ir.render import render_text
from llm_platform.ir.tokens import TokenCounter, estimate_tokens, provider_token_counter
from llm_platform.ir.types import (
    AttachmentManifest,
    BudgetCut,
    BudgetState,
    Chunk,
    ContextEnvelope,
    ContextIndex,
    ContextIndexEntry,
    Source,
    chatlog_source,
    image_source,
    note_source,
    source_from_context_file,
    source_id,
    sources_from_spans,
)

__all__ = [
    "Anchor",
    "AttachmentManifest",
    "BudgetCut",
    "BudgetState",
    "Chunk",
    "ContextEnvelope",
    "ContextIndex",
    "ContextIndexEntry",
    "ProviderCapabilities",
    "Source",
    "TokenCounter",
    "anchor_to_sourceref",
    "build_envelope",
    "build_index",
    "capabilities_for",
    "chatlog_source",
    "envelope_cost",
    "estimate_tokens",
    "extractive_summary",
    "fit_to_budget",
    "format_anchor",
    "image_source",
    "note_source",
    "parse_anchor",
    "pdf_fallback",
    "provider_token_counter",
    "render_text",
    "route_image",
    "route_pdf",
    "route_webpage",
    "source_from_context_file",
    "source_id",
    "sourceref_to_anchor",
    "sources_from_spans",
    "stage_costs",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "to_provider",
]
