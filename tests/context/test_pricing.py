from decimal import Decimal

from llm_platform.pricing import call_cost


def test_a_call_is_priced_by_token_kind(settings):
    settings.GROUNDWORK_LLM_PRICES = {
        "anthropic:m": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    }
    cost = call_cost(
        "anthropic",
        "m",
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_input_tokens=2_000_000,
        cache_creation_input_tokens=400_000,
    )
    assert cost == Decimal("3") + Decimal("1.5") + Decimal("0.6") + Decimal("1.5")


def test_batch_calls_get_the_discount_and_unknown_models_are_unpriced(settings):
    settings.GROUNDWORK_LLM_PRICES = {"openai:*": {"input": 2.0, "output": 8.0}}
    settings.GROUNDWORK_LLM_BATCH_DISCOUNT = 0.5
    assert call_cost("openai", "any", input_tokens=1_000_000, batch=True) == Decimal("1")
    assert call_cost("anthropic", "unknown", input_tokens=10) is None
