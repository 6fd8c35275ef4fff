"""What a question asks for, and whether a sentence holds it.

A duration for "how long", a count of households for "how many households", an
amount of money for "how much did it cost", a cause for "why", a date for "when
did", a name for "who". A question of another kind ("what", "which", "how do I")
names no answer type: its terms decide alone. The offline chat (conversation_app.offline.answering)
quotes only a sentence that holds it; the offline research reports put one first (research_app's
relevance).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .prose import csv_row_fields
from .sourcerefs import REF_GROUP
from .terms import (
    AUXILIARIES,
    NUMBER_WORDS,
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    STOP_WORDS,
    WORD,
    question_terms,
    stem,
    unit_names,
    word_term,
    written_numbers,
)

# A count in words: the numbers written as words, their scales, and the vague ones ("a few weeks").
_NUMBER_WORDS = (*NUMBER_WORDS, "hundred", "thousand", "million", "billion", "dozen", "few", "several")
_NUMBER = rf"(?:\d+(?:[.,]\d+)*|an?|{'|'.join(_NUMBER_WORDS)})"
_UNIT = r"(?:second|minute|hour|day|night|week|month|year|decade)s?"
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
FIGURE = re.compile(r"\d+(?:[.,]\d+)*")
_YEAR = r"\b(?:1[5-9]|20)\d\d\b"
# A release, after the word that dates it ("in 3.0.0"), or named ("version 2.4"); not an address ("10.0.0.1").
_RELEASE = (
    r"\b(?:in|with|since|from|until|before|after|by) v?\d+\.\d+\.\d+\b(?!\.\d)|\b(?:version|release) v?\d+(?:\.\d+)+\b"
)
_COUNT = rf"(?!{_YEAR}){_NUMBER}"  # a figure that is not a year (nor, see below, a percentage)
_MONEY_WORDS = r"(?:cost|costs|spend|spent|pay|paid|price|budget|worth|charge|fee)"
_CURRENCY = r"(?:[€$£]|(?:euros?|dollars?|pounds?|pence|cents?|eur|usd|gbp)\b)"
# An amount after its symbol or code ("$12", "USD 18,000", a field "contractor_usd 18000" or "price_gbp: 52.0", a
# table's column "Amount (£): 520,000"), before its currency, or in pence or cents by their sign ("38p per kWh").
_MONEY = (
    rf"(?:[€$£]|(?:\b|_)(?:eur|usd|gbp))\)?:?\s?\d"
    rf"|\b\d[\d.,]*\s*(?:k|m|bn|million|billion|thousand)?\s*{_CURRENCY}"
    r"|\b\d+(?:p\b|¢)"
)
_SHARE = r"\b\d[\d.,]*\s*(?:%|percent\b|per cent\b)"
# "since" before a time ("since April 2024", "since then") says when, not why.
_SINCE_A_TIME = rf"since(?!\s+(?:{_MONTH}|{_YEAR}|\d|then|last|early|late)\b)"
# ", so" joins a cause to its effect ("The page reached the wrong person, so nobody acted").
_CAUSE_WORDS = rf"(?:because|due to|owing to|{_SINCE_A_TIME}|so that|, so|in order to|as a result|caus\w*|reasons?)"
# The verbs that say something took place: "Why did it happen?" asks for a cause, "it" of "so it does not happen
# again" is an event (research_app's question clauses).
EVENT_VERBS = frozenset({"happen", "occur"})
# "Why did it happen?": its verb is answered by the cause, as "caused" of "what caused it".
WHY = re.compile(
    rf"^\W*why\b(?:.*\b(?P<ask_event>(?:{'|'.join(sorted(EVENT_VERBS))})(?:s|ed|red)?)\b)?"
    r"|\bwhat (?P<ask>caused|causes|made|makes|(?:was|is) the (?:cause|reason))\b",
    re.I,
)
# "Which option counts …": a command-line option, by its spelling ("-c", "--count"), where the texts hold such
# options at all (`holds_flags`): "which search option does the RFC recommend?" asks for one of its alternatives.
_FLAG = re.compile(r"(?<![\w-])--?[^\W\d_]")
_FLAG_TYPE = (re.compile(r"\b(?:which|what)(?: [\w-]+)? (?P<ask>option|flag|switch)\b", re.I), _FLAG)
# "When did/was/will/is …", "which months", "what year" ask for a date, or a software's release ("removed in
# 3.0.0", "since version 2.4"); "when does the else clause run" for a condition.
# So does "when does …" or "what time …" of a start or an end ("When does peak season end?", "What time do we
# stop accepting deliveries?"): its verb, and the "time" of "what time", are answered by the date or the clock
# time a sentence holds ("Peak runs from 16 November 2026 to 4 January 2027", "between 06:00 and 14:00").
# A plan or a rule dates what is to come by its offset from a start (the group "offset": "check-ins at 30, 60 and
# 90 days", "no earlier than week 8", "from the fourth day", "by the end of the first week"); what happened (the
# question's group "past"), by its date.
_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|last|next|end of the|start of the|\d+(?:st|nd|rd|th))"
_DATE_TYPE = (
    re.compile(
        r"\bwhen (?:(?P<past>did|was|were)|(?P<ahead>will|is|are))\b"
        r"|\b(?:which|what|in what) (?P<ask>months?|years?|date)\b"
        r"|\b(?:when|what (?P<ask_time>time))\b.*?\b(?P<ask_end>start|begin|end|finish|open|close|stop)(?:s|ed|ped)?\b",
        re.I,
    ),
    re.compile(
        rf"\b{_MONTH}\b|\b{_WEEKDAY}\b|{_YEAR}|(?i:{_RELEASE})|\b\d{{1,2}}:\d\d\b|(?i:\b\d{{1,2}}\s?[ap]\.?m\b)"
        rf"|(?i:(?P<offset>\b(?:at|after|before|within|by|from|on|in|until|than)(?: the)?(?: {_ORDINAL}){{0,2}}"
        rf"(?: {_NUMBER},?(?: (?:and|or) {_NUMBER})?)* {_UNIT}\b))"
    ),
)
# "How much did it cost", "what did it cost": an amount of money. The money word is answered by the amount too:
# "How much does Fastline charge …" by "… price_per_pallet_gbp: 52.0", which says no "charge". "How much is" a
# thing asks its price ("How much is the Pet Health Club for a cat each month?": "Cats: £13.50 a month").
_MONEY_TYPE = (
    re.compile(
        rf"\bhow (?P<ask>much)\b(?=.*\b(?P<ask_money>{_MONEY_WORDS})\b)"
        r"|\bhow (?P<ask_price>much) (?:is|are|was|were)\b"
        r"|\bwhat (?:did|does|do|will|would)\b.*\b(?P<ask_cost>cost|charge)\b",
        re.I,
    ),
    re.compile(_MONEY, re.I),
)
# What the question asks for, and what a sentence that answers it must hold. A question of another kind
# ("what", "which", "how do I") names no answer type: its terms decide alone. A pattern's "ask" group holds
# the words that name the type ("long" of "how long"): a sentence answers them by holding the type.
_ANSWER_TYPES = (
    # A length of time, or the two clock times that give an event's length ("between 09:12 and 10:47"); two
    # months give the period in which something happened ("between March 2021 and June 2022"), not a length.
    (
        re.compile(r"\bhow (?P<ask>long|much time)\b(?:.*\b(?P<ask_verb>last(?:s|ed)?|takes?|took)\b)?", re.I),
        re.compile(
            # a word may stand between the figure and its unit: "10 business days", "two full weeks"; a record's
            # field may name the unit of its figure ("max_booking_hours 8")
            rf"\b{_NUMBER} (?:[a-z]+ )?{_UNIT}\b|_{_UNIT}:? \d"
            rf"|\b(?:from|between) \d\d?[:.]\d\d\b.{{,40}}?\b(?:to|and|until) \d\d?[:.]\d\d",
            re.I,
        ),
    ),
    (
        re.compile(r"\bhow (?P<ask>often|frequently)\b", re.I),
        # … or an interval, also as a record's field ("calibration: interval_days 90")
        re.compile(
            r"\b(?:every|each|per|daily|weekly|monthly|yearly|annually|hourly|once|twice|times an?)\b"
            r"|(?:\b|_)(?:interval|frequency)(?:\b|_)",
            re.I,
        ),
    ),
    # An amount of money (_MONEY_TYPE); "how many", "how much": a count or quantity (not a year, nor an article:
    # "a" is no amount), a share too ("how much did losses fall": "18 percent"; "how many households" is a count
    # of them, see _HOW_MANY).
    # "By how much did it rise": a change, as a share ("6 percent"), an amount of money or a count; so is "how much
    # of" a whole, its part ("How much of the grant is paid on signing?": "50 percent on signing"), and "what
    # percentage of" it ("932 repairs (88.4%) were completed within target").
    (
        re.compile(
            r"\b(?:by how|how(?= much of\b)) (?P<ask>much)\b|\bwhat (?P<ask_share>percentage|proportion)\b", re.I
        ),
        re.compile(rf"{_SHARE}|{_MONEY}|\b{_COUNT}\b", re.I),
    ),
    _MONEY_TYPE,
    # … and "what is the … number": a number is its answer ("tel 01632 960 999" of "What is the phone number for
    # out-of-hours emergencies?", which needs no word "number" to be said).
    (
        re.compile(r"\bhow (?P<ask>many|much)\b|^\W*what(?:'s| is| was| are)\b.*\b(?P<ask_number>numbers?)\b", re.I),
        re.compile(rf"\b(?!an?\b){_COUNT}\b", re.I),
    ),
    # A cause, or a statement read under a heading that asks or tells why ("What made it last longer: The page …",
    # "Win/loss analysis > Why we lose: In each case the buyer had a hard deadline …"), wherever in its path; a
    # record's field names one too ("root_cause Door alarm had been muted …").
    (WHY, re.compile(rf"(?:\b|(?<=_)){_CAUSE_WORDS}\b|{WHY.pattern}|[>›]\s*why\b", re.I)),
    _DATE_TYPE,
    (re.compile(r"^\W*who\b|\b(?P<ask>name) of\b", re.I), None),  # a name: see _names
    _FLAG_TYPE,
)
_HOW_MANY = re.compile(r"\bhow many ([^\W\d_]+)", re.I)
# A count of what "how many" counts is a number: "a second engineer" counts nothing ("an hour" is a duration).
_COUNT_RE = re.compile(rf"\b(?!an?\b){_COUNT}\b(?!\s*(?:%|percent))", re.I)
# A column whose name says it holds a count ("attended_count", "number_of_visits", "total").
_COUNT_COLUMNS = frozenset(stem(word) for word in ("count", "number", "total"))
# Words between a count and what it counts ("42 gate valves"); also the words after "how many" that name it.
_COUNTED_WITHIN = 3
_CAPITALISED = re.compile(r"\b[A-Z][\w-]+")
_NOT_NAMES = re.compile(rf"^(?:{_MONTH}|{_WEEKDAY})$")


def _names(text: str, asked: set[str]) -> bool:
    """Whether `text` names someone the question does not: a capitalised word past its first word, or two
    capitalised words in a row, that is not one of the question's own terms."""
    words = [(m.start(), m.group()) for m in _CAPITALISED.finditer(text)]
    new = [
        (start, word)
        for start, word in words
        if stem(word.lower()) not in asked and word.lower() not in STOP_WORDS and not _NOT_NAMES.match(word)
    ]
    return any(start > 0 for start, _ in new) or len(new) >= 2


