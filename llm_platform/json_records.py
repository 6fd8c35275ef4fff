"""A JSON value said in words: how a record, a list of records or a list of values reads as a statement.

The extractor writes each top-level value of a JSON file as a span "label: value", the value as
indented JSON (extraction.text_readers). Read as sentences, that is lines of keys and
braces; said here, a record is its fields ("budget: engineering_weeks 26, contractor_usd 18000.")
and a list of records one such line a record ("milestones, item 2: name Photo queue, due 2027-02-12, …"), as
a list of sentences is ("comments, item 1: The bus only runs hourly.").
The offline digest of a JSON file (digests.offline_json) and the statements research quotes
(llm_platform.statements) say them alike.
"""

import json

from .terms import and_list

MAX_LISTED = 12  # fields of a record, or items of a list, named in one line
MAX_DEPTH = 4  # levels of objects inside a record said as its fields by path
MAX_NESTING = 8  # levels of objects said object by object (`value_lines`)
PLAIN = str | int | float | bool | None
SENTENCE_ENDS = (".", "!", "?")  # a list of values that end so is a list of sentences, said one a line


def labelled_json(text: str) -> tuple[str, object] | None:
    """The label and the object or list of a span "label: {…}" or "label: […]"; None for any other text
    (a plain value, prose, or a value cut short by a window)."""
    label, separator, rendered = text.partition(": ")
    if not separator or "\n" in label or rendered.lstrip()[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(rendered)
    except ValueError:
        return None
    # A top-level list's item is labelled by its path ("$[1]"): said as the digest says it, "Record 2".
    if label.startswith("$[") and label.endswith("]") and label[2:-1].isdigit():
        label = record_label(int(label[2:-1]) + 1)
    return label, value


def record_label(number: int) -> str:
    """The label of the record `number` (from 1) of a file whose top level is a list of records."""
    return f"Record {number}"


def said_records(text: str) -> list[str] | None:
    """A span "label: {…}" or "label: […]" said in words (`value_lines`); None for any other text."""
    value = labelled_json(text)
    return None if value is None else value_lines(*value)


def value_lines(label: str, value: object, depth: int = MAX_NESTING) -> list[str]:
    """`value` said in words under `label`: a record as one line, a list of records or of sentences a line
    each, a list of other plain values as the list; nothing for other shapes. A record that one line would not
    say whole (more than MAX_LISTED fields, a list of records or objects deeper than MAX_DEPTH inside it, as an
    API description's paths hold) is said object by object, each under its path, down to `depth` levels."""
    if isinstance(value, dict):
        fields = flattened(value)
        if len(fields) <= MAX_LISTED and _flat(value, MAX_DEPTH) or depth <= 1:
            return [record_line(label, fields)] if fields else []
        own = {name: inner for name, inner in value.items() if isinstance(inner, PLAIN)}
        lines = [record_line(label, own)] if own else []
        for name, inner in value.items():
            if not isinstance(inner, PLAIN):
                lines.extend(value_lines(f"{label}.{name}", inner, depth - 1))
        return lines
    if isinstance(value, list) and value and all(isinstance(entry, dict) for entry in value):
        return [record_line(item_label(label, number), flattened(entry)) for number, entry in enumerate(value, 1)]
    if isinstance(value, list) and value and all(isinstance(entry, PLAIN) for entry in value):
        return plain_list_lines(label, value)
    return []


def plain_list_lines(label: str, values: list[PLAIN]) -> list[str]:
    """A list of plain values as one line ("regions: eu, us."), a list of sentences a line each: run together
    they read "… my slot twice., A text …"."""
    said = [plain(entry) for entry in values]
    if any(entry.rstrip().endswith(SENTENCE_ENDS) for entry in said):
        return [f"{item_label(label, number)}: {entry}" for number, entry in enumerate(said, 1)]
    return [closed(f"{label}: {listed(said)}")]


def item_label(label: str, number: int) -> str:
    """The label of a list's item, numbered from 1 ("milestones, item 2"): not "milestones[2]", which a
    report reads as a citation mark."""
    return f"{label}, item {number}"


def flattened(record: dict, depth: int = MAX_DEPTH) -> dict:
    """A record's plain fields, its lists of plain values as one field each, and the fields of the objects
    inside it by their path ("laptops.count"): a school's laptops are its fields as much as its name is."""
    fields = {}
    for name, value in record.items():
        if isinstance(value, PLAIN):
            fields[name] = value
        elif isinstance(value, list) and value and all(isinstance(entry, PLAIN) for entry in value):
            # "depends_on payments and cart": joined by commas, its values would read as the record's next fields
            fields[name] = and_list([plain(entry) for entry in value], MAX_LISTED)
        elif isinstance(value, dict) and depth > 1:
            fields.update((f"{name}.{inner}", field) for inner, field in flattened(value, depth - 1).items())
    return fields


def _flat(value: object, depth: int) -> bool:
    """Whether `flattened` says all of `value`: plain values, lists of them, objects within `depth` levels."""
    if isinstance(value, PLAIN):
        return True
    if isinstance(value, list):
        return all(isinstance(entry, PLAIN) for entry in value)
    return isinstance(value, dict) and depth > 0 and all(_flat(inner, depth - 1) for inner in value.values())


def record_line(label: str, record: dict) -> str:
    fields = [
        f"{name} {plain(value)}" for name, value in record.items() if isinstance(value, PLAIN) and value is not None
    ]
    return closed(f"{label}: {listed(fields)}")


def closed(line: str) -> str:
    """`line` closed by a full stop, unless its last value already ends as a sentence does ("answer Use a lap
    length of 50 bar diameters."), not "… diameters..".
    """
    return line if line.endswith((*SENTENCE_ENDS, "…")) else f"{line}."


def listed(items: list[str]) -> str:
    return ", ".join(items[:MAX_LISTED]) + (", …" if len(items) > MAX_LISTED else "")


def plain(value: PLAIN) -> str:
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)
