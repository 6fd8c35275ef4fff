"""How the usage panel writes money and counts (templates/context/_usage.html)."""

from decimal import Decimal, InvalidOperation

from django import template

register = template.Library()


@register.filter
def dollars(amount) -> str:
    """The ledger keeps six decimals (a digest can cost a fraction of a cent); people read cents, and four
    places only while an amount is under one dollar. None (a model not in the price table) is "—"."""
    if amount is None or amount == "":
        return "—"
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        return "—"
    if value == 0:
        return "$0.00"
    return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"


@register.filter
def thousands(number) -> str:
    return f"{int(number or 0):,}"


@register.filter
def all_tokens(line: dict) -> int:
    """Every token a line counts: input, output, and the prompt cache's reads and writes."""
    kinds = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(line.get(kind) or 0) for kind in kinds)
