"""Task A and Task B: envelope → gateway → validation → one repair call → sanitised digest.

Every call goes through llm.gateway, which records an LLMCall row. A first
answer that fails validation is marked "invalid" and answered with exactly one
repair call that lists the problems. If the repair is still invalid, the
sanitised digest (invalid sources removed, sourceless facts dropped) is used and
what was removed travels along in `dropped`; if nothing usable is left, the
digest fails with a message a user can read.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

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
    span_ids = {span["span_id"] for span in spans}
    return _generate(
        task="per_file_digest",
        prompt_task="per_file",
        envelope=per_file_envelope(filename, format, spans),
        check=lambda text: check_per_file_digest(text, filename=filename, format=format, span_ids=span_ids),
        subject=subject,
        context_set_id=context_set_id,
        provider=provider,
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
