"""The format-specific step's output: what every reader yields and the assembly into spans reads.

Each reader yields Blocks: a paragraph-sized piece of text with its locator.
`new_section` marks a heading or page start, where a span must begin.
"""

import re
from dataclasses import dataclass

from llm_platform.prose import LIST_MARK, is_heading_line


@dataclass
class Block:
    text: str
    locator: str
    new_section: bool = False
    read_by: str = ""  # "ocr": read from the page's image by Tesseract (extraction.ocr)
    confidence: int | None = None  # then: the page's mean word confidence, 0–100


SECTION_PATH_SEPARATOR = " > "  # between the headings of a section's path ("Methods > Sampling")


def _paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]


def _path(headings: list[tuple[int, str]]) -> str:
    return SECTION_PATH_SEPARATOR.join(title for _level, title in headings)


MAX_HEADING_WORDS = 8


def section_number(line: str) -> str:
    """The section number a line opens with, read as a numbered list's marker is (llm_platform.prose.LIST_MARK):
    "1." of "1. Peak readiness", "2.3" of "2.3 Scope"; "" for another line."""
    mark = LIST_MARK.match(line)
    return mark.group().strip() if mark and mark.group().lstrip(" (")[:1].isdigit() else ""


def opening_heading(text: str) -> str:
    """The heading a span or paragraph of a page opens with (`heading_level`: "2. Receiving", "Root cause"),
    with text below it; "" when it opens with none."""
    first, _, rest = text.partition("\n")
    return first.strip() if heading_level(first) is not None and rest.strip() else ""


def is_numbered_heading(line: str) -> bool:
    """Whether the line is a heading with a section number ("2. Receiving"), not a numbered list's long item."""
    return bool(section_number(line)) and heading_level(line) is not None


def heading_level(line: str) -> int | None:
    """The level of a heading line of plain text or a PDF's page: a short line (llm_platform.prose.is_heading_line)
    at the margin whose words start with a capital, after a section number or not; 2, or one deeper for each
    part of its number ("2.3" is 3). None when the line is no heading."""
    number = section_number(line)
    title = line.strip()[len(number) :].strip()  # a numbered list's marker is a section's number
    if line[:1].isspace() or not title[:1].isupper() or not is_heading_line(title):
        return None
    # A field ("Attendees: Grace Okafor, Dev Patel") is none, nor a table's header aligned in columns ("Rep
    # Quota ($)   Closed ($)").
    if len(title.split()) > MAX_HEADING_WORDS or ": " in title or "  " in title:
        return None
    return section_level(line)


def section_level(line: str) -> int:
    """The level of a heading line by its section number: 2, or one deeper for each part of it ("2.3" is 3)."""
    number = section_number(line)
    return 2 + number.strip("()").rstrip(".").count(".") if number else 2
