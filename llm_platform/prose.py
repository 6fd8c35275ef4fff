"""Is a line prose? A test of its words alone (no stemmer, no Django): the extraction child uses it too."""

import re

# Prose is mostly lower-case words (the first may be capitalised): at least PROSE_MIN_WORDS of them,
# and PROSE_SHARE of the words that have letters (figures and symbols aside: "Losses fell from 24 %
# to 19 % in 2022." is prose). A synopsis ("grep [OPTION...] -e PATTERNS..."), an option tag, a
# running header ("GREP(1) User Commands GREP(1)"), a title or a URL alone is not.
PROSE_MIN_WORDS = 2
PROSE_SHARE = 0.5
_PROSE_WORD = re.compile(r"[(“\"'‘]*[a-z][a-z'’-]*[a-z][)”\"'’.,;:!?]*")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_URL = re.compile(r"<?(?:https?://|www\.)\S+|\S+@\S+\.\w+")
# Markdown's table row ("| a | b |"), a Word or HTML table's cells as extracted ("a | b | c").
_TABLE_CELLS = re.compile(r"^\s*\||^.*\S \| \S")
MAX_COLUMN_NAME_CHARS = 60
# A list item's marker (with a task list's box: "- [x] …") or a clause's number, or a transcript line's time
# ("[00:14] Maya Chen: …"): when in a call a thing was said is no time that a sentence states, and no part of
# what it says. A marker alone on its line (a PDF's list, whose markers PDFium reads after the items: "•", "1.")
# is joined to no line.
LIST_MARK = re.compile(
    r"^\s*(?:(?:[-*+•▪◦>]|\(?\d{1,3}[.)]|\(?[a-z][.)])(?:\s+\[[ xX]\])?|\[\d{1,2}(?::\d\d){1,2}\])(?:\s+|$)"
    # A contract's or a standard's numbered clause ("2.3 Budget changes …"): its number and a capital after it.
    r"|^\s*\d{1,3}(?:\.\d{1,3})+\.?\s+(?=[A-Z])"
)
WORD_CHARS = re.compile(r"\w+")
HEADING_MAX_WORDS = 12
# Numbers written as words, with their values: zero to twenty, and the tens to ninety. Here, with no stemmer,
# for the extraction child (a hyphen after a number's name at a line's end is a compound's).
NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {word: 10 * tens for tens, word in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)}


MAX_SPEAKER_NAME_WORDS = 3


def speaker(line: str) -> str:
    """Who speaks on `line` of call notes or a transcript: a name of one to MAX_SPEAKER_NAME_WORDS capitalised
    words before a colon ("Lucy Tran: …"), after the line's time mark if it has one ("[00:01:10] Lena Ortiz:
    …"); "" for any other line."""
    line = line.strip()
    if line.startswith("["):
        mark, closed, rest = line[1:].partition("]")
        if closed and mark.replace(":", "").replace(".", "").isdigit():
            line = rest.strip()
    name, colon, said = line.partition(": ")
    words = name.split()
    named = 0 < len(words) <= MAX_SPEAKER_NAME_WORDS and all(word[:1].isupper() for word in words)
    return name if colon and said.strip() and named else ""


def csv_row_fields(line: str) -> list[tuple[str, str]]:
    """The (column, value) fields of a CSV row as the extractor writes it ("district: Harbour; year: 2023;
    bursts: 63"); [] for any other line (a row has two fields at least, a column's name no ":" or ";")."""
    if "\n" in line:
        return []
    fields = [part.partition(": ") for part in line.split("; ")]
    if len(fields) < 2 or not all(
        separator and 0 < len(name) <= MAX_COLUMN_NAME_CHARS and ":" not in name and ";" not in value
        for name, separator, value in fields
    ):
        return []
    return [(name, value) for name, _separator, value in fields]


# The fields a mail program shows above a message; the rest of an e-mail's header is its transport's
# (Received, Message-ID, MIME-Version, DKIM-Signature, …). The text reader writes them as one record.
MAIL_FIELDS = ("From", "To", "Cc", "Date", "Subject")


def is_mail_header(line: str) -> bool:
    """Whether a record is an e-mail's header ("From: Priya …; To: lab-all@…; Date: Mon, 19 Oct 2026 …"): who
    wrote to whom and when, the envelope of what the message states."""
    fields = csv_row_fields(line)
    return bool(fields) and all(name in MAIL_FIELDS for name, _value in fields)


# How a letter or an e-mail greets the one it is written to ("Dear Ms Harper,", "Hi Sam,").
SALUTATIONS = ("Dear", "Hi", "Hello")
MAX_ADDRESSEE_WORDS = 4


def salutation(paragraph: str) -> str:
    """The greeting a paragraph is, without its comma ("Dear Ms Harper"): the letter's "you" is the one it
    names. "" for another paragraph (not "Dear all, the meeting moves to Friday.")."""
    line = paragraph.strip()
    words = line.rstrip(",").split()
    greets = len(words) >= 2 and words[0] in SALUTATIONS and line.endswith(",") and "\n" not in line
    return line.rstrip(",") if greets and len(words) - 1 <= MAX_ADDRESSEE_WORDS else ""


def is_table_row(line: str) -> bool:
    """A row of a table, never prose (nor a wrapped line of it: llm_platform.terms.split_sentences)."""
    return bool(_TABLE_CELLS.match(line) or csv_row_fields(line))


def is_prose(sentence: str) -> bool:
    if is_table_row(sentence):
        return False
    words = [word for word in _URL.sub(" ", sentence).split() if _HAS_LETTER.search(word)]
    if words:
        words[0] = words[0][:1].lower() + words[0][1:]
    prose = sum(1 for word in words if _PROSE_WORD.fullmatch(word))
    return prose >= PROSE_MIN_WORDS and prose >= PROSE_SHARE * len(words)


def code_fence(line: str) -> str:
    """The fence a Markdown line opens or closes a code block with ("```", "~~~"; indented three spaces at
    most), or "". The extraction child reads code blocks with it, and statements leave them out."""
    indent = len(line) - len(line.lstrip(" "))
    marker = line.lstrip(" ")[:3]
    return marker if indent <= 3 and marker in ("```", "~~~") else ""


def closes_fence(line: str, fence: str) -> bool:
    """Whether `line` closes the code block `fence` opened: that fence's characters alone."""
    return code_fence(line) == fence and not line.strip().strip(fence[0])


def is_heading_line(line: str) -> bool:
    """A line that could head a section: a few words not closed by punctuation, no list item or table row."""
    heading = line.strip()
    return bool(
        heading
        and heading[-1] not in ".!?:;,\"'”’)]"
        and len(WORD_CHARS.findall(heading)) <= HEADING_MAX_WORDS
        and not LIST_MARK.match(heading)
        and not is_table_row(heading)
    )
