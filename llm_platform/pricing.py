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
    kinds = ("input", "output", "cache_read", "cache_write")
    return Price(**{kind: Decimal(str(entry.get(kind, 0))) for kind in kinds})


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


def prompt_caching_saving(
    provider: str,
    model: str,
    *,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    batch: bool = False,
) -> Decimal | None:
    """Dollars prompt caching saved against sending the same tokens uncached; None when unpriced.

    A cache read costs cache_read instead of input; a cache write costs cache_write
    instead of input (a premium, so it counts against the saving):
    reads × (input − cache_read) − writes × (cache_write − input). Negative when the
    writes were never read back often enough to pay for themselves.
    """
    price = price_of(provider, model)
    if price is None:
        return None
    saving = (
        cache_read_input_tokens * (price.input - price.cache_read)
        - cache_creation_input_tokens * (price.cache_write - price.input)
    ) / MILLION
    if batch:
        saving *= Decimal(str(settings.GROUNDWORK_LLM_BATCH_DISCOUNT))
    return saving


def call_estimate(provider: str, model: str, *, input_tokens: int, max_output_tokens: int) -> Decimal | None:
    """The most a call can cost before it is made: every input token uncached, the whole output allowance."""
    return call_cost(provider, model, input_tokens=input_tokens, output_tokens=max_output_tokens)
