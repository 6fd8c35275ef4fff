"""The token-overlap context split (seed 001 §4.4): a parent node's context items among its child questions.

The engine falls back to it when a model's CONTEXT_SPLIT is malformed, and the
offline provider answers CONTEXT_SPLIT with it (offline.py). Pure, deterministic,
no Django: the terms are llm_platform.terms' (stemmed, stop words and question
words removed).
"""

from llm_platform.terms import content_terms, question_terms, quote_list, surface_words


def plural(count: int, singular: str, many: str | None = None) -> str:
    """`count` and its noun: "1 item", "2 items" ("2 queries" when `many` is given)."""
    return f"{count} {singular if count == 1 else (many or singular + 's')}"


def split_by_token_overlap(children: list[str], items: list[dict]) -> list[dict]:
    """Assign the parent's context items to child questions by shared content terms (seed 001 §4.4 fallback).

    Each item goes to the child with the most content terms in common with the
    item's text (stemmed, stop words and question words removed), or to every
    child tied for the most; an item sharing no term with any child goes to none.
    Items are copied as {"kind", "text", "sources"}, in the parent's order; items
    without text are skipped. Returns one entry per child, in the children's
    order: {"child_question", "selected_items", "selection_reason"} (the
    `child_contexts` of the CONTEXT_SPLIT schema). Pure and deterministic.
    """
    return split_and_count(children, items)[0]


def split_and_count(children: list[str], items: list[dict]) -> tuple[list[dict], list[int]]:
    """`split_by_token_overlap`'s child contexts, and for each item the number of children it went to."""
    child_terms = [set(question_terms(child)) for child in children]
    selected: list[list[dict]] = [[] for _ in children]
    shared: list[set[str]] = [set() for _ in children]
    targets: list[int] = []
    for item in items:
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            targets.append(0)
            continue
        terms = frozenset(content_terms(text))
        overlaps = [len(terms & wanted) for wanted in child_terms]
        best = max(overlaps, default=0)
        winners = [index for index, overlap in enumerate(overlaps) if best and overlap == best]
        for index in winners:
            selected[index].append({"kind": item.get("kind"), "text": text, "sources": list(item.get("sources") or [])})
            shared[index] |= terms & child_terms[index]
        targets.append(len(winners))
    contexts = [
        {
            "child_question": child,
            "selected_items": selected[index],
            "selection_reason": _selection_reason(child, len(selected[index]), shared[index]),
        }
        for index, child in enumerate(children)
    ]
    return contexts, targets


def _selection_reason(child: str, count: int, shared: set[str]) -> str:
    if not count:
        return "Token overlap: no item of the parent's context shares more terms with this question than with another."
    words = surface_words(child)
    named = [words[term] for term in question_terms(child) if term in shared]
    return (
        f"Token overlap: {plural(count, 'item')} of the parent's context "
        f"{'shares' if count == 1 else 'share'} the most terms with this question "
        f"({plural(len(named), 'shared term')}: {quote_list(named)})."
    )
