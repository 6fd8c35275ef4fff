"""Reading a research task's INPUT_JSON: its values checked and cleaned, whatever the caller sent.

Every offline research handler reads its inputs through these: a string is
whitespace-collapsed, a number clamped, a list keeps only well-formed entries.
"""

from __future__ import annotations

import re

from digests.items import ITEM_KINDS
from llm_platform.base import ProviderError
from llm_platform.terms import content_terms


def input_text(value: object) -> str:
    """A string input with its whitespace collapsed; "" for anything else."""
    return re.sub(r"\s+", " ", value).strip() if isinstance(value, str) else ""


def bounded(value: object, default: int, high: int) -> int:
    """An int input clamped to 1..high; `default` when absent or not a number."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else default
    return max(1, min(number, high))


def required_question(inputs: dict, task: str) -> str:
    question = input_text(inputs.get("question"))
    if not question:
        raise ProviderError(f"{task}: INPUT_JSON has no question", retryable=False)
    return question


def context_items(value: object) -> list[dict]:
    """Well-formed context items (a known kind, some text, a list of string sources), in input order."""
    items = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict) or item.get("kind") not in ITEM_KINDS:
            continue
        if not isinstance(item.get("text"), str) or not item["text"].strip():
            continue
        sources = item.get("sources")
        if not isinstance(sources, list) or not all(isinstance(ref, str) for ref in sources):
            continue
        items.append(item)
    return items


def citation_numbers(value: object) -> list[int]:
    """Positive result numbers, each once, ascending."""
    numbers = value if isinstance(value, list) else []
    return sorted({n for n in numbers if isinstance(n, int) and not isinstance(n, bool) and n >= 1})


def dicts_of(value: object) -> list[dict]:
    return [item for item in (value if isinstance(value, list) else []) if isinstance(item, dict)]


def strings_of(value: object) -> list[str]:
    return [text for text in (input_text(v) for v in (value if isinstance(value, list) else [])) if text]


def term_set(text: str) -> frozenset[str]:
    """A text's content terms (llm_platform.terms), as a set."""
    return frozenset(content_terms(text))
