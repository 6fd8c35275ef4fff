"""The citation markup, written once: a SourceRef chip that opens the exact version and span it was
made from, and text whose inline SourceRefs ("… (valves.md::S2)") become such chips.

A citation object ({sourceref, version, span, source_url, + origin_session for a library page}) comes
from context_app.provenance, the one resolver; a SourceRef without one is shown as plain text.
"""

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from llm_platform import sourcerefs

register = template.Library()

# The source page (context_app.pages.source_page), its URL written out: reverse() per chip is most of a chip's cost.
SOURCE_PAGE = "/sources/{version}/{span}/"
UNRESOLVED = "No stored text version for this source"


def links_by_ref(links: list[dict] | dict | None) -> dict[str, dict]:
    """{sourceref: citation object} of a list of citation objects (or of one); the first of a SourceRef wins."""
    found: dict[str, dict] = {}
    for link in [links] if isinstance(links, dict) else links or []:
        if isinstance(link, dict) and link.get("sourceref"):
            found.setdefault(link["sourceref"], link)
    return found


def origin_title(link: dict | None, session_id) -> str | None:
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
    """A SourceRef chip (SPEC §6.4): a link to the cited span of the exact version it was made from (the
    source page; in the page's source dialog when script runs, groundwork.js), or plain text when the
    SourceRef names no stored text version. Built here rather than from a template: a digest or a report
    shows hundreds, and a template render each made the session page several times slower."""
    openable = _openable(link)
    shown = label or ref or (link or {}).get("sourceref", "")
    if openable is None:
        return format_html(
            '<span class="source-ref unresolved" data-source="{}" title="{}">{}</span>', ref or shown, UNRESOLVED, shown
        )
    origin = origin_title(link, session_id)
    href = SOURCE_PAGE.format(version=openable["version"], span=openable["span"])
    return format_html(
        '<a class="source-link" href="{}{}" data-source="{}" data-version="{}" data-span="{}" title="Open {}{}">{}</a>',
        href,
        f"?session={session_id}" if session_id else "",
        openable["sourceref"],
        openable["version"],
        openable["span"],
        openable["sourceref"],
        f" (from session “{origin}”)" if origin else "",
        shown,
    )


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
    """{% text_with_citations text links %}: the text, escaped, its SourceRefs that `links` (citation objects,
    or one: a card's excerpt) resolves as chips."""
    resolved = links_by_ref(links)
    text = text or ""
    if not resolved:
        return conditional_escape(text)
    pattern = sourcerefs.written_refs(resolved)

    def chipped(piece: str) -> str:
        pieces, last = [], 0
        for match in pattern.finditer(piece):
            pieces.append(conditional_escape(piece[last : match.start()]))
            pieces.append(citation_chip(resolved[match.group(1)], context.get("session_id"), ref=match.group(1)))
            last = match.end()
        pieces.append(conditional_escape(piece[last:]))
        return "".join(pieces)

    # A group of chips goes without its brackets, after the mark that ends its clause ("… on 31 March (a.pdf::S3)."
    # → "… on 31 March. [chip]"): in the chat the chip wrapped, leaving "(" and ")." on lines of their own.
    pieces, last = [], 0
    for group in sourcerefs.REF_GROUP.finditer(text):
        if not pattern.sub("", group.group(1)).strip(" ,;"):
            after = text[group.end() : group.end() + 1]
            mark = after if after and after in ".,;:!?" else ""
            pieces += [chipped(text[last : group.start()].rstrip() + mark + " "), chipped(group.group(1))]
            last = group.end() + len(mark)
    pieces.append(chipped(text[last:]))
    return mark_safe("".join(pieces))
