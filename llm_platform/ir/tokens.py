"""Token counting for budgets: a provider's exact count when it has one, else a calibrated estimate."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Protocol

# Calibration. BPE tokenizers used by Anthropic and OpenAI average ~4 characters
# per token on English prose (~0.75 words per token). We divide by 3.6, not 4,
# so the estimate errs on the high side (~10%): an over-estimate costs a little
# context, an under-estimate costs a rejected request.
ASCII_CHARS_PER_TOKEN = 3.6
# Text made of many short words, numbers or punctuation (tables, CSV, code)
# tokenizes denser than its character count suggests: never estimate fewer
# tokens than 1.3 per word-ish piece.
TOKENS_PER_WORD = 1.3
# Non-ASCII characters (CJK, emoji, accented letters split into bytes) often
# cost close to a token each; counting 0.8 keeps CJK text from being underestimated.
TOKENS_PER_NON_ASCII_CHAR = 0.8

_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


def estimate_tokens(text: str) -> int:
    """Conservative token estimate for `text` (0 for empty text).

    Sub-additive by construction: estimate(a + sep + b) <= estimate(a) +
    estimate(b) + 1 for a short whitespace separator, which lets the budget add
    up per-part estimates and stay an upper bound of the joined text.
    """
    if not text:
        return 0
    non_ascii = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))
    ascii_chars = len(text) - non_ascii
    by_chars = ascii_chars / ASCII_CHARS_PER_TOKEN + non_ascii * TOKENS_PER_NON_ASCII_CHAR
    by_words = len(_WORD_RE.findall(text)) * TOKENS_PER_WORD
    return max(1, math.ceil(max(by_chars, by_words)))


def provider_token_counter(provider: object, *, system: str = "") -> Callable[[str], int]:
    """A TokenCounter using `provider.count_tokens(system, text)` when that returns an int.

    Anthropic's count_tokens returns None on any failure, and other providers do
    not have it: both fall back to `estimate_tokens`. Counts are memoised per text
    because the degrade ladder asks about the same pieces repeatedly and an exact
    count is a network call.
    """
    count = getattr(provider, "count_tokens", None)
    if not callable(count):
        return estimate_tokens
    memo: dict[str, int] = {}
    # An exact count covers the whole request (system prompt, message framing);
    # the budget adds up pieces, so the framing of a one-token message is
    # subtracted once measured. None until measured, -1 when counting is unavailable.
    overhead: list[int | None] = [None]

    def exact(text: str) -> int | None:
        try:
            result = count(system, text)
        except Exception:  # best effort: a counting failure must not fail the prompt
            return None
        return result if isinstance(result, int) and not isinstance(result, bool) and result >= 0 else None

    def counter(text: str) -> int:
        if text in memo:
            return memo[text]
        if overhead[0] is None:
            one = exact("x")
            overhead[0] = -1 if one is None else max(0, one - 1)
        result = exact(text) if overhead[0] >= 0 else None
        value = estimate_tokens(text) if result is None else max(0, result - overhead[0])
        memo[text] = value
        return value

    return counter
