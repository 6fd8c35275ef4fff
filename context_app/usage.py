"""The cost ledger (SPEC §8 Usage): what a session's and a run's model calls cost, and what caching saved.

Every figure is an aggregate over LLMCall rows (one GROUP BY query by task,
provider, model and batch), priced per group with context_app.llm.pricing: the
price is linear in tokens, so a group's cost is the sum of its rows' costs. The
digest cache's savings are the DigestCacheHit rows of the session (one more
query). A model the price table does not know is reported as unpriced, never as
free. Money is Decimal, shown as a string in US dollars.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, QuerySet, Sum

from .llm.pricing import call_cost, prompt_caching_saving
from .models import ContextSet, DigestCacheHit, LLMCall

CURRENCY = "USD"
MONEY_PLACES = Decimal("0.000001")  # a millionth of a dollar: one token of the cheapest model still shows
TOKEN_KINDS = LLMCall.TOKEN_KINDS


@dataclass
class Tally:
    """Calls, tokens by kind and money of a set of LLMCall rows (or of the calls a cache hit saved)."""

    calls: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost: Decimal = Decimal(0)
    unpriced_calls: int = 0
    unpriced_models: set[str] = field(default_factory=set)

    def add(self, group: dict, *, batch: bool = False) -> None:
        self.calls += group["calls"]
        for kind in TOKEN_KINDS:
            self.tokens[kind] += group[kind] or 0
        cost = call_cost(group["provider"], group["model"], batch=batch, **{k: group[k] or 0 for k in TOKEN_KINDS})
        if cost is None:
            self.unpriced_calls += group["calls"]
            self.unpriced_models.add(f"{group['provider']}:{group['model']}")
        else:
            self.cost += cost

    def as_json(self) -> dict:
        return {
            "calls": self.calls,
            **self.tokens,
            "cost": money(self.cost),
            "unpriced_calls": self.unpriced_calls,
        }


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


def money(amount: Decimal) -> str:
    return str(amount.quantize(MONEY_PLACES))


def _call_groups(calls: QuerySet, *extra: str) -> Iterable[dict]:
    """The rows summed per task, provider, model and batch (and `extra` fields): one query."""
    return (
        calls.order_by()
        .values("task", "provider", "model", "batch", *extra)
        .annotate(calls=Count("id"), **{kind: Sum(kind) for kind in TOKEN_KINDS})
    )


def _ledger(call_groups: Iterable[dict], hit_groups: Iterable[dict] = ()) -> dict:
    """By task and in total: spent, saved by the digest cache and by prompt caching; by run when grouped so."""
    by_task: dict[str, TaskUsage] = {}
    by_run: dict[str, Tally] = {}
    total = TaskUsage()
    for group in call_groups:
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
        "by_task": [{"task": task, **by_task[task].as_json()} for task in sorted(by_task)],
        "by_run": [{"run_id": run_id, **tally.as_json()} for run_id, tally in by_run.items()],
        "unpriced_models": sorted(unpriced),
    }


def session_usage(context_set: ContextSet) -> dict:
    """A session's ledger: every call recorded on its context set, per task and per run (two queries)."""
    calls = _call_groups(LLMCall.objects.filter(context_set=context_set), "run_id")
    hits = (
        DigestCacheHit.objects.filter(context_set=context_set)
        .order_by()
        .values("task", "provider", "model")
        .annotate(calls=Sum("calls"), **{kind: Sum(kind) for kind in TOKEN_KINDS})
    )
    return {
        **_ledger(calls, hits),
        "spending_cap": spending_cap_json(context_set),
    }


def run_usage(run_id) -> dict:
    """A run's ledger: the calls recorded with its id (one query); a run has no digest-cache savings of its own."""
    ledger = _ledger(_call_groups(LLMCall.objects.filter(run_id=run_id)))
    del ledger["by_run"]
    return ledger


# --- the spending cap ------------------------------------------------------------


def spent_usd(context_set_id) -> Decimal:
    """What the session's priced calls cost so far (one query)."""
    tally = Tally()
    for group in _call_groups(LLMCall.objects.filter(context_set_id=context_set_id)):
        tally.add(group, batch=group["batch"])
    return tally.cost


def spending_cap_of(context_set: ContextSet) -> Decimal | None:
    """The session's own cap, else the deployment's default (GROUNDWORK_SESSION_SPENDING_CAP_USD), else none."""
    cap = context_set.session.spending_cap_usd
    if cap is None and settings.GROUNDWORK_SESSION_SPENDING_CAP_USD is not None:
        cap = Decimal(str(settings.GROUNDWORK_SESSION_SPENDING_CAP_USD))
    return cap


def spending_cap_json(context_set: ContextSet) -> dict:
    cap = spending_cap_of(context_set)
    return {"cap": money(cap) if cap is not None else None}
