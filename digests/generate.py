"""Task A and Task B: the seed-000 envelope through the model-task runner, checked by digests.validation.

The runner (llm.model_task) makes the call, the one repair call and the
fallback to a sanitised first answer; what sanitising removed travels along in
`dropped`. A file too large for one model input is digested in windows of
consecutive spans and merged here.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from llm_platform.base import LLMRequest, Provider
from llm_platform.gateway import GatewayResult
from llm_platform.ir.tokens import estimate_tokens
from llm_platform.model_task import ModelTask, TaskFailed, TaskResult, TextPrompt, run_model_task, task_request
from llm_platform.models import LLMCall

from .envelopes import aggregate_envelope, per_file_envelope
from .validation import check_aggregate_digest, check_per_file_digest, sources_of


def prompt_version() -> str:
    """Read on every call, so an override in a test or a deployment is seen at once."""
    return settings.CONTEXT_PREPROCESS_PROMPT_VERSION


PER_FILE_DIGEST = ModelTask(
    "PER_FILE_DIGEST",
    ("context_preprocess_common", "context_preprocess_per_file"),
    "per_file_digest",
    prompt_version,
    offline_handler="digests.offline.per_file_digest",
    label="File digests",
)
AGGREGATE_DIGEST = ModelTask(
    "AGGREGATE_DIGEST",
    ("context_preprocess_common", "context_preprocess_aggregate"),
    "aggregate_digest",
    prompt_version,
    offline_handler="digests.offline_aggregate.aggregate_digest",
    label="Aggregate digest of the files",
)


@dataclass
class GeneratedDigest:
    content: dict
    dropped: list[dict] = field(default_factory=list)
    provider: str = ""
    model: str = ""
    prompt_version: str = ""
    repaired: bool = False  # a repair call was made (whether or not it fixed everything)
    # Calls and tokens of every model call made for it (repairs and windows too): what a cache hit saves.
    usage: dict = field(default_factory=dict)


class DigestFailed(TaskFailed):
    """The digests of a file's windows could not be merged."""


def generate_file_digest(
    *,
    filename: str,
    format: str,
    spans: list[dict],
    subject: str = "",
    session_id=None,
    provider: Provider | None = None,
) -> GeneratedDigest:
    """Task A for one file; a file too large for one model input is digested in windows and merged."""
    calls: list[LLMCall] = []
    parts = [
        _window_digest(
            filename,
            format,
            window,
            subject=subject,
            session_id=session_id,
            provider=provider,
            on_call=calls.append,
        )
        for window in span_windows(filename, format, spans, settings.GROUNDWORK_DIGEST_INPUT_TOKENS)
    ]
    if len(parts) == 1:
        digest = parts[0]
    else:
        digest = merge_window_digests(parts, filename=filename, format=format, span_ids={s["span_id"] for s in spans})
    digest.usage = usage_of(calls)
    return digest


def usage_of(calls: list[LLMCall]) -> dict:
    """The calls' count and tokens by kind, as StoredDigest.usage keeps them."""
    return {
        "calls": len(calls),
        **{kind: sum(getattr(call, kind) for call in calls) for kind in LLMCall.TOKEN_KINDS},
    }


def file_digest_request(filename: str, format: str, spans: list[dict], provider: Provider) -> LLMRequest | None:
    """Task A's one request for a file that fits one model input (what a batch sends); None for a larger file."""
    if len(span_windows(filename, format, spans, settings.GROUNDWORK_DIGEST_INPUT_TOKENS)) != 1:
        return None
    return task_request(PER_FILE_DIGEST, TextPrompt(per_file_envelope(filename, format, spans)), provider, None)


def file_digest_from_answer(
    answer: GatewayResult, *, filename: str, format: str, spans: list[dict], subject: str, session_id, provider
) -> GeneratedDigest:
    """Task A for a file of one window whose first answer came from a batch: checked as any answer is,
    with the same one repair call (made at once, not batched) when it is invalid."""
    calls: list[LLMCall] = []
    digest = _window_digest(
        filename,
        format,
        spans,
        subject=subject,
        session_id=session_id,
        provider=provider,
        on_call=calls.append,
        answer=answer,
    )
    digest.usage = usage_of(calls)
    return digest


