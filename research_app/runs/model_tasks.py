"""The model tasks of a run (and the chat's turn), each an IR envelope through the gateway, validated before use.

A task's evidence (search results) travels as envelope chunks, cut by the
degrade ladder to GROUNDWORK_RESEARCH_INPUT_TOKENS; its structured inputs
(question, findings, the node's context items) travel as INPUT_JSON in the task
section (context_app.llm.task_envelope). The answer must match the task's JSON
Schema (prompts/schemas/); one repair call is made with the errors, then the
task fails. Checks beyond the schema (citation numbers, SourceRefs) belong to
the caller, which knows what was given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings
from django.db.models import F
from jsonschema import Draft202012Validator

from context_app.ir import build_envelope, capabilities_for, fit_to_budget
from context_app.ir.types import Source
from context_app.llm import gateway
from context_app.llm.base import LLMRequest
from context_app.llm.task_envelope import task_text
from context_app.models import ContextSet, LLMCall

from ..models import ResearchRun

PROMPT_VERSION = "research-v1"
REPAIR_MAX_ERRORS = 8


@dataclass(frozen=True)
class ResearchTask:
    name: str  # the TASK line: NODE_SUFFICIENCY
    prompt_file: str  # prompts/<prompt_file>.system.txt
    schema: str  # prompts/schemas/<schema>.schema.json
    instructions: str  # the task section's own words, above INPUT_JSON

    @property
    def recorded_as(self) -> str:
        """LLMCall.task: node_sufficiency."""
        return self.name.lower()


NODE_QUERIES = ResearchTask(
    "NODE_QUERIES", "node_queries", "node_queries", "Write search queries for the question in INPUT_JSON."
)
NODE_FINDINGS = ResearchTask(
    "NODE_FINDINGS",
    "node_findings",
    "node_findings",
    "Synthesise findings that answer the question from the numbered search results above; cite them as [n].",
)
NODE_SUFFICIENCY = ResearchTask(
    "NODE_SUFFICIENCY",
    "sufficiency_node",
    "node_sufficiency",
    "Judge whether the findings and the user's context items answer the question.",
)
NODE_DECOMPOSE = ResearchTask(
    "NODE_DECOMPOSE",
    "decompose",
    "node_decompose",
    "Split the question into mutually exclusive, collectively exhaustive sub-questions that close the gaps.",
)
CONTEXT_SPLIT = ResearchTask(
    "CONTEXT_SPLIT",
    "context_split",
    "context_split",
    "Assign the parent's context items to the child questions they bear on.",
)
CHAT_TURN = ResearchTask(
    "CHAT_TURN",
    "chat_turn",
    "chat_turn",
    "Answer the message from the evidence and supplied context, or say what is missing.",
)
REPORT = ResearchTask(
    "REPORT",
    "report",
    "report",
    "Write the cited report: search results as [n], the user's files as their SourceRefs (file::S4).",
)


class TaskFailed(Exception):
    """The task has no valid answer (model error, or invalid after a repair); the message is safe to show."""


@dataclass(frozen=True)
class TaskResult:
    output: dict
    call: LLMCall
    repaired: bool
    budget_cuts: int  # how many cuts the degrade ladder made to fit the evidence


def run_task(
    task: ResearchTask,
    inputs: dict,
    evidence: Sequence[Source] = (),
    *,
    run: ResearchRun,
    subject: str,
) -> TaskResult:
    """A research task for a run: its tokens count against the run's budget."""

    def count_tokens(call: LLMCall) -> None:
        ResearchRun.objects.filter(pk=run.pk).update(
            tokens_used=F("tokens_used") + call.input_tokens + call.output_tokens
        )

    return complete_task(task, inputs, evidence, subject=subject, session_id=run.session_id, on_call=count_tokens)


def complete_task(
    task: ResearchTask,
    inputs: dict,
    evidence: Sequence[Source] = (),
    *,
    subject: str,
    session_id,
    instructions: str | None = None,
    on_call: Callable[[LLMCall], None] | None = None,
) -> TaskResult:
    """One task through the gateway: envelope, budget, call, schema check, one repair.

    `instructions` replaces the task's own words above INPUT_JSON (the chat renders
    them from its prompt sheet); `on_call` sees every recorded call (token budgets).
    """
    instructions = task.instructions if instructions is None else instructions
    provider = gateway.get_provider()
    envelope = build_envelope(
        task_text(task.name, instructions, inputs), list(evidence), capabilities=capabilities_for(provider.name)
    )
    fitted = fit_to_budget(envelope, settings.GROUNDWORK_RESEARCH_INPUT_TOKENS)
    cuts = len(fitted.budget.cuts) if fitted.budget else 0
    context_set_id = ContextSet.objects.filter(session_id=session_id).values_list("pk", flat=True).first()

    def attempt(envelope, number: int) -> tuple[gateway.GatewayResult, dict | None, list[str]]:
        request = LLMRequest.from_envelope(
            task.recorded_as, system_prompt(task.prompt_file), envelope, max_tokens=settings.GROUNDWORK_LLM_MAX_TOKENS
        )
        try:
            result = gateway.complete(
                request,
                prompt_version=PROMPT_VERSION,
                subject=subject,
                context_set_id=context_set_id,
                attempt=number,
                provider=provider,
            )
        except gateway.GatewayError as exc:
            raise TaskFailed(f"{task.recorded_as}: model call failed: {exc}") from exc
        if on_call is not None:
            on_call(result.call)
        output, errors = parse_output(task, result.response.text)
        if errors:
            gateway.mark_invalid(result.call, errors)
        return result, output, errors

    result, output, errors = attempt(fitted, 1)
    repaired = False
    if errors:
        repaired = True
        listed = "\n".join(f"- {error}" for error in errors[:REPAIR_MAX_ERRORS])
        repair = (
            f"{instructions}\nYOUR PREVIOUS OUTPUT WAS INVALID:\n{listed}\n"
            "Return the corrected JSON only, matching the schema in the system prompt."
        )
        retry = build_envelope(
            task_text(task.name, repair, inputs), list(evidence), capabilities=capabilities_for(provider.name)
        )
        result, output, errors = attempt(fit_to_budget(retry, settings.GROUNDWORK_RESEARCH_INPUT_TOKENS), 2)
    if errors or output is None:
        raise TaskFailed(f"{task.recorded_as}: the model's answer was invalid after a repair: {'; '.join(errors[:3])}")
    return TaskResult(output=output, call=result.call, repaired=repaired, budget_cuts=cuts)


def parse_output(task: ResearchTask, text: str) -> tuple[dict | None, list[str]]:
    """The answer as JSON (a fenced ```json block is accepted) and its schema errors."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        output = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, [f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]
    errors = [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(top level)'}: {error.message}"
        for error in sorted(_validator(task.schema).iter_errors(output), key=lambda e: list(e.absolute_path))
    ]
    return (None if errors else output), errors


def system_prompt(prompt_file: str) -> str:
    return _read_prompt(Path(settings.PROMPTS_DIR), prompt_file)


@cache
def _read_prompt(directory: Path, prompt_file: str) -> str:
    return (directory / f"{prompt_file}.system.txt").read_text(encoding="utf-8")


@cache
def _validator(schema: str) -> Draft202012Validator:
    path = Path(settings.PROMPTS_DIR) / "schemas" / f"{schema}.schema.json"
    return Draft202012Validator(json.loads(path.read_text(encoding="utf-8")))