def question_names(question: str) -> set[str]:
    """The stems of the names a question gives ("HP", "North High"): its capitalised words past the first that
    are no stop word (a follow-up's "And at night?" is read after the question before it). A name written with
    a hyphen or a digit ("KX-7", "S-009") gives its words as a sentence's terms hold them ("kx"; a single
    letter or digit is no term)."""
    return {
        word_term(part)
        for match in _CAPITALISED.finditer(question)
        if match.start() > 0
        and match.group().lower() not in OVERLAP_STOP_WORDS | QUESTION_WORDS
        and not _NOT_NAMES.match(match.group())
        for part in WORD.findall(match.group())
        if len(part) > 1
    }


def _asked(pattern: re.Pattern, question: str) -> re.Match | None:
    """`pattern`'s match in the question, unless the question word it holds comes after the question's first:
    "Which module measures how long snippets take?" asks for a module; its "how long" is part of what it
    asks about, not a duration it asks for. A question word after "and", "or" or a comma opens a question of
    its own: "When do the lift works start and how long will they last?" asks for a duration too."""
    match = pattern.search(question)
    if match is None:
        return None
    asking = [word.start() for word in WORD.finditer(question) if word.group().lower() in QUESTION_WORDS]
    own = [start for start in asking if match.start() <= start < match.end()]
    if not own or own[0] == asking[0]:
        return match
    before = question[: own[0]].rstrip()
    opens_own = before.endswith((",", ";")) or before.rpartition(" ")[2].lower() in ("and", "or")
    return match if opens_own else None


