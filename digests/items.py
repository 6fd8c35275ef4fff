"""A digest as context items: what research nodes, reports and chat turns are given of the user's files.

A context item is one fact or uncertainty of a digest, as the prompts see it:
`{"kind", "text", "sources": ["report.pdf::S4"]}`. Prompts get structured
digest items only, never raw file bodies (seed 001 §11).
"""

from .validation import KINDS

# What an item may be: a digest fact's kind, or an uncertainty (the enum of context_split.schema.json).
ITEM_KINDS = frozenset((*KINDS, "uncertainty"))


def digest_items(digest: dict | None) -> list[dict]:
    """A digest's facts and uncertainties as context items, in the digest's order."""
    if not digest:
        return []
    items = [
        {"kind": fact.get("kind", "fact"), "text": fact["claim"], "sources": list(fact.get("sources", []))}
        for fact in digest.get("facts", [])
    ]
    items += [
        {"kind": "uncertainty", "text": u["text"], "sources": list(u.get("sources", []))}
        for u in digest.get("uncertainties", [])
    ]
    return items


def item_line(item: dict) -> str:
    """One item as a line of text: `[fact] The pilot cost EUR 1.8 million (report.pdf::S4)`."""
    return f"[{item['kind']}] {item['text']} ({', '.join(item['sources'])})"
