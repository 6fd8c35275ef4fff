"""The format-specific step's output: what every reader yields and the assembly into spans reads.

Each reader yields Blocks: a paragraph-sized piece of text with its locator.
`new_section` marks a heading or page start, where a span must begin.
"""

import re
from dataclasses import dataclass

from llm_platform.prose import is_heading_line


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


# A plain-text heading's section number ("1. Peak readiness", "2.3) Scope"): one level deeper per part.
HEADING_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)[.)]\s+(?=[A-Z])")
MAX_HEADING_WORDS = 8


def heading_level(line: str) -> int | None:
    """The level of a plain-text heading line: a short line (llm_platform.prose.is_heading_line) at the margin
    that starts with a capital or a section number; 2, or one deeper for each part of its number ("2.3" is 3).
    None when the line is no heading."""
    number = HEADING_NUMBER.match(line)
    title = line[number.end() :] if number else line.strip()  # a numbered list's marker is a section's number
    # A field ("Attendees: Grace Okafor, Dev Patel") is none, nor a table's header aligned in columns ("Rep
    # Quota ($)   Closed ($)").
    if line[:1].isspace() or not is_heading_line(title) or len(title.split()) > MAX_HEADING_WORDS:
        return None
    if ": " in title or "  " in title:
        return None
    if number:
        return 2 + number.group(1).count(".")
    return 2 if title[0].isupper() else None
