"""What preparing a chat turn (services) and answering it offline (offline/) agree on about its text.

A bare follow-up ("and in 2023?") has fewer than FOLLOW_UP_TERMS terms and borrows the
previous user message's: the library is searched for both, and the offline answer reads
both. Two copies of a sentence (a digest's item line, the same sentence in a report) are
one when their `sentence_key`s are equal: a suggestion, an answer's sentence, is told once.
"""

import re

from llm_platform.sourcerefs import SPAN

FOLLOW_UP_TERMS = 2  # a message with fewer terms than this borrows the previous user message's

_MARKS = re.compile(rf"^\[[a-z]+\]\s*|\s*\([^()]*::{SPAN}[^()]*\)")  # "[fact] " before an item, "(a.txt::S4)"


def sentence_key(text: str) -> str:
    """A sentence without its digest marker ("[fact] "), SourceRefs, case or end punctuation: what makes
    two copies the same."""
    return plain_sentence(text).casefold().strip(" .")


def plain_sentence(text: str) -> str:
    """A sentence without its digest marker and SourceRefs: "[fact] Costs rose 9 % (a.txt::S4)." → "Costs rose 9 %."."""
    return _MARKS.sub("", text).strip()


def item_text(line: str) -> str:
    """A line without the digest marker it may start with ("[fact] "), its SourceRefs kept."""
    line = line.strip()
    marker = _MARKS.match(line) if line.startswith("[") else None
    return line[marker.end() :] if marker else line
