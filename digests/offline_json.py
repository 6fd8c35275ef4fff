"""The offline extractive digest of a JSON file: what its values and records state.

Sentence extraction read a JSON file as lines of keys and braces, so its digest was one quoted
line ('"site": "Elm Street",'). The extractor makes a span per top-level key, or per item of a
top-level list, written as "label: value" with the value as indented JSON
(extraction.text_readers._json_blocks). Here each span's value is read back:

- a plain value is stated as it stands ("version: 2.1");
- an object is a record, stated with its plain fields ("owner: name Ana, team Ops.");
- a list of objects is a table of records: its shape and columns are stated as a CSV's are
  (offline_csv), then its records, numbered from 1 ("assets, item 1: id P-101, type pump, …", or
  "Record 1: …" in a file that is the list), the fields of an object inside a record by their
  path ("laptops.count 760");
- a list of plain values is stated as the list;
- the objects and lists inside an object are stated the same way, labelled by their path
  ("rotation.escalation, item 1: after_minutes 15, to secondary on-call").

Every fact cites the span its value was read from. A span that is not such a value (a window
cut inside a large value) leaves the file to the sentence digest.
"""

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from llm_platform.json_records import (
    MAX_NESTING,
    PLAIN,
    flattened,
    item_label,
    listed,
    plain,
    plain_list_lines,
    record_label,
    record_line,
)
from llm_platform.statements import is_statement
from llm_platform.terms import cut_text

from .offline_csv import MAX_CLAIM_CHARS, READ_FROM_VALUES, Column, Table, column_facts, computed_fact

MAX_RECORDS_STATED = 30  # of one list, spread over it


@dataclass(frozen=True)
class JsonValue:
    label: str
    value: object
    ref: str


def read_json(filename: str, spans: list[dict]) -> list[JsonValue] | None:
    """Each span's label and value; None when a span is not "label: value" with a whole JSON value."""
    values = []
    for span in spans:
        label, separator, rendered = span["text"].partition(": ")
        if not separator:
            return None
        try:
            value = json.loads(rendered)
        except ValueError:
            if rendered.lstrip()[:1] in ("{", "["):
                return None  # a value cut by a window
            value = rendered  # a top-level string is written without its quotes
        values.append(JsonValue(label, value, f"{filename}::{span['span_id']}"))
    return values or None


def json_facts(filename: str, values: list[JsonValue]) -> list[dict]:
    if _is_list_of_records(values):
        return _records_facts(filename, [(item.value, item.ref) for item in values], record_label)
    return [fact for item in values for fact in _value_facts(item.label, item.value, item.ref, MAX_NESTING)]


def _value_facts(label: str, value: object, ref: str, depth: int) -> list[dict]:
    """What `value` states, and, down to `depth` levels, what the objects and lists inside an object state,
    each labelled by its path ("rotation.escalation, item 1: after_minutes 15, …"): a config's nested
    settings are statements of the file too."""
    if isinstance(value, PLAIN):
        return [_read(f"{label}: {plain(value)}", [ref])]
    if _are_records(value):
        return _records_facts(label, [(record, ref) for record in value], partial(item_label, label))
    if isinstance(value, list) and all(isinstance(entry, PLAIN) for entry in value):
        return [_read(line, [ref]) for line in plain_list_lines(label, value)]
    if not isinstance(value, dict):
        return []  # a list of mixed or nested values: left to the file's summary
    facts = [_read(record_line(label, value), [ref])] if _is_record(value) else []
    if depth > 1:
        for name, inner in value.items():
            if not isinstance(inner, PLAIN):
                facts.extend(_value_facts(f"{label}.{name}", inner, ref, depth - 1))
    return facts


