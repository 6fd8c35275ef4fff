"""Task A and Task B: envelope → gateway → validation → one repair call → sanitised digest.

Every call goes through llm.gateway, which records an LLMCall row. A first
answer that fails validation is marked "invalid" and answered with exactly one
repair call that lists the problems. If the repair is still invalid, the
sanitised digest (invalid sources removed, sourceless facts dropped) is used and
what was removed travels along in `dropped`; if nothing usable is left, the
digest fails with a message a user can read.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from ..ir.tokens import estimate_tokens
from ..llm import gateway
from ..llm.base import LLMRequest, Provider
from .envelopes import aggregate_envelope, per_file_envelope
from .prompts import TaskName, prompt_version, system_prompt
from .validation import ValidationResult, check_aggregate_digest, check_per_file_digest, sources_of

REPAIR_ECHO_CHARS = 20_000  # how much of the invalid answer the repair prompt repeats
REPAIR_MAX_ERRORS = 50


@dataclass
class GeneratedDigest:
    content: dict
    dropped: list[dict] = field(default_factory=list)
    provider: str = ""
    model: str = ""
    prompt_version: str = ""
    repaired: bool = False  # a repair call was made (whether or not it fixed everything)


class DigestFailed(Exception):
    """No usable digest: the message says why, in words a user can act on."""


def generate_file_digest(
    *,
    filename: str,
    format: str,
    spans: list[dict],
    subject: str = "",
    context_set_id=None,
    provider: Provider | None = None,
) -> GeneratedDigest:
    """Task A for one file; a file too large for one model input is digested in windows and merged."""
    parts = []
    for window in span_windows(filename, format, spans, settings.GROUNDWORK_DIGEST_INPUT_TOKENS):
        span_ids = {span["span_id"] for span in window}
        parts.append(
            _generate(
                task="per_file_digest",
                prompt_task="per_file",
                envelope=per_file_envelope(filename, format, window),
                check=lambda text, ids=span_ids: check_per_file_digest(
                    text, filename=filename, format=format, span_ids=ids
                ),
                subject=subject,
                context_set_id=context_set_id,
                provider=provider,
            )
        )
    if len(parts) == 1:
        return parts[0]
    return merge_window_digests(parts, filename=filename, format=format, span_ids={s["span_id"] for s in spans})


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
    if checked.digest is None:
        raise DigestFailed("the digests of this file's parts could not be merged: " + "; ".join(checked.errors[:3]))
    return GeneratedDigest(
        content=checked.digest,
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
    context_set_id=None,
    provider: Provider | None = None,
) -> GeneratedDigest:
    allowed: set[str] = set().union(*(sources_of(digest) for digest in digests))
    return _generate(
        task="aggregate_digest",
        prompt_task="aggregate",
        envelope=aggregate_envelope(manifest, digests),
        check=lambda text: check_aggregate_digest(text, allowed_sources=allowed, manifest=manifest),
        subject=subject,
        context_set_id=context_set_id,
        provider=provider,
    )


def _generate(
    *,
    task: str,
    prompt_task: TaskName,
    envelope: str,
    check: Callable[[str], ValidationResult],
    subject: str,
    context_set_id,
    provider: Provider | None,
) -> GeneratedDigest:
    system = system_prompt(prompt_task)
    version = prompt_version()

    def attempt(prompt: str, number: int) -> tuple[gateway.GatewayResult, ValidationResult]:
        try:
            result = gateway.complete(
                LLMRequest(task=task, system=system, prompt=prompt, max_tokens=settings.GROUNDWORK_LLM_MAX_TOKENS),
                prompt_version=version,
                subject=subject,
                context_set_id=context_set_id,
                attempt=number,
                provider=provider,
            )
        except gateway.GatewayError as exc:
            raise DigestFailed(f"model call failed: {exc}") from exc
        checked = check(result.response.text)
        if checked.errors:
            gateway.mark_invalid(result.call, checked.errors)
        return result, checked

    result, checked = attempt(envelope, 1)
    if not checked.errors:
        return _generated(result, checked, version, repaired=False)

    first, first_checked = result, checked
    result, checked = attempt(_repair_prompt(envelope, checked.errors, result.response.text), 2)
    if checked.digest is None and first_checked.digest is not None:
        # The repair made things worse: the first answer, sanitised, is still usable.
        result, checked = first, first_checked
    if checked.digest is None:
        reason = "; ".join(checked.errors[:3])
        raise DigestFailed(f"model output was not a valid digest after a repair attempt: {reason}")
    return _generated(result, checked, version, repaired=True)


def _generated(
    result: gateway.GatewayResult, checked: ValidationResult, version: str, *, repaired: bool
) -> GeneratedDigest:
    assert checked.digest is not None
    return GeneratedDigest(
        content=checked.digest,
        dropped=checked.dropped,
        provider=result.call.provider,
        model=result.call.model,
        prompt_version=version,
        repaired=repaired,
    )


def _repair_prompt(envelope: str, errors: list[str], previous: str) -> str:
    listed = "\n".join(f"- {error}" for error in errors[:REPAIR_MAX_ERRORS])
    if len(errors) > REPAIR_MAX_ERRORS:
        listed += f"\n- … and {len(errors) - REPAIR_MAX_ERRORS} more problems of the same kinds"
    echoed = previous[:REPAIR_ECHO_CHARS]
    if len(previous) > REPAIR_ECHO_CHARS:
        echoed += "\n[… truncated]"
    return (
        f"{envelope}\n\nYOUR PREVIOUS OUTPUT WAS INVALID:\n{listed}\n"
        f"Previous output:\n{echoed}\n"
        "Return the corrected JSON only."
    )
