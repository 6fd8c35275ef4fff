"""What a chat message asks about: its terms, without small talk or words about the conversation.

A message made only of courtesy and stop words is small talk. Words about the
conversation or the session's artifacts ("summarise", "report", "file", "pdf") never
count as terms, and the verbs that frame a question ("what happens to …") count as
"what". The document words and file names a message uses name the file a need asks
for (needs.py).
"""

from __future__ import annotations

import re

from llm_platform.terms import OVERLAP_STOP_WORDS, QUESTION_WORDS, WORD, comparison_key, content_terms, question_terms

# A message made only of these (and stop words) is small talk: "hi", "thanks a lot", "ok, great".
COURTESY_WORDS = frozenset(
    """hi hello hey hiya howdy greetings thanks thank thx ty cheers ok okay alright great good nice cool perfect
    fine sure yes yeah yep no nope bye goodbye morning afternoon evening please welcome got lot""".split()
)
# Words about the conversation or the session's artifacts, not about the topic asked: they never count as terms.
# Nor do the light verbs that frame a question ("Who was on call when checkout went down?", "What score did
# Ferrocast get?", "Which suppliers don't need their parts sampled?", "must the board make a call"): the rarest
# words of such a question, never said by the files, they outweighed the ones the answer shares. "go" and
# "going" (whose stem is "go") stay: "Which services are written in Go?".
_TALK_WORDS = """hi hello hey thanks thank thx please ok okay say says said tell told explain describe show give
    mention mentions mentioned summarise summarize summary session sessions digest digests report reports finding
    findings note notes source sources goes gone went get gets got getting need needs make makes""".split()
DOCUMENT_WORD = re.compile(r"\b(spreadsheet|attachment|attached|file|document)s?\b", re.I)
DOCUMENT_NOUNS = ("spreadsheet", "document", "file", "attachment")  # the most specific the message uses names it
_EXTENSIONS = ("pdf", "docx", "xlsx", "csv", "md", "txt")
FILENAME = re.compile(r"(?<![\w.-])([\w][\w.-]*\.(?:" + "|".join(_EXTENSIONS) + r"))\b", re.I)
IGNORED_TERMS = frozenset(
    content_terms(" ".join([*_TALK_WORDS, "spreadsheet", "attachment", "attached", "file", "document", *_EXTENSIONS]))
)


def is_small_talk(message: str) -> bool:
    words = [word.lower() for word in WORD.findall(message)]
    return all(word in COURTESY_WORDS or word in OVERLAP_STOP_WORDS or word in QUESTION_WORDS for word in words)


def message_terms(message: str) -> list[str]:
    return [term for term in question_terms(message) if term not in IGNORED_TERMS]


def previous_user_message(history: object, message: str) -> str:
    """The last user message of `history` before this one (the current message, if repeated there, skipped)."""
    turns = [t for t in (history if isinstance(history, list) else []) if isinstance(t, dict)]
    texts = [t["content"].strip() for t in turns if t.get("role") == "user" and isinstance(t.get("content"), str)]
    texts = [text for text in texts if text]
    if texts and comparison_key(texts[-1]) == comparison_key(message):
        texts.pop()
    return texts[-1] if texts else ""
