"""Offline extractive digests: what the `offline` provider answers to Task A and Task B.

A documented product mode (it runs when no API key is configured), not a test
double. No model, no network, no randomness: the same envelope always gives the
same JSON, and that JSON passes the same schema and SourceRef checks a model's
output must pass.

Task A: the file's spans are split into sentences. Only statements count: page
furniture (a short line repeated across the file's spans: running headers and
footers), sentences that are not mostly prose (synopsis lines, bare option lists,
a URL alone) and licence text are passed over. Statements that carry figures,
dates, names, definitions, obligations, examples, reasoning or pointers become
facts of the matching kind (the cue lists below), and so does every other
statement, ranked after them; hedged ones become uncertainties, and each cites
the span it came from. Claims are the source's own
words without their Markdown markup, cut at a word boundary; nothing is
paraphrased, so nothing is made up. A conflict is between files: one file's
"however" is its author's reasoning, not a conflict.

A CSV file is read as a table instead (offline_csv): its shape and, per column,
its range and total or its distinct values, computed from the rows it cites. A
JSON file is read as values and records (offline_json).

Task B, the merge of digests, is offline_aggregate.py.
"""

import re
from collections import Counter

from llm_platform.answer_types import holds_date
from llm_platform.prose import MAX_COLUMN_NAME_CHARS, csv_row_fields, is_mail_header, is_prose, speaker
from llm_platform.statements import ended, labelled_people, references_start, without_code, without_licence
from llm_platform.tables import said_as_records
from llm_platform.terms import (
    WORD,
    comparison_key,
    content_terms,
    cut_text,
    heading_alone,
    split_leading_heading,
    split_sentences,
    written_numbers,
)

from .envelopes import parse_per_file_envelope
from .offline_csv import read_table, table_facts, table_summary
from .offline_json import json_facts, json_summary, read_json
from .validation import SCHEMA_VERSION

GENERATOR = "offline-extractive"
MAX_FACTS = 40
MAX_UNCERTAINTIES = 15
MAX_CLAIM_CHARS = 400
MAX_SUMMARY_SENTENCES = 3
SUMMARY_WINDOW = 12  # the summary is chosen among this many leading sentences
MAX_RECURRING_TERMS = 3  # a summary sentence's terms said elsewhere in the document that add to its worth

# --- cues ------------------------------------------------------------------------


def _cue(*alternatives: str, flags: int = re.I) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", flags)


# (kind, cue), checked in this order: the first match decides the kind. A disagreement
# the source notes is checked first because it matters most to a researcher: it is the
# author's analysis (Task B alone calls two files' different figures a conflict);
# definitions and rules come before examples and reasoning, the more specific reading.
_KIND_CUES: list[tuple[str, re.Pattern]] = [
    (
        "analysis",
        _cue(
            r"however",
            r"contrary to",
            r"contradict\w*",
            r"in contrast",
            r"disagree\w*",
            r"disputed?",
            r"inconsistent with",
            r"at odds with",
            r"conflicts? with",
        ),
    ),
    (
        "definition",
        _cue(
            r"(?:is|are) defined as",
            r"means",
            r"refers? to",
            r"(?:is|are) known as",
            r"stands for",
            r"denotes?",
            r"(?:is|are) called",
            r"(?:is|are) the term for",
        ),
    ),
    (
        "constraint",
        _cue(
            r"must",
            r"shall",
            r"required",
            r"requires?",
            r"mandatory",
            r"obliged",
            r"at most",
            r"at least",
            r"no more than",
            r"no later than",
            r"not exceed",
            r"deadline",
            r"limits?",
            r"limited to",
            r"capped",
            r"prohibit\w*",
            r"forbidden",
            r"not permitted",
        ),
    ),
    (
        "case",
        re.compile(
            r"\b(?:for example|for instance|e\.g\.|case study|in one case|in the case of|such as|an example)\b"
            # "In 2019, Lisbon halved …": a dated action of a named actor (capital, case-sensitive).
            r"|^In (?:19|20)\d\d, (?-i:[A-Z])",
            re.I,
        ),
    ),
    (
        "analysis",
        _cue(
            r"because",
            r"therefore",
            r"thus",
            r"hence",
            r"suggests?",
            r"indicates?",
            r"implies",
            r"due to",
            r"as a result",
            r"attributed to",
            r"led to",
            r"leads to",
            r"explains?",
            r"conclude[sd]?",
            r"consequently",
            r"driven by",
        ),
    ),
    (
        "lead",
        re.compile(
            r"\b(?:see (?:also |section |chapter |appendix |annex |table |figure |page |p\. |https?:|www\.|[A-Z])"
            r"|further (?:work|research|study|studies|analysis|details|information|reading)"
            r"|contact|next steps?|to be (?:published|confirmed|decided)|will (?:be )?publish\w*|follow[- ]up"
            r"|recommend\w*|should be (?:investigated|checked|reviewed|verified)|open question)\b"
            r"|https?://\S+|\bwww\.\S+",
            re.I,
        ),
    ),
]