def holds_flags(texts: Iterable[str]) -> bool:
    """Whether any of `texts` spells a command-line option ("-c, --count"): only then does "which … option" ask
    for one (the `flags` argument below)."""
    return any(_FLAG.search(text) for text in texts)


def _types(flags: bool) -> tuple:
    return _ANSWER_TYPES if flags else tuple(kind for kind in _ANSWER_TYPES if kind is not _FLAG_TYPE)


def _first_asked(question: str, flags: bool) -> tuple[tuple, re.Match] | tuple[None, None]:
    """The first kind of answer the question asks for (of _ANSWER_TYPES: what asks for it, what holds it) and its
    match in the question; (None, None) when it asks for none. That kind is the one a sentence must hold."""
    for kind in _types(flags):
        if match := _asked(kind[0], question):
            return kind, match
    return None, None


def can_answer(question: str, text: str) -> bool:
    """Whether `text` holds what the question asks for (any text, for a question that asks for no kind)."""
    return not asks_answer_type(question) or holds_answer_type(question, text, set(question_terms(question)))


def asks_answer_type(question: str) -> bool:
    """Whether the question asks for a kind of answer (a cause, a date, an amount, …), not for its terms alone."""
    return bool(_asked(_HOW_MANY, question)) or any(_asked(asks, question) for asks, _holds in _ANSWER_TYPES)


