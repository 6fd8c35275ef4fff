"""The model tasks of a research run, each an IR envelope through the model-task runner.

A task's evidence (search results) travels as envelope chunks; its structured
inputs (question, findings, the node's context items) as INPUT_JSON
(llm_platform.model_task.EnvelopePrompt). The answer must match the task's
JSON Schema (prompts/schemas/), with one repair call. Checks beyond the schema
(citation numbers, SourceRefs) belong to the caller, which knows what was given.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import F
from django.db.models.functions import Greatest

from llm_platform import gateway, spending
from llm_platform.base import LLMRequest
from llm_platform.ir.types import Source
from llm_platform.model_task import EnvelopePrompt, ModelTask, TaskFailed, TaskResult, run_model_task
from llm_platform.models import LLMCall

from ..models import ResearchRun
from .ending import fail_run
from .events import RunStopped, ensure_status

PROMPT_VERSION = "research-v1"


def research_task(
    name: str, prompt_file: str, schema: str, instructions: str, offline_handler: str, label: str
) -> ModelTask:
    return ModelTask(
        name, (prompt_file,), schema, lambda: PROMPT_VERSION, instructions, offline_handler=offline_handler, label=label
    )


NODE_QUERIES = research_task(
    "NODE_QUERIES",
    "node_queries",
    "node_queries",
    "Write search queries for the question in INPUT_JSON.",
    "research_app.runs.offline.queries.node_queries",
    "Research: search queries",
)
NODE_FINDINGS = research_task(
    "NODE_FINDINGS",
    "node_findings",
    "node_findings",
    "Synthesise findings that answer the question from the numbered search results above; cite them as [n].",
    "research_app.runs.offline.findings.node_findings",
    "Research: findings from search results",
)
NODE_SUFFICIENCY = research_task(
    "NODE_SUFFICIENCY",
    "sufficiency_node",
    "node_sufficiency",
    "Judge whether the findings and the user's context items answer the question.",
    "research_app.runs.offline.sufficiency.node_sufficiency",
    "Research: is the answer sufficient?",
)
NODE_DECOMPOSE = research_task(
    "NODE_DECOMPOSE",
    "decompose",
    "node_decompose",
    "Split the question into mutually exclusive, collectively exhaustive sub-questions that close the gaps.",
    "research_app.runs.offline.decompose.node_decompose",
    "Research: sub-questions",
)
CONTEXT_SPLIT = research_task(
    "CONTEXT_SPLIT",
    "context_split",
    "context_split",
    "Assign the parent's context items to the child questions they bear on.",
    "research_app.runs.offline.context_split.context_split",
    "Research: context split among sub-questions",
)
REPORT = research_task(
    "REPORT",
    "report",
    "report",
    "Write the cited report: search results as [n], the user's files as their SourceRefs (file::S4).",
    "research_app.runs.offline.report.report",
    "Research: the report",
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
    unless the run is still `while_status` (a cancelled run's step stops with RunStopped), nor one
    that could pass the run's token budget or its session's spending cap: the run fails, saying
    which (`run_failed` with its `limit`), and the step stops with RunStopped."""
    reservation = TokenReservation(run.pk, task.name)

    def before_call(request: LLMRequest) -> None:
        ensure_status(run.pk, while_status, task.name)
        reservation.take(spending.request_tokens(request))

    try:
        return run_model_task(
            task,
            EnvelopePrompt(inputs, evidence),
            subject=subject,
            session_id=run.session_id,
            run_id=run.pk,
            on_call=reservation.settle,
            before_call=before_call,
        )
    except TaskFailed as exc:
        if isinstance(exc.__cause__, gateway.SpendingCapReached):
            _stop(run.pk, str(exc.__cause__), "spending_cap", task.name)
        raise
    finally:
        reservation.release()


class TokenReservation:
    """The most one call of a run may use, held against the run's token budget while it is made.

    One conditional UPDATE takes it (tokens used + reserved + this ≤ budget), so nodes
    running in parallel cannot pass the budget together; the call's real tokens replace
    it once answered. A retry of the same call takes it anew.
    """

    def __init__(self, run_id, doing: str):
        self.run_id, self.doing, self.held = run_id, doing, 0

    def take(self, tokens: int) -> None:
        self.release()  # a retry: the try before it has ended
        room = F("tokens_used") + F("tokens_reserved") + tokens
        runs = ResearchRun.objects.filter(pk=self.run_id, token_budget__gte=room)
        if not runs.update(tokens_reserved=F("tokens_reserved") + tokens):
            run = ResearchRun.objects.only("token_budget", "tokens_used").get(pk=self.run_id)
            reason = (
                f"token budget reached: {run.tokens_used} of {run.token_budget} tokens used, "
                f"and the next call ({self.doing.lower()}) may use up to {tokens}"
            )
            _stop(self.run_id, reason, "token_budget", self.doing)
        self.held = tokens

    def settle(self, call: LLMCall) -> None:
        """The call answered: its real tokens count, its reservation ends."""
        ResearchRun.objects.filter(pk=self.run_id).update(
            tokens_used=F("tokens_used") + call.input_tokens + call.output_tokens,
            model_calls=F("model_calls") + 1,
            tokens_reserved=_less_reserved(self.held),
        )
        self.held = 0

    def release(self) -> None:
        if self.held:
            ResearchRun.objects.filter(pk=self.run_id).update(tokens_reserved=_less_reserved(self.held))
            self.held = 0


def _less_reserved(tokens: int):
    # Never below 0: a resume clears the reservations of the calls it re-delivers (recovery.resume_run).
    return Greatest(F("tokens_reserved") - tokens, 0)


def _stop(run_id, reason: str, limit: str, doing: str) -> None:
    """A limit stops the run before the call that could pass it: failed, with the reason and the limit."""
    fail_run(run_id, reason, limit=limit)
    raise RunStopped(run_id, doing)


def run_progress(run_id) -> dict:
    """The run's model calls and tokens so far (counted by run_task), for the page's progress line;
    node and run ends carry it in their events."""
    calls, tokens = ResearchRun.objects.values_list("model_calls", "tokens_used").get(pk=run_id)
    return {"calls": calls, "tokens": tokens}