# Hedges make a sentence an uncertainty. "may" only in lower case: "May 2021" is a month; "may not" states a rule
# ("Indirect costs may not exceed 12 percent"), as a contract or a policy does. "could not" says what was not
# possible ("38 machines could not run the software"), a fact.
_HEDGE = re.compile(
    r"\b(?:(?-i:may)(?! not\b)|might|could(?! not\b)|possibly|perhaps|unclear|uncertain\w*|unknown"
    r"|not (?:yet )?(?:known|clear|confirmed)|approximately|approx\.|about(?= \d)|around(?= \d)|roughly"
    r"|estimated?|preliminary|likely|unlikely"
    r"|appears? to|seems? to|not yet|tentative\w*|unconfirmed|unverified|reportedly|allegedly|to be confirmed"
    r"|remains? to be seen|open question)\b|\?",
    re.I,
)
# … and so does a "may" that a limit or a duty goes with ("Funds may only be spent in Eastport", "Nobody may work
# alone", "Only trained staff may fill dewars", "no more than 50 litres may be kept", "Each student may claim up to
# £1,500", "a driver must take a break of at least 45 minutes, which may be split into …").
RULE_LIMITS = ("only", "nobody", "no one", "no more than", "up to", "at most", "at least", "never", "must")


def _hedged(sentence: str) -> bool:
    hedges = {match.group().lower() for match in _HEDGE.finditer(sentence)}
    if hedges != {"may"}:
        return bool(hedges)
    words = f" {' '.join(WORD.findall(sentence.lower()))} "
    return not any(f" {limit} " in words for limit in RULE_LIMITS)


# Opinion and hearsay lower reliability without being an open question.
_OPINION = _cue(
    r"I think",
    r"I believe",
    r"we believe",
    r"we think",
    r"we feel",
    r"in (?:my|our) (?:view|opinion)",
    r"arguably",
    r"reportedly",
    r"allegedly",
    r"rumou?red",
    r"it is said",
    r"anecdotal\w*",
    r"probably",
)
YEAR = re.compile(r"\b(?:1[89]\d\d|20\d\d)\b")
_DATE = re.compile(
    r"\b(?:1[89]\d\d|20\d\d)\b|\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d"
    r"|\b\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b",
    re.I,
)
_MEASURE = re.compile(
    r"\d\s?(?:%|‰|°[CF]?|m²|m³)"  # symbol units: no word boundary after them
    r"|\d\s?(?:percent|per cent|pct|eur|usd|gbp|chf|kwh|mwh|gwh|kw|mw|gw|km|kg|mg|g|t|tons?|tonnes?|"
    r"m|cm|mm|m2|m3|l|litres?|liters?|ml|ha|ms|s|sec|seconds?|min|minutes?|h|hours?|days?|weeks?|"
    r"months?|years?|people|persons|users|customers|employees|households|sites|k|million|billion|thousand|bn|mn)\b"
    r"|(?:[€$£¥]|\b(?:eur|usd|gbp|chf))\s?\d",
    re.I,
)
# A capitalised word that is not the sentence's first word: a crude named-entity cue.
_NAMED = re.compile(r"(?<=[a-z0-9,;:] )(?:[A-Z][a-z]+|[A-Z]{2,})\b")


# --- statements ----------------------------------------------------------------------

