"""Offline extractive Task B: what the `offline` provider answers to AGGREGATE_DIGEST (see offline.py).

The input digests (per-file or themselves aggregates, for the tree over large sets) are
merged: equal claims become one fact with the union of their sources, facts from different
files about the same subject with different figures for the same period are flagged as a
"conflict" citing both, and every source is copied from the inputs.
"""

import re
from collections.abc import Iterable

from llm_platform.answer_types import FIGURE
from llm_platform.prose import csv_row_fields
from llm_platform.sourcerefs import split_ref
from llm_platform.terms import SUBJECT_STOP_WORDS, comparison_key, content_terms, cut_text, split_sentences

from .envelopes import parse_aggregate_envelope
from .offline import GENERATOR, MAX_CLAIM_CHARS, YEAR, add_unique, new_fact
from .offline_csv import ABOUT_THE_FILE
from .validation import SCHEMA_VERSION

MAX_AGGREGATE_FACTS = 80
MAX_AGGREGATE_UNCERTAINTIES = 30
MAX_AGGREGATE_SUMMARY_CHARS = 1500
MAX_CONFLICTS_PER_SUBJECT = 3


def aggregate_digest(prompt: str) -> dict:
    manifest, digests = parse_aggregate_envelope(prompt)

    merged: dict[str, dict] = {}  # normalised claim → fact (copied, sources unioned)
    origin: dict[str, int] = {}  # normalised claim → index of the first input digest stating it
    uncertainties: dict[str, dict] = {}
    uncertainty_origin: dict[str, int] = {}
    documents: list[dict] = []
    for index, digest in enumerate(digests):
        documents.extend(_documents_of(digest))
        for fact in _dicts(digest.get("facts")):
            key = comparison_key(fact.get("claim", ""))
            if not key or not fact.get("sources"):
                continue
            if key in merged:
                _merge_fact(merged[key], fact)
            else:
                merged[key] = _copy_fact(fact)
                origin[key] = index
        for item in _dicts(digest.get("uncertainties")):
            key = comparison_key(item.get("text"))
            copied = {"text": item.get("text"), "sources": list(item.get("sources") or [])}
            if key and add_unique(uncertainties, key, copied):
                uncertainty_origin[key] = index

    for fact in merged.values():
        _note_agreement(fact)
    for key, conflict in _conflicts(list(merged.values())):
        if key not in merged:  # an input aggregate may already carry this very conflict
            merged[key] = conflict
            origin[key] = -1  # conflicts are kept first when the list is capped

    keys = _round_robin(list(merged), origin, MAX_AGGREGATE_FACTS)
    ordered = sorted((merged[key] for key in keys), key=lambda fact: fact.get("kind") != "conflict")
    facts = [
        {"id": f"F{number}", **{k: v for k, v in fact.items() if k != "id"}} for number, fact in enumerate(ordered, 1)
    ]
    kept_uncertainties = [
        uncertainties[key] for key in _round_robin(list(uncertainties), uncertainty_origin, MAX_AGGREGATE_UNCERTAINTIES)
    ]

    files = [{"filename": entry["filename"], "format": entry.get("format", "")} for entry in manifest]
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "batch",
        "generator": GENERATOR,
        "document": {"filename": "__BATCH__", "format": "mixed"},
        "batch": {"files": files},
        "summary": _aggregate_summary(len(files), documents, facts),
        "facts": facts,
        "uncertainties": kept_uncertainties,
        "documents": documents,
    }


def _dicts(items) -> Iterable[dict]:
    return (item for item in (items if isinstance(items, list) else []) if isinstance(item, dict))


def _documents_of(digest: dict) -> list[dict]:
    """One {filename, summary} per file: a per-file digest's own, or an input aggregate's list."""
    if digest.get("mode") == "batch":
        nested = [
            d
            for d in _dicts(digest.get("documents"))
            if isinstance(d.get("filename"), str) and isinstance(d.get("summary"), str)
        ]
        if nested:
            return [{"filename": d["filename"], "summary": d["summary"]} for d in nested]
    document = digest.get("document") if isinstance(digest.get("document"), dict) else {}
    summary = digest.get("summary") if isinstance(digest.get("summary"), str) else ""
    return [{"filename": str(document.get("filename", "")), "summary": _first_sentence(summary)}]


def _first_sentence(text: str) -> str:
    sentences = split_sentences(text) or [text]
    return cut_text(sentences[0], 300)


_RELIABILITY_RANK = {"low": 0, "medium": 1, "high": 2}
_AGREEMENT_NOTE = re.compile(r" \(stated in \d+ files\)$")