def asks_for_money(question: str, *, flags: bool = True) -> bool:
    """Whether the kind of answer the question asks for first is an amount of money ("How much is the grant
    worth?"), which a sentence holds as a value of its own: "£2.4 million" answers it where a year or a count may
    be any figure."""
    return _first_asked(question, flags)[0] is _MONEY_TYPE


def answer_type_terms(question: str, *, flags: bool = True) -> set[str]:
    """The stems of the words that name what the question asks for ("long" and "last" of "how long did it
    last", "cause" of "what was the cause"): a sentence answers them by holding that kind of answer, not by
    repeating them."""
    # The first kind the question asks for is the one a sentence must hold (holds_answer_type): "By how much did
    # the water price rise?" asks for a change, and its "price" stays a term a sentence must say.
    _kind, match = _first_asked(question, flags)
    return {
        stem(word.lower())
        for name, words in (match.groupdict().items() if match else ())
        if name.startswith("ask") and words  # "ask_verb": "last" of "how long did it last"
        for word in WORD.findall(words)
    }


# What joins a range's two figures ("from 10% to 25%", "10–25", "between 50 and 500"), a unit or sign aside.
_RANGE_WORDS = frozenset({"to", "-", "–", "—", "and", "through"})


# The terms of the numbers written as words (written_numbers: not "one"): figures, not words a sentence must say.
_NUMBER_TERMS = frozenset(stem(word) for word in NUMBER_WORDS if word != "one")


def written_figures(text: str) -> set[str]:
    """The figures `text` writes, in digits or in words ("every six months" → {"6"})."""
    return set(FIGURE.findall(text)) | {str(number) for number in written_numbers(text)}


