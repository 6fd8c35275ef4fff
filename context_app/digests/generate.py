"""Task A and Task B: envelope → gateway → validation → one repair → sanitised digest."""

from dataclasses import dataclass, field

from ..llm import gateway
from ..llm.base import LLMRequest
from .envelopes import aggregate_envelope, per_file_envelope
from .prompts import PROMPT_VERSION, system_prompt
from .validation import ValidationResult, check_aggregate_digest, check_per_file_digest, sources_of

REPAIR_ECHO_CHARS = 20_000


@dataclass
class GeneratedDigest:
    content: dict
    provider: str
    model: str
    prompt_version: str = PROMPT_VERSION
    dropped: list[dict] = field(default_factory=list)
    repaired: bool = False


class DigestFailed(Exception):
    """No usable digest: the message says why, in words a user can act on."""


def generate_file_digest(
    *, filename: str, format: str, spans: list[dict], subject: str = "", context_set_id=None
) -> GeneratedDigest:
    span_ids = {span["span_id"] for span in spans}
    return _generate(
        task="per_file_digest",
        system=system_prompt("per_file"),
        envelope=per_file_envelope(filename, format, spans),
        check=lambda text: check_per_file_digest(text, filename=filename, format=format, span_ids=span_ids),
        subject=subject,
        context_set_id=context_set_id,
    )


def generate_aggregate_digest(
    *, manifest: list[dict], digests: list[dict], subject: str = "", context_set_id=None
) -> GeneratedDigest:
    allowed = set().union(*(sources_of(d) for d in digests)) if digests else set()
    return _generate(
        task="aggregate_digest",
        system=system_prompt("aggregate"),
        envelope=aggregate_envelope(manifest, digests),
        check=lambda text: check_aggregate_digest(text, allowed_sources=allowed, manifest=manifest),
        subject=subject,
        context_set_id=context_set_id,
    )


def _generate(*, task, system, envelope, check, subject, context_set_id) -> GeneratedDigest:
    def call(prompt: str, attempt: int) -> tuple[gateway.GatewayResult, ValidationResult]:
        try:
            result = gateway.complete(
                LLMRequest(task=task, system=system, prompt=prompt),
                prompt_version=PROMPT_VERSION,
                subject=subject,
                context_set_id=context_set_id,
                attempt=attempt,
            )
        except gateway.GatewayError as exc:
            raise DigestFailed(f"model call failed: {exc}") from exc
        checked = check(result.response.text)
        if checked.errors:
            gateway.mark_invalid(result.call, checked.errors)
        return result, checked

    result, checked = call(envelope, attempt=1)
    repaired = False
    if checked.errors:
        repaired = True
        result, checked = call(_repair_prompt(envelope, checked.errors, result.response.text), attempt=2)
    if checked.digest is None:
        raise DigestFailed(
            "model output was not a valid digest after a repair attempt: " + "; ".join(checked.errors[:3])
        )
    return GeneratedDigest(
        content=checked.digest,
        provider=result.call.provider,
        model=result.call.model,
        dropped=checked.dropped,
        repaired=repaired,
    )


def _repair_prompt(envelope: str, errors: list[str], previous: str) -> str:
    listed = "\n".join(f"- {error}" for error in errors[:50])
    return (
        f"{envelope}\n\nYOUR PREVIOUS OUTPUT WAS INVALID:\n{listed}\n"
        f"Previous output:\n{previous[:REPAIR_ECHO_CHARS]}\n"
        "Return the corrected JSON object only."
    )