def _copy_fact(fact: dict) -> dict:
    copied = {key: value for key, value in fact.items() if key != "id"}
    copied["sources"] = list(fact["sources"])
    return copied


def _merge_fact(kept: dict, other: dict) -> None:
    """Union of sources; the more specific (longer) wording and the higher reliability win."""
    kept["sources"].extend(ref for ref in other["sources"] if ref not in kept["sources"])
    if len(other.get("claim", "")) > len(kept.get("claim", "")):
        kept["claim"] = other["claim"]
    if _RELIABILITY_RANK.get(other.get("reliability"), -1) > _RELIABILITY_RANK.get(kept.get("reliability"), -1):
        kept["reliability"] = other["reliability"]
        if "reliability_note" in other:
            kept["reliability_note"] = other["reliability_note"]


def _files_of(fact: dict) -> list[str]:
    files: list[str] = []
    for ref in fact["sources"]:
        parts = split_ref(ref)
        name = parts[0] if parts else ref
        if name not in files:
            files.append(name)
    return files


def _note_agreement(fact: dict) -> None:
    count = len(_files_of(fact))
    if count > 1 and fact.get("kind") != "conflict" and isinstance(fact.get("reliability_note"), str):
        base = _AGREEMENT_NOTE.sub("", fact["reliability_note"])
        fact["reliability_note"] = f"{base} (stated in {count} files)"


# --- conflicts ---------------------------------------------------------------------


