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

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from .ir.tokens import estimate_tokens
from .llm.base import LLMRequest
from .llm.pricing import call_estimate
from .models import ContextSet, SpendingHold
from .usage import money, spending_cap_of, spent_usd


class OverSpendingCap(Exception):
    """The call was not made: it could take the session past its cap; the message says by how much."""


def prompt_tokens(request: LLMRequest) -> int:
    return estimate_tokens(request.system) + estimate_tokens(request.prompt)


def request_tokens(request: LLMRequest) -> int:
    """The most tokens a request can use: its prompt's estimate plus its whole output allowance."""
    return prompt_tokens(request) + request.max_tokens


@contextmanager
def held_within_cap(context_set_id, provider: str, model: str, request: LLMRequest) -> Iterator[None]:
    """Around one call (its retries too): hold its most against the cap, or raise OverSpendingCap."""
    hold = _hold(context_set_id, provider, model, request)
    try:
        yield
    finally:
        if hold is not None:
            hold.delete()


def _hold(context_set_id, provider: str, model: str, request: LLMRequest) -> SpendingHold | None:
    if context_set_id is None:
        return None
    context_set = ContextSet.objects.select_related("session").filter(pk=context_set_id).first()
    cap = spending_cap_of(context_set) if context_set else None
    if cap is None:
        return None
    most = call_estimate(provider, model, input_tokens=prompt_tokens(request), max_output_tokens=request.max_tokens)
    if most is None:
        return None
    now = timezone.now()
    with transaction.atomic():
        ContextSet.objects.select_for_update().filter(pk=context_set_id).values_list("pk").first()
        held = SpendingHold.objects.filter(context_set_id=context_set_id, expires_at__gt=now).aggregate(
            total=Sum("amount_usd")
        )["total"] or Decimal(0)
        spent = spent_usd(context_set_id)
        if spent + held + most > cap:
            in_progress = f", ${money(held)} held by calls in progress" if held else ""
            raise OverSpendingCap(
                f"the session's spending cap of ${money(cap)} is reached: ${money(spent)} spent{in_progress}, "
                f"and the next call may cost up to ${money(most)}"
            )
        expires_at = now + _longest_call()
        return SpendingHold.objects.create(context_set_id=context_set_id, amount_usd=most, expires_at=expires_at)


def _longest_call() -> timedelta:
    """The longest one call may take with its retries and rate-limit waits: a dead worker's hold lasts that long."""
    retries = settings.GROUNDWORK_LLM_MAX_RETRIES + 1
    return timedelta(
        seconds=retries * settings.GROUNDWORK_LLM_TIMEOUT_SECONDS + settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS
    )