def is_figure_term(term: str) -> bool:
    """Whether a term is a figure ("2026", "six"), which a sentence holds as a figure (`holds_figures`)."""
    return term.isdigit() or term in _NUMBER_TERMS


def held_figures(text: str) -> set[str]:
    """The figures `text` writes (`written_figures`), also without their leading zeros: the "03" of a date
    "2026-12-03" is the "3" of "3 December"."""
    written = written_figures(text)
    return written | {figure.lstrip("0") for figure in written}


def is_year(term: str) -> bool:
    """Whether a term is a year ("2023"), which dates what a question asks about."""
    return re.fullmatch(_YEAR, term) is not None


def case_figures(question: str) -> dict[str, str]:
    """The figures a yes/no question gives with their unit, as {figure: the unit's stem} ("Is a bus that is 4
    minutes late counted as on time?" → {"4": "minut"}; "a 20-minute break" too): it asks whether a case meets a
    rule, and the rule states its own figure of that unit ("up to 5 minutes late"). {} for another question."""
    words = WORD.findall(question)
    if not words or words[0].lower() not in AUXILIARIES:
        return {}
    return _figure_units(question)


def _figure_units(text: str) -> dict[str, str]:
    """Each figure of `text` that a unit's word follows ("4 minutes", "2 mm", "20-minute"), with the unit's stem;
    not an amount of money ("£50 notes" names a note)."""
    units = {}
    for figure in FIGURE.finditer(text):
        unit = WORD.search(text, figure.end())
        if (
            unit
            and text[figure.end() : unit.start()] in ("", " ", "-")
            and not unit.group()[0].isdigit()
            and not re.match(_CURRENCY, text[figure.start() - 1 : figure.start()])
        ):
            units[figure.group()] = stem(unit.group().lower())
    return units


def holds_figures(figures: set[str], text: str, cases: dict[str, str] | None = None) -> bool:
    """Whether `text` holds each of a question's `figures` (`written_figures`), in digits or in words, or a range
    that holds it: "Discounts from 10% to 25% need approval from the sales director" answers "Who approves a 20%
    discount?"; "interval_months 6" answers "Which gauges are calibrated every six months?". A figure written
    with leading zeros holds the one without: the "03" of a date "2026-12-03" is the "3" of "3 December". A case's
    figure (`case_figures`) is held by any figure of its unit: "A bus up to 5 minutes late counts as on time"
    answers "Is a bus 4 minutes late on time?", and "no more than 9 hours a day" whether 10 hours are allowed."""
    missing = figures - held_figures(text)
    if missing and cases:
        units = set(_figure_units(text).values())
        missing = {figure for figure in missing if cases.get(figure) not in units}
    if not missing:
        return True
    found = list(FIGURE.finditer(text))
    ranges = [
        (_value(low.group()), _value(high.group()))
        for low, high in zip(found, found[1:], strict=False)
        if text[low.end() : high.start()].strip(" %$€£").lower() in _RANGE_WORDS
        # not two parts of a date or a code ("2026-07-14": 10 lies between its 07 and 14)
        and text[low.start() - 1 : low.start()] != "-"
        and text[high.end() : high.end() + 1] != "-"
    ]
    return all(any(low <= _value(figure) <= high for low, high in ranges) for figure in missing)


def _value(figure: str) -> float:
    """A figure as a number ("1,500" → 1500, "2.5" → 2.5); a decimal comma is read as a thousands separator."""
    try:
        return float(figure.replace(",", ""))
    except ValueError:
        return float("nan")