def _figures(claim: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(years, other figures) of a claim, in order."""
    numbers = FIGURE.findall(claim)
    years = tuple(n for n in numbers if YEAR.fullmatch(n))
    return years, tuple(n for n in numbers if not YEAR.fullmatch(n))


def _subject(claim: str) -> str:
    """What a figure is about: the content words before the first figure that is not a year.

    "Water losses were 19 % in 2022" → "water losses". Empty when the claim has no
    such figure or names nothing before it.
    """
    match = next((m for m in FIGURE.finditer(claim) if not YEAR.fullmatch(m.group())), None)
    if match is None:
        return ""
    words = re.findall(r"[^\W\d_]{3,}", claim[: match.start()].lower())
    return " ".join(w for w in words if w not in SUBJECT_STOP_WORDS)


def _conflicts(facts: list[dict]) -> list[tuple[str, dict]]:
    """Facts from different files, same subject and period, different figures: a conflict citing both; and a
    table's row whose clock times another file gives otherwise (`_row_time_conflicts`)."""
    return _subject_conflicts(facts) + _row_time_conflicts(facts)


def _subject_conflicts(facts: list[dict]) -> list[tuple[str, dict]]:
    groups: dict[str, list[dict]] = {}
    for fact in facts:
        subject = _subject(fact["claim"])
        # One word ("losses") is too vague on its own unless a year pins the period.
        specific = len(subject.split()) >= 2 or (subject and _figures(fact["claim"])[0])
        if fact.get("kind") != "conflict" and specific and fact.get("reliability_note") not in ABOUT_THE_FILE:
            groups.setdefault(subject, []).append(fact)
    found: list[tuple[str, dict]] = []
    for group in groups.values():
        pairs = [(a, b) for i, a in enumerate(group) for b in group[i + 1 :] if _disagree(a, b)]
        # Many files quoting many figures would give n² conflicts; a few make the point.
        found.extend(_conflict_fact(a, b) for a, b in pairs[:MAX_CONFLICTS_PER_SUBJECT])
    return found


# A clock time, in 12 or 24 hours: "9:00am", "4 pm", "16:00", "08.30".
_CLOCK_TIME = re.compile(r"\b(\d{1,2})(?:[:.](\d\d))?\s?([ap])\.?m\b|\b(\d{1,2}):(\d\d)\b", re.I)


def _clock_times(text: str) -> frozenset[str]:
    """The clock times `text` gives, as "HH:MM" in 24 hours ("9:00am – 12:00pm" → {"09:00", "12:00"})."""
    times = set()
    for match in _CLOCK_TIME.finditer(text):
        hour, minute, half, hour24, minute24 = match.groups()
        if hour24 is not None:
            hour, minute = int(hour24), minute24
        else:
            hour, minute = int(hour) % 12 + (12 if half.lower() == "p" else 0), minute or "00"
        if hour < 24 and int(minute) < 60:
            times.add(f"{hour:02d}:{minute}")
    return frozenset(times)


def _row_time_conflicts(facts: list[dict]) -> list[tuple[str, dict]]:
    """A table's row gives a thing's clock times in a column ("Site: Elmfield; …; Saturday: 9:00am – 12:00pm")
    and another file's fact names that thing and that column and gives other times ("From Saturday 7 November the
    Elmfield Saturday clinic runs from 08:30 to 13:00"): the files disagree about the same thing. Times written
    otherwise ("8:30am – 4:00pm" and "08:30 to 16:00") agree; a fact that gives some of the row's times only ("the
    09:00-12:00 session is always fully booked") says nothing else."""
    timed = [  # each fact that gives a clock time, with its files, terms and times (read once)
        (fact, set(_files_of(fact)), set(content_terms(fact["claim"])), times)
        for fact in facts
        if fact.get("kind") != "conflict" and (times := _clock_times(fact["claim"]))
    ]
    found: dict[str, dict] = {}
    for row, files, _terms, _times in timed:
        fields = csv_row_fields(row["claim"])
        name = fields[0][1] if len(fields) > 1 else ""
        for column, value in fields[1:]:
            times = _clock_times(value)
            subject = set(content_terms(f"{name} {column}"))
            if not times or not subject:
                continue
            others = [
                other
                for other, other_files, terms, other_times in timed
                if not files & other_files and subject <= terms and other_times - times
            ]
            for other in others[:MAX_CONFLICTS_PER_SUBJECT]:
                key, conflict = _conflict_fact(row, other, "the same thing, other times")
                found.setdefault(key, conflict)
    return list(found.items())


def _disagree(first: dict, second: dict) -> bool:
    if set(_files_of(first)) & set(_files_of(second)):
        return False  # within one file that is the file's own business (Task A flags it)
    years_a, values_a = _figures(first["claim"])
    years_b, values_b = _figures(second["claim"])
    return years_a == years_b and bool(values_a) and bool(values_b) and values_a != values_b


def _conflict_fact(first: dict, second: dict, why: str = "same subject, different figures") -> tuple[str, dict]:
    """The conflict fact citing both sides; both sides drop to "low" reliability."""
    a, b = sorted((first, second), key=lambda fact: comparison_key(fact["claim"]))  # order-independent wording
    claim = cut_text(
        f"The files disagree: {', '.join(_files_of(a))} says “{a['claim']}”, "
        f"while {', '.join(_files_of(b))} says “{b['claim']}”",
        2 * MAX_CLAIM_CHARS,
    )
    for side in (a, b):
        side["reliability"] = "low"
        side["reliability_note"] = "offline extractive: another file gives a different figure"
    conflict = new_fact("conflict", claim, "", "low", f"offline extractive: {why}")
    conflict["sources"] = a["sources"] + [ref for ref in b["sources"] if ref not in a["sources"]]
    return comparison_key(claim), conflict


# --- selection and summary ----------------------------------------------------------


def _round_robin(keys: list[str], origin: dict[str, int], limit: int) -> list[str]:
    """At most `limit` keys: conflicts found here (origin -1) first, up to half the
    room, then one key per input digest in turn, so every file stays represented.
    The result keeps the input order of the chosen keys.
    """
    if len(keys) <= limit:
        return keys
    chosen = [key for key in keys if origin[key] == -1][: limit // 2]
    queues: dict[int, list[str]] = {}
    for key in keys:
        if origin[key] != -1:
            queues.setdefault(origin[key], []).append(key)
    taken = set(chosen)
    while len(taken) < limit and any(queues.values()):
        for source in sorted(queues):
            if queues[source] and len(taken) < limit:
                taken.add(queues[source].pop(0))
    return [key for key in keys if key in taken]


def _aggregate_summary(file_count: int, documents: list[dict], facts: list[dict]) -> str:
    # A conflict between files cites two or more (a model's Task A may call one file's "however" one).
    conflicts = sum(fact["kind"] == "conflict" and len(_files_of(fact)) > 1 for fact in facts)
    head = f"{file_count} file{'s' if file_count != 1 else ''}."
    if conflicts:
        head += f" {conflicts} conflict{'s' if conflicts != 1 else ''} between files."
    parts = [head]
    length = len(head)
    for shown, document in enumerate(documents):
        line = f"{document['filename']}: {_first_sentence(document['summary'])}" if document["summary"] else ""
        if not line:
            continue
        if length + len(line) + 1 > MAX_AGGREGATE_SUMMARY_CHARS:
            parts.append(f"(and {len(documents) - shown} more files)")
            break
        parts.append(line)
        length += len(line) + 1
    return " ".join(parts)