def json_summary(values: list[JsonValue]) -> str:
    """What the file holds, by its top-level labels: their records and fields, or their values; led by the
    first value that states something, as a document's summary leads with what it is about (an API
    description's "Create, list and export invoices for a customer account.")."""
    if _is_list_of_records(values):
        return f"A list of {_records(len(values))} with the fields {listed(_fields(item.value for item in values))}."
    lead = next((text for item in values for text in _strings(item.value) if is_statement(text)), "")
    return cut_text(f"{lead} {_shape(values, lead)}".strip(), MAX_CLAIM_CHARS)


def _strings(value: object) -> Iterable[str]:
    """The string values of an object and the objects inside it, in order (not a list's: its records')."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _strings(inner)


def _shape(values: list[JsonValue], lead: str = "") -> str:
    """The top-level labels and what each holds; a plain value the summary leads with (`lead`) is not said
    twice ("A flag at 100% … must be removed from the code. flags: 3 records …; policy: A flag at 100% …")."""
    parts = []
    for item in values:
        if _are_records(item.value):
            parts.append(f"{item.label}: {_records(len(item.value))} with the fields {listed(_fields(item.value))}")
        elif isinstance(item.value, dict) and item.value:
            parts.append(f"{item.label}: a record with the fields {listed(_described_fields(item.value))}")
        elif isinstance(item.value, PLAIN) and plain(item.value) != lead:
            parts.append(f"{item.label}: {plain(item.value)}")
    if not parts:
        return "" if lead else "A JSON document of nested values."
    said = "; ".join(parts)
    return said if said.endswith((".", "!", "?")) else f"{said}."


def _records_facts(label: str, records: list[tuple[dict, str]], name_of: Callable[[int], str]) -> list[dict]:
    """The records' shape and columns as a table's, then the records themselves (spread over the list),
    each named by `name_of(its number)`."""
    records = [(flattened(record), ref) for record, ref in records]
    names = _fields(record for record, _ref in records)
    columns = {name: Column(name) for name in names}
    for number, (record, ref) in enumerate(records, 1):
        for name, value in record.items():
            if isinstance(value, PLAIN) and value is not None:
                columns[name].cells.append((plain(value), ref, number))
    refs = list(dict.fromkeys(ref for _record, ref in records))
    table = Table(list(columns.values()), len(records), refs, unit="record")
    shape = _read(f"{label} holds {_records(len(records))} with the fields {listed(names)}.", refs)
    numbered = list(enumerate(records, 1))
    if len(numbered) > MAX_RECORDS_STATED:
        numbered = [numbered[(i * len(numbered)) // MAX_RECORDS_STATED] for i in range(MAX_RECORDS_STATED)]
    stated = [_read(record_line(name_of(number), record), [ref]) for number, (record, ref) in numbered]
    return [shape, *column_facts(table), *stated]


def _is_record(value: object) -> bool:
    return isinstance(value, dict) and any(isinstance(field, PLAIN) for field in value.values())


def _are_records(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_record(entry) for entry in value)


def _is_list_of_records(values: list[JsonValue]) -> bool:
    """A file whose top level is a list of objects: a span per item, labelled by its index."""
    return all(item.label.startswith("$[") and _is_record(item.value) for item in values)


def _fields(records: Iterable[dict]) -> list[str]:
    """The plain fields of the records, those of the objects inside them by path, in the order they first appear."""
    names: dict[str, None] = {}
    for record in records:
        names.update((name, None) for name in flattened(record))
    return list(names)


def _described_fields(record: dict) -> list[str]:
    """A record's fields in order, a nested one said with what it holds ("escalation (2 records)")."""
    described = []
    for name, value in record.items():
        if isinstance(value, PLAIN):
            described.append(name)
        elif _are_records(value):
            described.append(f"{name} ({_records(len(value))})")
        elif isinstance(value, dict):
            described.append(f"{name} (a record)")
        else:
            described.append(f"{name} ({len(value)} values)")
    return described


def _records(count: int) -> str:
    return f"{count} record" if count == 1 else f"{count} records"


def _read(claim: str, sources: list[str]) -> dict:
    return computed_fact(claim, sources, READ_FROM_VALUES)
