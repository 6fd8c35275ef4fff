"""The cost ledger (SPEC §8 Usage): what a session's and a run's model calls cost, and what caching saved.

Every figure is an aggregate over LLMCall rows (one GROUP BY query by task,
provider, model and batch), priced per group (llm_platform.spending): the price is
linear in tokens, so a group's cost is the sum of its rows' costs. Calls a cache
made unnecessary come in as groups of the same shape (the digest cache's hits,
context_app.usage). A model the price table does not know is reported as unpriced,
never as free. Money is Decimal, shown as a string in US dollars.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from .models import LLMCall
from .pricing import prompt_caching_saving
from .spending import Tally, call_groups, money, spending_cap_json

CURRENCY = "USD"
# What each task's calls do, in words for the usage panel; a ModelTask adds its own label.
# Embeddings are not a ModelTask (llm_platform.embeddings records them as `embed`).
TASK_LABELS: dict[str, str] = {"embed": "Embeddings for search by meaning"}
# Providers whose calls cost nothing: the offline extractive mode and the local embedding model.
FREE_PROVIDERS = frozenset({"offline", "local"})


@dataclass
class TaskUsage:
    """One task's line of the ledger: what its calls cost and what caching saved."""

    spent: Tally = field(default_factory=Tally)
    saved_by_digest_cache: Tally = field(default_factory=Tally)
    saved_by_prompt_caching: Decimal = Decimal(0)

    def as_json(self) -> dict:
        return {
            **self.spent.as_json(),
            "saved": {
                "digest_cache": self.saved_by_digest_cache.as_json(),
                "prompt_caching": money(self.saved_by_prompt_caching),
                "total": money(self.saved_by_digest_cache.cost + self.saved_by_prompt_caching),
            },
        }


def ledger(call_groups: Iterable[dict], hit_groups: Iterable[dict] = ()) -> dict:
    """By task and in total: spent, saved by the digest cache and by prompt caching; by run when grouped so."""
    by_task: dict[str, TaskUsage] = {}
    by_run: dict[str, Tally] = {}
    total = TaskUsage()
    providers: set[str] = set()
    for group in call_groups:
        providers.add(group["provider"])
        line = by_task.setdefault(group["task"], TaskUsage())
        for usage in (line, total):
            usage.spent.add(group, batch=group["batch"])
            saving = prompt_caching_saving(
                group["provider"],
                group["model"],
                cache_read_input_tokens=group["cache_read_input_tokens"] or 0,
                cache_creation_input_tokens=group["cache_creation_input_tokens"] or 0,
                batch=group["batch"],
            )
            usage.saved_by_prompt_caching += saving or 0
        if group.get("run_id") is not None:
            by_run.setdefault(str(group["run_id"]), Tally()).add(group, batch=group["batch"])
    for group in hit_groups:
        line = by_task.setdefault(group["task"], TaskUsage())
        for usage in (line, total):
            usage.saved_by_digest_cache.add(group)
    unpriced = total.spent.unpriced_models | total.saved_by_digest_cache.unpriced_models
    return {
        "currency": CURRENCY,
        "total": total.as_json(),
        "by_task": [
            {"task": task, "label": TASK_LABELS.get(task, task.replace("_", " ")), **by_task[task].as_json()}
            for task in sorted(by_task)
        ],
        "by_run": [{"run_id": run_id, **tally.as_json()} for run_id, tally in by_run.items()],
        "unpriced_models": sorted(unpriced),
        # Every call made by a provider that costs nothing (the offline mode): $0.00 is no oversight.
        "free": bool(providers) and providers <= FREE_PROVIDERS,
    }


def session_ledger(session, hit_groups: Iterable[dict] = ()) -> dict:
    """A session's ledger: every call recorded for it, per task and per run (one query), with what
    `hit_groups` (calls a cache saved) did not cost, and the session's spending cap."""
    calls = call_groups(LLMCall.objects.filter(session_id=session.pk), "run_id")
    return {**ledger(calls, hit_groups), "spending_cap": spending_cap_json(session)}


def run_usage(run_id) -> dict:
    """A run's ledger: the calls recorded with its id (one query); a run has no digest-cache savings of its own."""
    of_run = ledger(call_groups(LLMCall.objects.filter(run_id=run_id)))
    del of_run["by_run"]
    return of_run