# A line this short, no statement itself, that recurs (digits aside) in this many of a file's
# spans is page furniture (a running header or footer: "GREP(1) User Commands GREP(1)",
# "GNU grep 3.8 2019-12-29 4"): it states nothing, and left in it glues itself to the
# sentences around it.
FURNITURE_MAX_CHARS = 80
FURNITURE_MIN_SPANS = 3
_DIGITS = re.compile(r"\d+")


def _furniture_lines(spans: list[dict]) -> set[str]:
    """The keys of the short non-statement lines that recur in FURNITURE_MIN_SPANS or more spans."""
    seen_in: dict[str, int] = {}
    for span in spans:
        lines = {_line_key(line): line for line in span["text"].split("\n")}
        for key, line in lines.items():
            if key and len(key) <= FURNITURE_MAX_CHARS and not is_prose(line):
                seen_in[key] = seen_in.get(key, 0) + 1
    return {key for key, count in seen_in.items() if count >= FURNITURE_MIN_SPANS}


def _line_key(line: str) -> str:
    return comparison_key(_DIGITS.sub("#", line))


def _statement_text(span_text: str, furniture: set[str]) -> tuple[str, str]:
    """(heading, text): the span's heading, and its text without its page furniture, its heading and its
    licence text; a table's rows said as records under its header (llm_platform.tables). A span that is a
    heading and nothing else (a page's title above its first section: "Benefits: frequently asked
    questions") states nothing."""
    text = "\n".join(line for line in span_text.split("\n") if _line_key(line) not in furniture)
    if heading_alone(text):
        return "", ""
    heading, statements = split_leading_heading(without_code(without_licence(text)))
    return heading, said_as_records(_without_answered_questions(statements))


def _without_answered_questions(text: str) -> str:
    """`text` without the questions it answers, which are no open questions:
    - one that stands in a paragraph of its own above the paragraph answering it, as a FAQ's entries ("How long
      do we keep invoices?" / "Invoices are kept for ten years, …") head their answers, and the span's first
      such question does (split_leading_heading);
    - a speaker's, which the next speaker's turn answers ("Dana: … Was price a factor at all?" / "Lucy: A
      little. …").
    A list of questions a line announces stays: "Open questions:" heads the document's own as often as "Ask
    these questions:" heads the reader's."""
    paragraphs = text.split("\n\n")
    paragraphs = [
        paragraph
        for paragraph, after in zip(paragraphs, [*paragraphs[1:], ""], strict=True)
        if not (_asks_alone(paragraph) and after.strip() and not _asks_alone(after))
    ]
    lines = "\n\n".join(paragraphs).split("\n")
    kept: list[str] = []
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        if line.rstrip().endswith("?") and speaker(line) and speaker(after):
            # The turn's last sentence is its question: what it said before that stays.
            line = line[: max(line.rfind(". "), line.rfind("! ")) + 1]
            if not line:
                continue
        kept.append(line)
    return "\n".join(kept)


def _asks_alone(paragraph: str) -> bool:
    line = paragraph.strip()
    return bool(line) and "\n" not in line and line.endswith("?")


def _runs_on(sentence: str, next_span: str) -> bool:
    """Whether a span's last sentence goes on in the next span: it has no end, and the next opens in lower case
    ("… and the applicable collective" / "agreement. …", over a PDF's page break)."""
    return sentence.rstrip("\"'”’)]")[-1:] not in (".", "!", "?", "…") and next_span.lstrip()[:1].islower()


def _claims_nothing(sentence: str) -> bool:
    """A question, or a line that announces what follows ("On 20 Nov, Lena wrote:", "The steps are:"): it says
    nothing until the next line does. Neither a fact nor a summary's sentence."""
    return sentence.rstrip().endswith(("?", ":"))


def _kind(sentence: str) -> str | None:
    for kind, cue in _KIND_CUES:
        if cue.search(sentence):
            return kind
    if _DIGITS.search(sentence) or written_numbers(sentence) or _DATE.search(sentence) or _NAMED.search(sentence):
        return "fact"
    return None


