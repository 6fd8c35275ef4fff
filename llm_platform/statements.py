"""What a statement is: a sentence that states something, never a heading, a label or a question.

The offline research (NODE_FINDINGS, REPORT) and the chat's card suggestions take only statements;
`ended` closes a sentence the report's summary or a sub-question's rationale quotes.
"""

from __future__ import annotations

import re

from .json_records import said_records
from .prose import MAX_COLUMN_NAME_CHARS, closes_fence, code_fence, csv_row_fields, is_mail_header, is_prose
from .tables import said_as_records
from .terms import WORD, sentences_by_line

MIN_UNPUNCTUATED_WORDS = 12  # a line this long without a full stop is prose, not a heading
_STATEMENT_END = re.compile(r"[.!…][\"'”’)\]]*$")
_COPYRIGHT_NOTICE = re.compile(r"\bcopyright\b|©|\(c\) (?:19|20)\d\d", re.I)


def statements(text: str) -> list[str]:
    """The sentences of a text that state something (`is_statement`), in order; its licence text left out.
    A JSON file's object or list (a paragraph "label: {…}") states its records, said in words
    (llm_platform.json_records), not its lines of keys and braces; a table's rows state theirs under
    its header (llm_platform.tables)."""
    said: list[tuple[str, bool]] = []  # each sentence, and whether it states something on its own
    lines: list[str] = []  # each line of the text that could be a list's item, else ""
    title = text.lstrip().partition("\n")[0].strip()  # a text's first line is its title, no list's item
    for paragraph in said_as_records(without_code(without_licence(text))).split("\n\n"):
        records = said_records(paragraph)
        if records is not None:
            said.extend((record, True) for record in records)
            lines.append("")
            continue
        for line in sentences_by_line(paragraph):
            lines.append(line[0] if len(line) == 1 and line[0] != title and _list_item(line[0]) else "")
            said.extend((sentence, is_statement(sentence)) for sentence in line)
    # A list whose items end with no full stop (a slide's or a memo's bullets: "Hire two consultants by
    # January", "Launch fast-track onboarding") states them: two such lines or more in a row. One alone reads as
    # a heading, as "Costs and maintenance" does above its paragraph.
    neighbours = zip(lines, ["", *lines][: len(lines)], [*lines, ""][1:], strict=True)
    items = {line for line, before, after in neighbours if line and (before or after)}
    return [sentence if states else ended(sentence) for sentence, states in said if states or sentence in items]


MIN_LIST_ITEM_WORDS = 3


def _list_item(sentence: str) -> bool:
    """Whether a line could be an item of a list written without full stops: prose of MIN_LIST_ITEM_WORDS words
    or more that no punctuation ends."""
    return (
        sentence[-1:].isalnum()
        and len(WORD.findall(sentence)) >= MIN_LIST_ITEM_WORDS
        and is_prose(sentence)
        and not csv_row_fields(sentence)
    )


def without_licence(text: str) -> str:
    """`text` up to its first line with a copyright notice: from there to the end of its section runs the
    licence, not the document (a manual's COPYRIGHT section, a web page's footer after its last section)."""
    lines = text.split("\n")
    notice = next((number for number, line in enumerate(lines) if _COPYRIGHT_NOTICE.search(line)), len(lines))
    return "\n".join(lines[:notice])


def without_code(text: str) -> str:
    """`text` without its fenced code blocks ("```" or "~~~" to the same fence, as Markdown and a notebook's
    code cells write them): code states nothing in words, though "import pandas as pd" reads as prose."""
    kept: list[str] = []
    fence = ""
    for line in text.split("\n"):
        if fence:
            fence = "" if closes_fence(line, fence) else fence
        elif not (fence := code_fence(line)):
            kept.append(line)
    return "\n".join(kept)


# A reference list's heading, as papers and reports name it; the list under it (to the document's end, or to
# the next section) cites other works and states nothing of the document's own.
REFERENCE_HEADINGS = frozenset({"references", "bibliography", "works cited", "literature cited", "reference list"})


def references_start(text: str) -> int | None:
    """The index of the line of `text` that heads its reference list ("References", then "[1] Lambert, A. and
    Hirner, W. (2000). Losses from …"), or None: a heading of that name with a cited year in the lines under
    it."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        name = line.strip().lstrip("#").strip().rstrip(":").casefold()
        name = name.split(" ", 1)[1] if name[:1].isdigit() and " " in name else name  # "7. References"
        if name in REFERENCE_HEADINGS and any(map(_cites_a_year, " ".join(lines[number + 1 : number + 4]).split())):
            return number
    return None


def _cites_a_year(word: str) -> bool:
    """A reference's year as entries write it: "(2000)." or "2016."."""
    year = word.rstrip(".,").strip("()").rstrip("ab")
    return len(year) == 4 and year.isdigit() and year[:2] in ("19", "20") and word.endswith((")", ".", ").", "),"))


def is_statement(text: str) -> bool:
    """A sentence that states something: it ends as a sentence does (".", "!", "…"), runs long enough
    to be prose whose full stop was lost, or gives a label's figure (`_labelled_value`); and it is prose
    (llm_platform.prose). A table's row ("month: 2024-03; missed: 93", as a CSV's spans hold them)
    states its values. A heading ("Costs and maintenance"), a label ("Corrosion"), a title in capitals,
    a synopsis ("grep [OPTION...] -e PATTERNS...") or a question is not one."""
    text = text.strip()
    if not text or text.endswith("?"):
        return False
    if csv_row_fields(text):  # a CSV's row states its values; an e-mail's header, who wrote to whom, does not
        return not is_mail_header(text)
    if labelled_people(text):
        return True
    if not is_prose(text) or _names_only(text):
        return False
    return (
        bool(_STATEMENT_END.search(text)) or len(WORD.findall(text)) >= MIN_UNPUNCTUATED_WORDS or _labelled_value(text)
    )


def _names_only(text: str) -> bool:
    """A list of single words ("id, created, customer, priority, status": a table's header) names things and
    states nothing."""
    parts = [part.strip() for part in text.rstrip(".").split(",")]
    return len(parts) >= 3 and all(part and " " not in part for part in parts)


def _labelled_value(text: str) -> bool:
    """A label and the figure or date it has ("Every school equipped: 30 June 2027", a plan's milestone), as a
    CSV's row states a value: a heading names a subject and holds no value after a colon."""
    label, colon, value = text.partition(": ")
    return bool(colon and label[:1].isalpha() and len(label) <= MAX_COLUMN_NAME_CHARS) and any(
        c.isdigit() for c in value
    )


def labelled_people(text: str) -> bool:
    """A role and the people who hold it ("Author: Lena Ortiz.", "Reviewers: Priya Nair, Tom Becker"), as a
    document's byline or a plan's owners say them: names are no prose, yet the line states who. Each name is
    two or three capitalised words."""
    label, colon, value = text.rstrip(".").partition(": ")
    if not (colon and label.isalpha() and label[:1].isupper() and len(label) <= MAX_COLUMN_NAME_CHARS):
        return False
    names = [name.split() for part in value.split(",") for name in part.split(" and ")]
    return all(2 <= len(name) <= 3 and all(word[:1].isupper() and word.isalpha() for word in name) for name in names)


def ended(text: str) -> str:
    """`text` ending with sentence punctuation (a full stop added when it has none)."""
    text = text.strip()
    return text if not text or text[-1] in ".!?…" else f"{text}."
