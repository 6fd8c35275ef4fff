"""CONTEXT_SPLIT offline: each item goes to the child question(s) it shares the most
terms with, or to none (split.py's `split_by_token_overlap`, also the engine's
fallback when a model's split is malformed).
"""

from __future__ import annotations

from llm_platform.task_envelope import read_task

from ..split import plural, split_and_count
from .inputs import context_items, strings_of


def context_split(prompt: str) -> dict:
    """CONTEXT_SPLIT answered by the token-overlap split, with a note on what went where."""
    _, inputs = read_task(prompt)
    children = strings_of(inputs.get("children"))
    items = context_items(inputs.get("parent_items"))
    contexts, targets = split_and_count(children, items)
    assigned = sum(1 for count in targets if count)
    note = (
        f"Deterministic token-overlap split of {plural(len(items), 'item')} among "
        f"{plural(len(children), 'child question')}: {assigned} assigned"
    )
    tied = sum(1 for count in targets if count > 1)
    if tied:
        note += f" ({tied} tied and went to several children)"
    if assigned < len(items):
        note += f"; {len(items) - assigned} shared no term with any child and went to none"
    return {"child_contexts": contexts, "overall_note": note + "."}
