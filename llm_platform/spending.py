"""The per-session spending cap: no model call is made that could take a session past it.

A call's most is priced before it is made (every prompt token uncached plus its
whole output allowance, llm.pricing.call_estimate). Under the session's row lock,
what the session has spent (its LLMCall rows) plus what its calls in progress hold
(SpendingHold rows) plus that most must stay within the cap; then the call holds
its most until its LLMCall row is written. So calls made in parallel (a parse's
files, a run's nodes, a chat) cannot pass the cap together. A hold of a worker that
died mid-call expires after the longest a call may take. A model the price table
does not know cannot be checked and is let through (the ledger reports its calls
as unpriced).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from workspaces.models import ResearchSession

from .base import LLMRequest
from .ir.tokens import estimate_tokens
from .models import LLMCall, SpendingHold
from .pricing import call_cost, call_estimate

MONEY_PLACES = Decimal("0.000001")  # a millionth of a dollar: one token of the cheapest model still shows
TOKEN_KINDS = LLMCall.TOKEN_KINDS


class OverSpendingCap(Exception):
    """The call was not made: it could take the session past its cap; the message says by how much."""


def prompt_tokens(request: LLMRequest) -> int:
    return estimate_tokens(request.system) + estimate_tokens(request.prompt)


def request_tokens(request: LLMRequest) -> int:
    """The most tokens a request can use: its prompt's estimate plus its whole output allowance."""
    return prompt_tokens(request) + request.max_tokens


@contextmanager
def held_within_cap(session_id, provider: str, model: str, request: LLMRequest) -> Iterator[None]:
    """Around one call (its retries too): hold its most against the cap, or raise OverSpendingCap."""
    hold = _hold(session_id, provider, model, request)
    try:
        yield
    finally:
        if hold is not None:
            hold.delete()


def _hold(session_id, provider: str, model: str, request: LLMRequest) -> SpendingHold | None:
    if session_id is None:
        return None
    session = ResearchSession.objects.filter(pk=session_id).first()
    cap = spending_cap_of(session) if session else None
    if cap is None:
        return None
    most = call_estimate(provider, model, input_tokens=prompt_tokens(request), max_output_tokens=request.max_tokens)
    if most is None:
        return None
    now = timezone.now()
    with transaction.atomic():
        ResearchSession.objects.select_for_update().filter(pk=session_id).values_list("pk").first()
        held = SpendingHold.objects.filter(session_id=session_id, expires_at__gt=now).aggregate(
            total=Sum("amount_usd")
        )["total"] or Decimal(0)
        spent = spent_usd(session_id)
        if spent + held + most > cap:
            in_progress = f", ${money(held)} held by calls in progress" if held else ""
            raise OverSpendingCap(
                f"the session's spending cap of ${money(cap)} is reached: ${money(spent)} spent{in_progress}, "
                f"and the next call may cost up to ${money(most)}"
            )
        expires_at = now + _longest_call()
        return SpendingHold.objects.create(session_id=session_id, amount_usd=most, expires_at=expires_at)


def _longest_call() -> timedelta:
    """The longest one call may take with its retries and rate-limit waits: a dead worker's hold lasts that long."""
    retries = settings.GROUNDWORK_LLM_MAX_RETRIES + 1
    return timedelta(
        seconds=retries * settings.GROUNDWORK_LLM_TIMEOUT_SECONDS + settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS
    )


# --- what a session spent -------------------------------------------------------


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


def money(amount: Decimal) -> str:
    return str(amount.quantize(MONEY_PLACES))


def call_groups(calls: QuerySet, *extra: str) -> Iterable[dict]:
    """The rows summed per task, provider, model and batch (and `extra` fields): one query."""
    return (
        calls.order_by()
        .values("task", "provider", "model", "batch", *extra)
        .annotate(calls=Count("id"), **{kind: Sum(kind) for kind in TOKEN_KINDS})
    )


def spent_usd(session_id) -> Decimal:
    """What the session's priced calls cost so far (one query)."""
    tally = Tally()
    for group in call_groups(LLMCall.objects.filter(session_id=session_id)):
        tally.add(group, batch=group["batch"])
    return tally.cost


def spending_cap_of(session: ResearchSession) -> Decimal | None:
    """The session's own cap, else the deployment's default (GROUNDWORK_SESSION_SPENDING_CAP_USD), else none."""
    cap = session.spending_cap_usd
    if cap is None and settings.GROUNDWORK_SESSION_SPENDING_CAP_USD is not None:
        cap = Decimal(str(settings.GROUNDWORK_SESSION_SPENDING_CAP_USD))
    return cap


def spending_cap_json(session: ResearchSession) -> dict:
    cap = spending_cap_of(session)
    return {"cap": money(cap) if cap is not None else None}
