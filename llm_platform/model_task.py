"""The one model-task runner: prompt + schema → gateway → validation → one repair call → output or failure.

Digests, research nodes, reports and chat turns are all model tasks. A task
names its system prompt files, its JSON Schema and its prompt version; a call
gives it a prompt (seed-000 text, or an IR envelope of evidence + INPUT_JSON)
and, where the caller knows more than the schema (SourceRefs, citation
numbers), a `check` that validates and sanitises. The first answer that fails
its check is marked invalid and answered with exactly one repair call listing
the problems. A repaired answer that is still unusable falls back to the first
answer when that one was usable after sanitising; otherwise the task fails with
a message a user can read.

A task names its offline handler by dotted path (`offline_handler`): defining
the task registers it with the offline provider (llm_platform.offline), which
imports it the first time the task is answered offline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from django.conf import settings

from llm_platform import gateway, offline
from llm_platform.base import LLMRequest, Provider
from llm_platform.ir import build_envelope, capabilities_for, fit_to_budget
from llm_platform.ir.types import Source
from llm_platform.ledger import TASK_LABELS
from llm_platform.models import LLMCall
from llm_platform.output import Checked, json_path, parse_model_json
from llm_platform.prompts import load_schema, schema_validator, system_prompt
from llm_platform.task_envelope import task_text

REPAIR_ECHO_CHARS = 20_000  # how much of the invalid answer the repair note repeats
REPAIR_MAX_ERRORS = 50


@dataclass(frozen=True)
class ModelTask:
    name: str  # the TASK line, e.g. PER_FILE_DIGEST
    prompt_files: tuple[str, ...]  # prompts/<file>.system.txt, joined in order
    schema: str  # prompts/schemas/<schema>.schema.json
    prompt_version: Callable[[], str]  # recorded on every call; digests read theirs from settings
    instructions: str = ""  # an envelope's task section, above INPUT_JSON
    # The function answering it offline (prompt text → JSON value), e.g. "digests.offline.per_file_digest".
    offline_handler: str = ""
    label: str = ""  # what its calls do, in words (the usage panel's line)

    def __post_init__(self) -> None:
        if self.offline_handler:
            offline.register(self.name, self.offline_handler)
        if self.label:
            TASK_LABELS[self.recorded_as] = self.label

    @property
    def recorded_as(self) -> str:
        """LLMCall.task: per_file_digest."""
        return self.name.lower()

    def system(self) -> str:
        return system_prompt(*self.prompt_files)


@dataclass(frozen=True)
class TaskResult:
    output: dict
    dropped: list[dict]
    call: LLMCall  # the call whose answer was used
    repaired: bool  # a repair call was made (whether or not it fixed everything)


class TaskFailed(Exception):
    """No usable answer (the model failed, or stayed invalid after a repair); `reason` is safe to show."""

    def __init__(self, task: ModelTask, reason: str):
        super().__init__(f"{task.recorded_as}: {reason}")
        self.reason = reason


class TaskPrompt(Protocol):
    def request(self, task: ModelTask, provider: Provider, repair_note: str | None) -> LLMRequest: ...


@dataclass(frozen=True)
class TextPrompt:
    """A prompt that is text only (the seed-000 digest envelopes); a repair note follows it."""

    text: str

    def request(self, task: ModelTask, provider: Provider, repair_note: str | None) -> LLMRequest:
        prompt = f"{self.text}\n\n{repair_note}" if repair_note else self.text
        return LLMRequest(task=task.recorded_as, system=task.system(), prompt=prompt, max_tokens=_max_tokens())


@dataclass(frozen=True)
class EnvelopePrompt:
    """An IR envelope: evidence as ranked chunks cut to GROUNDWORK_RESEARCH_INPUT_TOKENS, inputs as INPUT_JSON.

    `instructions` replaces the task's own words above INPUT_JSON (the chat renders
    them from its prompt sheet); a repair note is added to them. `cache_context`: the
    same evidence comes again in later calls (prompt caching marks it, see ir.adapters).
    """

    inputs: dict
    evidence: Sequence[Source] = ()
    instructions: str | None = None
    cache_context: bool = False

    def request(self, task: ModelTask, provider: Provider, repair_note: str | None) -> LLMRequest:
        instructions = task.instructions if self.instructions is None else self.instructions
        if repair_note:
            instructions = f"{instructions}\n{repair_note}"
        envelope = build_envelope(
            task_text(task.name, instructions, self.inputs),
            list(self.evidence),
            capabilities=capabilities_for(provider.name),
        )
        fitted = fit_to_budget(envelope, settings.GROUNDWORK_RESEARCH_INPUT_TOKENS)
        return LLMRequest.from_envelope(
            task.recorded_as, task.system(), fitted, max_tokens=_max_tokens(), cache_context=self.cache_context
        )


def run_model_task(
    task: ModelTask,
    prompt: TaskPrompt,
    *,
    check: Callable[[str], Checked] | None = None,
    subject: str = "",
    session_id=None,
    run_id=None,
    provider: Provider | None = None,
    on_call: Callable[[LLMCall], None] | None = None,
    before_call: Callable[[LLMRequest], None] | None = None,
    on_partial: Callable[[str], None] | None = None,
    first_answer: gateway.GatewayResult | None = None,
) -> TaskResult:
    """One task through the gateway; `check` defaults to the task's JSON Schema; `on_call` sees every call;
    `before_call(request)` runs before every call (the repair and the gateway's retries too) and may raise
    to stop. `run_id` records the research run the calls work for (the run's cost ledger).
    With `on_partial` every call is streamed (gateway.complete): it sees the answer's text so far, unchecked.
    `first_answer`, an answer already received (a batch's), stands for the first call: the same checks,
    the same one repair call."""
    provider = provider or gateway.get_provider()
    check = check or (lambda text: schema_check(task.schema, text))
    version = task.prompt_version()

    def attempt(number: int, repair_note: str | None) -> tuple[gateway.GatewayResult, Checked]:
        if number == 1 and first_answer is not None:
            return answered(first_answer)
        try:
            result = gateway.complete(
                task_request(task, prompt, provider, repair_note),
                prompt_version=version,
                subject=subject,
                session_id=session_id,
                run_id=run_id,
                attempt=number,
                provider=provider,
                before_call=before_call,
                on_partial=on_partial,
            )
        except gateway.GatewayError as exc:
            raise TaskFailed(task, f"model call failed: {exc}") from exc
        return answered(result)

    def answered(result: gateway.GatewayResult) -> tuple[gateway.GatewayResult, Checked]:
        if on_call is not None:
            on_call(result.call)
        checked = check(result.response.text)
        if checked.errors:
            gateway.mark_invalid(result.call, checked.errors)
        return result, checked

    result, checked = attempt(1, None)
    if not checked.errors and checked.output is not None:
        return TaskResult(output=checked.output, dropped=checked.dropped, call=result.call, repaired=False)

    first, first_checked = result, checked
    result, checked = attempt(2, repair_note(checked.errors, result.response.text))
    if checked.output is None and first_checked.output is not None:
        # The repair made things worse: the first answer, sanitised, is still usable.
        result, checked = first, first_checked
    if checked.output is None:
        reasons = "; ".join(checked.errors[:3])
        raise TaskFailed(task, f"the model's answer was invalid after a repair: {reasons}")
    return TaskResult(output=checked.output, dropped=checked.dropped, call=result.call, repaired=True)


def task_request(task: ModelTask, prompt: TaskPrompt, provider: Provider, repair_note: str | None) -> LLMRequest:
    """The prompt's request, carrying the task's JSON Schema for providers that constrain their output to it."""
    return replace(prompt.request(task, provider, repair_note), output_schema=load_schema(task.schema))


def repair_note(errors: list[str], previous: str) -> str:
    listed = "\n".join(f"- {error}" for error in errors[:REPAIR_MAX_ERRORS])
    if len(errors) > REPAIR_MAX_ERRORS:
        listed += f"\n- … and {len(errors) - REPAIR_MAX_ERRORS} more problems of the same kinds"
    echoed = previous[:REPAIR_ECHO_CHARS]
    if len(previous) > REPAIR_ECHO_CHARS:
        echoed += "\n[… truncated]"
    return f"YOUR PREVIOUS OUTPUT WAS INVALID:\n{listed}\nPrevious output:\n{echoed}\nReturn the corrected JSON only."


def schema_check(schema: str, text: str) -> Checked:
    """The answer as one JSON object that matches `schema`; any problem leaves nothing usable."""
    try:
        output = parse_model_json(text)
    except ValueError as exc:
        return Checked(output=None, errors=[str(exc)])
    errors = schema_errors(schema, output)
    return Checked(output=None if errors else output, errors=errors)


def schema_errors(schema: str, value: object) -> list[str]:
    """Every error of `value` against the schema, as `path: message`, in path order."""
    found = sorted(schema_validator(schema).iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{json_path(list(error.absolute_path))}: {error.message}" for error in found]


def _max_tokens() -> int:
    return settings.GROUNDWORK_LLM_MAX_TOKENS
