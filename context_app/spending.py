"""The per-session spending cap: no model call is made that could take a session past it.

A call's most is priced before it is made (every prompt token uncached plus its
whole output allowance, llm.pricing.call_estimate); when what the session has
spent plus that would pass its cap, the call is refused. A model the price
table does not know cannot be checked and is let through (the ledger reports
its calls as unpriced).
"""

from __future__ import annotations

from .ir.tokens import estimate_tokens
from .llm.base import LLMRequest
from .llm.pricing import call_estimate
from .models import ContextSet
from .usage import money, spending_cap_of, spent_usd


def prompt_tokens(request: LLMRequest) -> int:
    return estimate_tokens(request.system) + estimate_tokens(request.prompt)


def request_tokens(request: LLMRequest) -> int:
    """The most tokens a request can use: its prompt's estimate plus its whole output allowance."""
    return prompt_tokens(request) + request.max_tokens


def over_cap_reason(context_set_id, provider: str, model: str, request: LLMRequest) -> str | None:
    """Why this call must not be made under the session's cap, or None when it may."""
    context_set = ContextSet.objects.select_related("session").filter(pk=context_set_id).first()
    if context_set is None:
        return None
    cap = spending_cap_of(context_set)
    if cap is None:
        return None
    most = call_estimate(
        provider,
        model,
        input_tokens=prompt_tokens(request),
        max_output_tokens=request.max_tokens,
    )
    if most is None:
        return None
    spent = spent_usd(context_set_id)
    if spent + most <= cap:
        return None
    return (
        f"the session's spending cap of ${money(cap)} is reached: ${money(spent)} spent, "
        f"and the next call may cost up to ${money(most)}"
    )

