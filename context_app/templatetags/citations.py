"""The citation markup, written once: a SourceRef chip that opens the exact version and span it was
made from, and text whose inline SourceRefs ("… (valves.md::S2)") become such chips.

A citation object ({sourceref, version, span, source_url, + origin_session for a library page}) comes
from context_app.provenance, the one resolver; a SourceRef without one is shown as plain text.
"""

import re

from django import template
from django.template.loader import render_to_string
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from llm_platform import sourcerefs

register = template.Library()

CHIP_TEMPLATE = "context/_citation.html#chip"


def links_by_ref(links: list[dict] | None) -> dict[str, dict]:
    """{sourceref: citation object} of a list of citation objects; the first of a SourceRef wins."""
    found: dict[str, dict] = {}
    for link in links or []:
        if isinstance(link, dict) and link.get("sourceref"):
            found.setdefault(link["sourceref"], link)
    return found


def _origin_title(link: dict | None, session_id) -> str | None:
    """The other session's title when the citation is a library page of another session."""
    origin = (link or {}).get("origin_session") or {}
    if origin.get("id") and str(origin["id"]) != str(session_id):
        return origin.get("title") or "untitled"
    return None


def _openable(link: dict | None) -> dict | None:
    """The citation object with its version and span, or None when it names no stored text version."""
    if not link or not link.get("version") or not link.get("source_url"):
        return None
    span = link.get("span") or (sourcerefs.split_ref(link.get("sourceref")) or (None, None))[1]
    return {**link, "span": span} if span else None


def citation_chip(link: dict | None, session_id, *, ref: str = "", label: str = "") -> SafeString:
    context = {
        "link": _openable(link),
        "shown": label or ref or (link or {}).get("sourceref", ""),
        "ref": ref or (link or {}).get("sourceref", ""),
        "origin_title": _origin_title(link, session_id),
        "session_id": session_id,
    }
    return render_to_string(CHIP_TEMPLATE, context)


@register.simple_tag(takes_context=True)
def citation(context, link, ref="", label=""):
    """{% citation link %}: the chip of one citation object (the page's session from `session_id`)."""
    return citation_chip(link, context.get("session_id"), ref=ref, label=label)


@register.simple_tag(takes_context=True)
def digest_citation(context, links, ref):
    """{% digest_citation links ref %}: the chip of a digest's SourceRef, pinned by `links` ({SourceRef: citation})."""
    return citation_chip((links or {}).get(ref), context.get("session_id"), ref=ref)


@register.simple_tag(takes_context=True)
def text_with_citations(context, text, links):
    """{% text_with_citations text links %}: the text, escaped, its SourceRefs that `links` resolves as chips."""
    resolved = links_by_ref(links)
    text = text or ""
    if not resolved:
        return conditional_escape(text)
    # Longest first, so "a.md::S12" is never read as "a.md::S1" followed by "2".
    refs = sorted(resolved, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, refs)) + r")(?![0-9])")
    pieces, last = [], 0
    for match in pattern.finditer(text):
        pieces.append(conditional_escape(text[last : match.start()]))
        pieces.append(citation_chip(resolved[match.group(1)], context.get("session_id"), ref=match.group(1)))
        last = match.end()
    pieces.append(conditional_escape(text[last:]))
    return mark_safe("".join(pieces))