def _reliability(sentence: str, kind: str, hedged: bool) -> tuple[str, str]:
    if hedged:
        return "low", "offline extractive: hedged wording"
    if _OPINION.search(sentence):
        return "low", "offline extractive: opinion or hearsay"
    if kind in ("fact", "case") and _MEASURE.search(sentence) and _DATE.search(sentence):
        return "high", "offline extractive: contains a measured, dated figure"
    if kind == "fact" and _MEASURE.search(sentence):
        return "high", "offline extractive: contains a measured figure"
    if kind in ("definition", "constraint"):
        return "high", f"offline extractive: {kind} stated in the source"
    if kind == "analysis":
        return "medium", "offline extractive: the author's interpretation"
    return "medium", "offline extractive: plain statement in the source"


# How much a researcher needs a kind of fact; used only to choose which facts to
# keep when a long file has more candidates than MAX_FACTS.
_KIND_WEIGHT = {"definition": 5, "constraint": 5, "fact": 3, "case": 3, "analysis": 3, "lead": 2}
PLAIN_WEIGHT = 1


def _score(sentence: str, kind: str | None, hedged: bool) -> int:
    """A statement with no cue (no figure, name or cue word: "FieldPad has no offline mode.") is a fact too,
    kept after the cued ones when a long file has more than MAX_FACTS."""
    score = _KIND_WEIGHT[kind] if kind else PLAIN_WEIGHT
    if _MEASURE.search(sentence):
        score += 2
    elif _DIGITS.search(sentence):
        score += 1
    if _DATE.search(sentence):
        score += 1
    if hedged:
        score -= 2
    if len(sentence) < 30:
        score -= 1
    return score


