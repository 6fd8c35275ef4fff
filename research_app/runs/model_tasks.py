"""The model tasks of a research run, each an IR envelope through the model-task runner.

A task's evidence (search results) travels as envelope chunks; its structured
inputs (question, findings, the node's context items) as INPUT_JSON
(context_app.llm.model_task.EnvelopePrompt). The answer must match the task's
JSON Schema (prompts/schemas/), with one repair call. Checks beyond the schema
(citation numbers, SourceRefs) belong to the caller, which knows what was given.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import F

from context_app.ir.types import Source
from context_app.llm.model_task import EnvelopePrompt, ModelTask, TaskResult, run_model_task
from context_app.models import LLMCall
from context_app.selectors import context_set_id_of

from ..models import ResearchRun
from .events import ensure_status

PROMPT_VERSION = "research-v1"


def research_task(name: str, prompt_file: str, schema: str, instructions: str) -> ModelTask:
    return ModelTask(name, (prompt_file,), schema, lambda: PROMPT_VERSION, instructions)


NODE_QUERIES = research_task(
    "NODE_QUERIES", "node_queries", "node_queries", "Write search queries for the question in INPUT_JSON."
)
NODE_FINDINGS = research_task(
    "NODE_FINDINGS",
    "node_findings",
    "node_findings",
    "Synthesise findings that answer the question from the numbered search results above; cite them as [n].",
)
NODE_SUFFICIENCY = research_task(
    "NODE_SUFFICIENCY",
    "sufficiency_node",
    "node_sufficiency",
    "Judge whether the findings and the user's context items answer the question.",
)
NODE_DECOMPOSE = research_task(
    "NODE_DECOMPOSE",
    "decompose",
    "node_decompose",
    "Split the question into mutually exclusive, collectively exhaustive sub-questions that close the gaps.",
)
CONTEXT_SPLIT = research_task(
    "CONTEXT_SPLIT",
    "context_split",
    "context_split",
    "Assign the parent's context items to the child questions they bear on.",
)
REPORT = research_task(
    "REPORT",
    "report",
    "report",
    "Write the cited report: search results as [n], the user's files as their SourceRefs (file::S4).",
)

RESEARCH_TASKS = (NODE_QUERIES, NODE_FINDINGS, NODE_SUFFICIENCY, NODE_DECOMPOSE, CONTEXT_SPLIT, REPORT)


def run_task(
    task: ModelTask,
    inputs: dict,
    evidence: Sequence[Source] = (),
    *,
    run: ResearchRun,
    subject: str,
    while_status: str = ResearchRun.Status.RUNNING,
) -> TaskResult:
    """A research task for a run: its tokens count against the run's budget; no call is made
    unless the run is still `while_status` (a cancelled run's step stops with RunStopped)."""

    def count_tokens(call: LLMCall) -> None:
        ResearchRun.objects.filter(pk=run.pk).update(
            tokens_used=F("tokens_used") + call.input_tokens + call.output_tokens, model_calls=F("model_calls") + 1
        )

    return run_model_task(
        task,
        EnvelopePrompt(inputs, evidence),
        subject=subject,
        context_set_id=context_set_id_of(run.session_id),
        on_call=count_tokens,
        before_call=lambda: ensure_status(run.pk, while_status, task.name),
    )


def run_usage(run_id) -> dict:
    """The run's model calls and tokens so far (counted by run_task), for the page's progress line;
    node and run ends carry it in their events."""
    calls, tokens = ResearchRun.objects.values_list("model_calls", "tokens_used").get(pk=run_id)
    return {"calls": calls, "tokens": tokens}
