"""What preparing a chat turn (services) and answering it offline (offline/) agree on about its text.

A bare follow-up ("and in 2023?", "what about the roof?", "how much does it cost?") borrows the
previous user message's terms: the library is searched for both, and the offline answer reads
both (`is_bare_follow_up`). Two copies of a sentence (a digest's item line, the same sentence in a report) are
one when their `sentence_key`s are equal: a suggestion, an answer's sentence, is told once.
"""

import re

from llm_platform.sourcerefs import SPAN
from llm_platform.terms import AUXILIARIES, WORD, without_relative_time

FOLLOW_UP_TERMS = 2  # a message with fewer terms than this may borrow the previous user message's
# The pronouns that point back to what was said before: one of English grammar's closed classes, as
# llm_platform.terms.AUXILIARIES is, not a list of questions.
_POINTING_BACK = frozenset("it its they them their this that these those he him his she her".split())

_MARKS = re.compile(rf"^\[[a-z]+\]\s*|\s*\([^()]*::{SPAN}[^()]*\)")  # "[fact] " before an item, "(a.txt::S4)"


def is_bare_follow_up(message: str, term_count: int) -> bool:
    """Whether a message of `term_count` terms goes on from the previous one: it has fewer than FOLLOW_UP_TERMS
    and either no verb of its own ("And in 2023?", "What about the roof?") or a pronoun pointing back ("How
    much does it cost?"). "Who is doing the roof?" is a question whole: it borrows nothing, so the previous
    question's "facade" is not asked about again, nor is "Who is on call this week?", whose "this" points to
    now."""
    if term_count >= FOLLOW_UP_TERMS:
        return False
    words = {word.lower() for word in WORD.findall(without_relative_time(message))}
    return not words & AUXILIARIES or bool(words & _POINTING_BACK)


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