def _window_digest(
    filename: str,
    format: str,
    window: list[dict],
    *,
    subject: str,
    session_id,
    provider: Provider | None,
    on_call: Callable[[LLMCall], None],
    answer: GatewayResult | None = None,
) -> GeneratedDigest:
    span_ids = {span["span_id"] for span in window}
    return _generated(
        run_model_task(
            PER_FILE_DIGEST,
            TextPrompt(per_file_envelope(filename, format, window)),
            check=lambda text: check_per_file_digest(text, filename=filename, format=format, span_ids=span_ids),
            subject=subject,
            session_id=session_id,
            provider=provider,
            on_call=on_call,
            first_answer=answer,
        )
    )


def span_windows(filename: str, format: str, spans: list[dict], max_tokens: int) -> list[list[dict]]:
    """Consecutive runs of spans whose Task A envelope fits `max_tokens` (estimated); at least one span each."""
    header = estimate_tokens(per_file_envelope(filename, format, []))
    windows: list[list[dict]] = [[]]
    used = header
    for span in spans:
        cost = estimate_tokens(f"[{span['span_id']}] {span['text']}") + 1
        if windows[-1] and used + cost > max_tokens:
            windows.append([])
            used = header
        windows[-1].append(span)
        used += cost
    return windows


def merge_window_digests(
    parts: list[GeneratedDigest], *, filename: str, format: str, span_ids: set[str]
) -> GeneratedDigest:
    """One per-file digest from the digests of its windows, in document order, validated again.

    Facts are renumbered F1..Fn; a claim or uncertainty stated in two windows is
    kept once with the union of its sources. The summary joins the windows'
    summaries, which each cover their own part of the file.
    """
    facts: dict[str, dict] = {}
    uncertainties: dict[str, dict] = {}
    for part in parts:
        for fact in part.content.get("facts", []):
            kept = facts.setdefault(fact["claim"].strip().lower(), {**fact, "sources": []})
            kept["sources"] += [s for s in fact["sources"] if s not in kept["sources"]]
        for item in part.content.get("uncertainties", []):
            kept = uncertainties.setdefault(item["text"].strip().lower(), {**item, "sources": []})
            kept["sources"] += [s for s in item["sources"] if s not in kept["sources"]]
    merged = {
        **parts[0].content,
        "summary": " ".join(p.content.get("summary", "").strip() for p in parts if p.content.get("summary")),
        "facts": [{**fact, "id": f"F{n}"} for n, fact in enumerate(facts.values(), start=1)],
        "uncertainties": list(uncertainties.values()),
        "windows": len(parts),
    }
    checked = check_per_file_digest(json.dumps(merged), filename=filename, format=format, span_ids=span_ids)
    if checked.output is None:
        reasons = "; ".join(checked.errors[:3])
        raise DigestFailed(PER_FILE_DIGEST, f"the digests of this file's parts could not be merged: {reasons}")
    return GeneratedDigest(
        content=checked.output,
        dropped=[d for p in parts for d in p.dropped] + checked.dropped,
        provider=parts[0].provider,
        model=parts[0].model,
        prompt_version=parts[0].prompt_version,
        repaired=any(p.repaired for p in parts),
    )


def generate_aggregate_digest(
    *,
    manifest: list[dict],
    digests: list[dict],
    subject: str = "",
    session_id=None,
    provider: Provider | None = None,
) -> GeneratedDigest:
    allowed: set[str] = set().union(*(sources_of(digest) for digest in digests))
    calls: list[LLMCall] = []
    digest = _generated(
        run_model_task(
            AGGREGATE_DIGEST,
            TextPrompt(aggregate_envelope(manifest, digests)),
            check=lambda text: check_aggregate_digest(text, allowed_sources=allowed, manifest=manifest),
            subject=subject,
            session_id=session_id,
            provider=provider,
            on_call=calls.append,
        )
    )
    digest.usage = usage_of(calls)
    return digest


def _generated(result: TaskResult) -> GeneratedDigest:
    return GeneratedDigest(
        content=result.output,
        dropped=result.dropped,
        provider=result.call.provider,
        model=result.call.model,
        prompt_version=result.call.prompt_version,
        repaired=result.repaired,
    )
