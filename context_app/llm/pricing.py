"""What a model call costs: the price table (settings.GROUNDWORK_LLM_PRICES) applied to its tokens.

Prices are US dollars per million tokens, looked up by "provider:model", then
"provider:*". A call of a model the table does not know is unpriced (None), never
priced at zero: a ledger says so instead of showing a cost it does not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens of each kind."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal


def price_of(provider: str, model: str) -> Price | None:
    table = settings.GROUNDWORK_LLM_PRICES
    entry = table.get(f"{provider}:{model}") or table.get(f"{provider}:*")
    if entry is None:
        return None
    return Price(**{kind: Decimal(str(entry.get(kind, 0))) for kind in ("input", "output", "cache_read", "cache_write")})


def call_cost(
    provider: str,
    model: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    batch: bool = False,
) -> Decimal | None:
    """Dollars for one call's tokens; None when the table has no price for the model."""
    price = price_of(provider, model)
    if price is None:
        return None
    cost = (
        input_tokens * price.input
        + output_tokens * price.output
        + cache_read_input_tokens * price.cache_read
        + cache_creation_input_tokens * price.cache_write
    ) / MILLION
    if batch:
        cost *= Decimal(str(settings.GROUNDWORK_LLM_BATCH_DISCOUNT))
    return cost