def _spread(items: list, limit: int) -> list:
    """At most `limit` items, evenly spread over the list (so a long file is covered end to end)."""
    if len(items) <= limit:
        return items
    return [items[(i * len(items)) // limit] for i in range(limit)]


# --- Task A ----------------------------------------------------------------------


def per_file_digest(prompt: str) -> dict:
    filename, file_format, spans = parse_per_file_envelope(prompt)
    table = read_table(filename, spans) if file_format == "csv" else None
    if table is not None:
        return _digest(filename, file_format, table_summary(table), table_facts(filename, table), [])
    values = read_json(filename, spans) if file_format == "json" else None
    if values is not None:
        return _digest(
            filename, file_format, json_summary(values), _spread(json_facts(filename, values), MAX_FACTS), []
        )
    located, headings = _located_statements(filename, file_format, spans)
    fields = _entry_fields(located)
    dated = _dated_entries(filename, spans)

    candidates: dict[str, dict] = {}  # normalised claim → fact, first occurrence wins
    ranks: dict[str, tuple[int, int]] = {}
    uncertainties: dict[str, dict] = {}
    for position, sentence, ref in located:
        hedged = _hedged(sentence)
        if hedged:
            uncertainty = {"text": cut_text(sentence, MAX_CLAIM_CHARS), "sources": [ref]}
            add_unique(uncertainties, comparison_key(sentence), uncertainty)
        if _claims_nothing(sentence):
            continue
        cued = _kind(sentence)
        kind = cued or "fact"
        # A log's entry is said first: its date dates what it says ("[2.4.0] - 2026-11-10 › Added: Cursor
        # pagination …"; the date may stand in a span of its own, and the clause after the colon is the cited
        # span's), and a form's field each entry fills in ("Crew on site: 14." under each day of a diary)
        # needs its entry: alone, three such facts differ by a figure and tell no day.
        entry = dated.get(ref, "") if not holds_date(sentence) else ""
        entry = entry or (headings[ref] if _field_label(sentence) in fields else "")
        claim = cut_text(f"{entry}: {sentence}" if entry else sentence, MAX_CLAIM_CHARS)
        key = comparison_key(claim)
        if add_unique(candidates, key, new_fact(kind, claim, ref, *_reliability(sentence, kind, hedged))):
            ranks[key] = (-_score(sentence, cued, hedged), position)

    chosen = sorted(sorted(candidates, key=ranks.__getitem__)[:MAX_FACTS], key=lambda key: ranks[key][1])
    facts = [candidates[key] for key in chosen]
    if not facts:
        facts = _fallback_fact(filename, spans)
    summary = _file_summary([sentence for _, sentence, _ in located], fields, facts, filename)
    return _digest(filename, file_format, summary, facts, _spread(list(uncertainties.values()), MAX_UNCERTAINTIES))


Located = list[tuple[int, str, str]]  # (position, statement, SourceRef) of a document's statements, in order


def _located_statements(filename: str, file_format: str, spans: list[dict]) -> tuple[Located, dict[str, str]]:
    """The document's statements in order, and each span's heading by its SourceRef: its page furniture, its
    reference list (to the next section or the end: it runs on over pages) and a page's last half sentence
    left out."""
    furniture = _furniture_lines(spans) if len(spans) >= FURNITURE_MIN_SPANS else set()
    located: Located = []
    headings: dict[str, str] = {}
    in_references = False
    for span, after in zip(spans, [*spans[1:], None], strict=False):
        ref = f"{filename}::{span['span_id']}"
        headings[ref], text = _statement_text(span["text"], furniture)
        if in_references and not headings[ref]:
            continue
        list_line = references_start(f"{headings[ref]}\n{text}")  # line 0 is the heading
        in_references = list_line is not None
        if list_line is not None:
            text = "\n".join(text.split("\n")[: max(list_line - 1, 0)])
        # A line that ends on a comma is an e-mail's greeting or closing ("Hi People team,", "Best regards,"); its
        # header says who wrote to whom, not what the message states.
        statements = [
            s
            for s in split_sentences(text)
            if not s.endswith(",")
            and not is_mail_header(s)
            and (is_prose(s) or csv_row_fields(s) or labelled_people(s))
        ]
        runs_on = file_format in PAGED_FORMATS and after is not None and statements
        if runs_on and _runs_on(statements[-1], after["text"]):
            statements.pop()  # half a sentence: a page's last, going on over the page
        located.extend((position, sentence, ref) for position, sentence in enumerate(statements, len(located)))
    return located, headings


def _digest(filename: str, file_format: str, summary: str, facts: list[dict], uncertainties: list[dict]) -> dict:
    for number, fact in enumerate(facts, start=1):
        fact["id"] = f"F{number}"
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "single",
        "generator": GENERATOR,
        "document": {"filename": filename, "format": file_format},
        "summary": summary,
        "facts": facts,
        "uncertainties": uncertainties,
    }


def new_fact(kind: str, claim: str, ref: str, reliability: str, note: str) -> dict:
    return {
        "id": "",
        "kind": kind,
        "claim": claim,
        "sources": [ref],
        "reliability": reliability,
        "reliability_note": note,
    }


def add_unique(items: dict[str, dict], key: str, item: dict) -> bool:
    """Add `item` under `key`, or merge its sources into the one already there. True if added."""
    if key in items:
        sources = items[key]["sources"]
        sources.extend(ref for ref in item["sources"] if ref not in sources)
        return False
    items[key] = item
    return True


def _fallback_fact(filename: str, spans: list[dict]) -> list[dict]:
    """No statement carried a cue: the opening sentence (or the first span's text) stands as the fact."""
    for span in spans:
        ref = f"{filename}::{span['span_id']}"
        sentences = split_sentences(span["text"])
        if sentences:
            claim = cut_text(sentences[0], MAX_CLAIM_CHARS)
            return [new_fact("fact", claim, ref, "medium", "offline extractive: the document's opening statement")]
    for span in spans:
        text = cut_text(span["text"], MAX_CLAIM_CHARS)
        if text:
            ref = f"{filename}::{span['span_id']}"
            return [new_fact("fact", text, ref, "low", "offline extractive: fragmentary text")]
    return []  # no text at all: an empty list is honest, a sourceless fact is not allowed


def _dated_entries(filename: str, spans: list[dict]) -> dict[str, str]:
    """Each span's entry, by SourceRef, when the document is a log of dated entries (two dated headings at
    least, with different dates: a changelog's releases, minutes' meetings, a diary's days): its heading
    when that holds a date, else the dated heading it stands under and its own ("[2.4.0] - 2026-11-10 ›
    Added"). A dated heading alone in its span heads the spans after it up to a heading of its Markdown
    level or above, or, in a format without levels, up to the next dated heading."""
    entries: dict[str, str] = {}
    above: tuple[int, str] | None = None  # the level ("##": 2; 0 without marks) and text of a dated heading
    for span in spans:
        first = span["text"].lstrip("\n").partition("\n")[0].strip()
        level = len(first) - len(first.lstrip("#"))
        alone = heading_alone(span["text"])
        heading = alone or split_leading_heading(span["text"])[0]
        if above and heading and 0 < level <= above[0]:
            above = None  # a section of the dated one's level or above: the entry has ended
        ref = f"{filename}::{span['span_id']}"
        if heading and holds_date(heading):
            entries[ref] = heading
            above = (level, heading) if alone else above
        elif above:
            entries[ref] = f"{above[1]} › {heading}" if heading else above[1]
    dates = {entry.split(" › ")[0] for entry in entries.values()}
    return entries if len(dates) >= 2 else {}


FIELD_VALUE_MAX_WORDS = 6  # "Weather: rain all morning, 6 °C." is a field's value; a longer one is prose
PAGED_FORMATS = ("pdf", "image")  # a span is a page: a sentence may run on into the next one


def _entry_fields(located: list[tuple[int, str, str]]) -> set[str]:
    """The labels of a form's fields that a document fills in for each of its entries: each said in two spans at
    least, with two values at least ("Crew on site: 14." on Monday, "Crew on site: 17." on Tuesday). One
    label said twice with one value ("One of: gnu, oldgnu, posix") is a phrase the document repeats."""
    spans: dict[str, set[str]] = {}
    values: dict[str, set[str]] = {}
    for _position, sentence, ref in located:
        if label := _field_label(sentence):
            spans.setdefault(label, set()).add(ref)
            values.setdefault(label, set()).add(sentence.partition(": ")[2])
    return {label for label in spans if len(spans[label]) > 1 and len(values[label]) > 1}


def _field_label(sentence: str) -> str:
    """The label of a sentence that is a label and its value ("Crew on site: 14."), as written; "" for another
    sentence."""
    if csv_row_fields(sentence):
        return ""  # a table's row: a record of its own, every field named
    label, colon, value = sentence.partition(": ")
    field = colon and len(label) <= MAX_COLUMN_NAME_CHARS and label[:1].isalpha()
    # A field holds a value, not a sentence: "Note: split groups may not be supported by all tools" is a note.
    return label.strip() if field and len(value.split()) <= FIELD_VALUE_MAX_WORDS else ""


def _file_summary(sentences: list[str], fields: set[str], facts: list[dict], filename: str) -> str:
    """The 2–3 most informative of the leading sentences, the most informative first (the aggregate digest
    tells a file by its summary's first sentence). A sentence informs by its length, its figures and by
    speaking of what the rest of the document speaks of: a byline ("Prepared by the district IT office,
    November 2026.") or a reference number shares no term with the sentences after it. A table's rows are
    no summary."""
    # A table's row tells one record, not what the document is about; its column names recur in every row. So
    # does a form's field a log fills in for each entry ("Crew on site: 14." under each day of a site diary):
    # `fields` holds their labels (_entry_fields).
    window = [
        (position, sentence)
        for position, sentence in enumerate(sentences[:SUMMARY_WINDOW])
        if not _claims_nothing(sentence) and not csv_row_fields(sentence) and _field_label(sentence) not in fields
    ]
    said = [set(content_terms(sentence)) for sentence in sentences]
    recurring = {term for term, count in Counter(term for terms in said for term in terms).items() if count > 1}

    def informativeness(item: tuple[int, str]) -> tuple[int, int]:
        position, sentence = item
        score = min(len(sentence), 200) // 40 + (2 if _DIGITS.search(sentence) else 0)
        score += 1 if _kind(sentence) else 0
        score -= 2 if _hedged(sentence) else 0
        score += min(len(said[position] & recurring), MAX_RECURRING_TERMS)
        score += 1 if position == 0 else 0  # an opening sentence often says what the document is
        return (-score, position)

    # A sentence the document repeats (a disclaimer, a paragraph pasted twice) is told once.
    distinct = {comparison_key(sentence): (position, sentence) for position, sentence in reversed(window)}
    best = sorted(distinct.values(), key=informativeness)[:MAX_SUMMARY_SENTENCES]
    # A list's item ends without a full stop: closed, it does not run into the sentence after it.
    summary = " ".join(ended(cut_text(sentence, 300)) for _, sentence in best)
    if summary:
        return summary
    if facts:
        return facts[0]["claim"]
    return f"{filename} contains no readable text."
