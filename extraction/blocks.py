"""The format-specific step's output: what every reader yields and the assembly into spans reads.

Each reader yields Blocks: a paragraph-sized piece of text with its locator.
`new_section` marks a heading or page start, where a span must begin.
"""

import re
from dataclasses import dataclass


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