def holds_answer_type(question: str, text: str, asked: set[str], *, flags: bool = True) -> bool:
    """Whether `text` holds what `question` asks for (see the module's docstring); its SourceRefs hold nothing:
    a source named "board-update-2026.pdf" dates no sentence of it."""
    text = REF_GROUP.sub("", text)
    counted = _asked(_HOW_MANY, question)
    if counted:  # "how many households": a count of households ("230 households"), not of something else
        nouns = _counted(question[counted.start(1) :])
        # Within its clause or field: in "Line: 5030; Category: Workbooks …" 5030 counts no workbooks.
        return any(
            # … or a record's field and its count ("laptops.faulty 95"); a unit by its symbol ("odometer_km 702115")
            nouns & _stems(WORD.findall(_clause_after(text, match))[:_COUNTED_WITHIN])
            or nouns & _stems(WORD.findall(_clause_before(text, match))[-1:])
            for match in _COUNT_RE.finditer(text)
        ) or any(_row_counts(line, nouns, asked) for line in text.splitlines())
    kind, match = _first_asked(question, flags)
    if kind is None:
        return True
    holds = kind[1]
    if kind is _DATE_TYPE:
        return any(_dates(said, offsets=not match.group("past")) for said in (text, _said(text)))
    return _names(text, asked) if holds is None else bool(holds.search(text) or holds.search(_said(text)))


def _row_counts(line: str, nouns: set[str], asked: set[str]) -> bool:
    """Whether a CSV row holds a count of what is asked, the row's full stop aside: in a column that names it
    ("missed: 93"), or in a column that says it holds a count of a row that names it ("appointment_type:
    Vaccination; … attended_count: 190" for "how many vaccination appointments")."""
    columns = [
        _stems(WORD.findall(column)) for column, value in csv_row_fields(line) if _COUNT_RE.fullmatch(value.strip(" ."))
    ]
    return any(column & asked for column in columns) or bool(
        nouns & _stems(WORD.findall(line)) and any(column & _COUNT_COLUMNS for column in columns)
    )


def _stems(words: list[str]) -> set[str]:
    """The stems of `words`, a unit's symbol also as its name's ("km" → "kilometr")."""
    stems = {stem(word.lower()) for word in words}
    return stems | unit_names(stems)


def _counted(words_after: str) -> set[str]:
    """The stems of what "how many" counts, from the words after it: the first, and, where an auxiliary ends
    the phrase, the last before it ("how many support tickets did …" is answered by "Support got 37 tickets").
    Without one the phrase runs into its verb: "how many households reported fewer …" counts households."""
    words = [word.lower() for word in WORD.findall(words_after)[: _COUNTED_WITHIN + 1]]
    ends = next((i for i, word in enumerate(words) if word in AUXILIARIES), None)
    return {stem(words[0]), stem(words[ends - 1])} if ends else {stem(words[0])}


def dating_heading(question: str, section: str) -> str:
    """The innermost heading of a section path that holds the date a "when" question asks for ("Changelog >
    [2.3.0] - 2026-09-30 > Changed" → "[2.3.0] - 2026-09-30"): a changelog's release, a diary's day or a
    minutes' meeting dates every statement under it, as what happened then: a question of what is to come
    ("When is Ferrocast's next audit?") is not answered by the date of the minutes that mention it. "" for
    another question."""
    asked = _asked(_DATE_TYPE[0], question)
    if not asked or asked.group("ahead"):
        return ""
    parts = [part.strip() for level in section.split(" › ") for part in level.split(" > ")]
    return next((part for part in reversed(parts) if holds_date(part)), "")


def holds_date(text: str) -> bool:
    """Whether `text` holds what a "when" question of the past asks for: a month, a year or a software's release."""
    return _dates(text, offsets=False)


def _dates(text: str, *, offsets: bool) -> bool:
    """Whether `text` holds a date, a clock time or, with `offsets`, an offset from a start ("at 30 days")."""
    return any(offsets or match.group("offset") is None for match in _DATE_TYPE[1].finditer(text))


def _clause_after(text: str, match: re.Match) -> str:
    return text[match.end() :].partition(";")[0]


def _clause_before(text: str, match: re.Match) -> str:
    return text[: match.start()].rpartition(";")[2]


def _said(text: str) -> str:
    """A record's fields said as a sentence says them, the value before its column ("hours_to_close: 51" →
    "51 hours to close", "visits_per_week: 3" → "3 visits per week"): a row holds a duration or a frequency
    as a sentence does."""
    return "\n".join(
        f"{value} {column.replace('_', ' ')}" for line in text.splitlines() for column, value in csv_row_fields(line)
    )
