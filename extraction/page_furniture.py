"""A paged document's running headers and footers, found by their recurrence, and taken out.

A manual typeset for print repeats "GREP(1) User Commands GREP(1)" at the top of every page and
"GNU grep 3.8 2019-12-29 4" at its foot. Left in the text they glue themselves to the sentence
they interrupt, in search results, digests, findings and quoted spans alike. A line is furniture
when it stands among the first or last FURNITURE_EDGE_LINES lines of at least half of the pages
(and of FURNITURE_MIN_PAGES), the same but for its digits (page numbers, dates), and is not a
sentence: one a document repeats on every page ("This report was prepared for the board.") is still
the document's, while "Page 3 of 40" is a label, though its words read as prose.
"""

from __future__ import annotations

import re

from llm_platform.prose import is_prose

FURNITURE_EDGE_LINES = 3
FURNITURE_MIN_PAGES = 3
FURNITURE_PAGE_SHARE = 0.5
FURNITURE_MAX_CHARS = 120
_DIGITS = re.compile(r"\d+")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)]*$")


def without_page_furniture(pages: list[str]) -> list[str]:
    """The pages' texts without the lines that run at the top or foot of most of them."""
    if len(pages) == 2:
        return _two_pages_furniture(pages)
    if len(pages) < FURNITURE_MIN_PAGES:
        return pages
    edges = [_edge_keys(page) for page in pages]
    counts: dict[str, int] = {}
    for keys in edges:
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    needed = max(FURNITURE_MIN_PAGES, FURNITURE_PAGE_SHARE * len(pages))
    furniture = {key for key, count in counts.items() if count >= needed}
    if not furniture:
        return pages
    return [_without(page, furniture) for page in pages]


def _two_pages_furniture(pages: list[str]) -> list[str]:
    """Two pages: a line at both pages' edges is furniture when it counts them ("Grant Agreement HF-2026-114
    — Page 1 of 2", then "Page 2 of 2"): the same line but for its figures, its figures not the same; or when
    both pages close with it (a running header PDFium reads after the page's text). A title both pages open
    with may be the document's own ("Harbour Water Audit" above each page's finding)."""
    first, second = ({_line_key(line): line for line in _edge_lines(page)} for page in pages)
    numbered = {key for key in first.keys() & second.keys() if first[key] != second[key] and not _is_sentence(key)}
    pages = [_without(page, numbered) for page in pages] if numbered else pages
    closing = {_line_key(_last_line(page)) for page in pages}
    if len(closing) == 1 and not _is_sentence(key := closing.pop()) and key:
        pages = [_without(page, {key}) for page in pages]
    return pages


def _edge_lines(page: str) -> list[str]:
    lines = [line for line in page.split("\n") if line.strip()]
    return lines[:FURNITURE_EDGE_LINES] + lines[-FURNITURE_EDGE_LINES:]


def _last_line(page: str) -> str:
    return next((line for line in reversed(page.split("\n")) if line.strip()), "")


def _line_key(line: str) -> str:
    return " ".join(_DIGITS.sub("#", line).split())


def _edge_keys(page: str) -> set[str]:
    keys = {_line_key(line) for line in _edge_lines(page)}  # a typeset header is padded with spaces: its words count
    return {key for key in keys if len(key) <= FURNITURE_MAX_CHARS and not _is_sentence(key)}


def _is_sentence(line: str) -> bool:
    return bool(_SENTENCE_END.search(line)) and is_prose(line)


def _without(page: str, furniture: set[str]) -> str:
    lines = page.split("\n")
    content = [i for i, line in enumerate(lines) if line.strip()]
    edge = set(content[:FURNITURE_EDGE_LINES] + content[-FURNITURE_EDGE_LINES:])
    return "\n".join(line for i, line in enumerate(lines) if i not in edge or _line_key(line) not in furniture)
