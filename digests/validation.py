"""Checks every digest before anything stores or shows it (SPEC §2.3).

Order: parse one JSON object → JSON Schema (all errors collected) → SourceRefs
(Task A: every source names this file and an existing span; Task B: every
source already occurs in the input digests). All problems go into `errors`,
which feed the one repair call. Then the digest is sanitised: invalid sources
are removed, facts left without a source are dropped, labels the schema does
not know are replaced by safe defaults, and every change is recorded in
`dropped`, so a fact without a valid SourceRef never reaches the UI and the
stored digest says what was taken out.
"""

import json
from collections.abc import Callable, Iterator

from jsonschema import Draft202012Validator

from llm_platform.output import Checked, json_path, parse_model_json
from llm_platform.prompts import schema_validator
from llm_platform.sourcerefs import ref_key, split_ref

SCHEMA_VERSION = "context_digest.v1.4.1"

KINDS = ("fact", "analysis", "case", "definition", "constraint", "lead", "conflict")
RELIABILITIES = ("high", "medium", "low")

# Returns what is wrong with a SourceRef, or None when it is acceptable here.
RefCheck = Callable[[object], str | None]


# --- SourceRefs ------------------------------------------------------------------


def sources_of(digest: dict) -> set[str]:
    """Every `file::S#` cited by the digest's facts and uncertainties, nested documents included."""
    keys: set[str] = set()
    for section in ("facts", "uncertainties"):
        for item in _list(digest.get(section)):
            for ref in _list(item.get("sources")) if isinstance(item, dict) else []:
                key = ref_key(ref)
                if key:
                    keys.add(key)
    for nested in _list(digest.get("documents")):
        if isinstance(nested, dict):
            keys |= sources_of(nested)
    return keys


def _ref_check(rule: Callable[[str, str], str | None]) -> RefCheck:
    """A SourceRef check: a string of the grammar, then `rule(filename, span_id)`."""

    def problem(ref: object) -> str | None:
        if not isinstance(ref, str):
            return "is not a string"
        parts = split_ref(ref)
        if parts is None:
            return "is not a SourceRef (<filename>::S<n>[::hint])"
        return rule(parts[0], parts[1])

    return problem


def _per_file_ref_check(filename: str, span_ids: set[str]) -> RefCheck:
    def rule(ref_filename: str, span_id: str) -> str | None:
        if ref_filename != filename:
            return f"names {ref_filename!r}, not this file {filename!r}"
        return None if span_id in span_ids else f"unknown span {span_id}"

    return _ref_check(rule)


def _aggregate_ref_check(allowed_sources: set[str]) -> RefCheck:
    def rule(filename: str, span_id: str) -> str | None:
        return None if f"{filename}::{span_id}" in allowed_sources else "does not occur in the input digests"

    return _ref_check(rule)


# --- the two checks --------------------------------------------------------------


def check_per_file_digest(text: str, *, filename: str, format: str, span_ids: set[str]) -> Checked:
    def force(digest: dict) -> None:
        digest["schema_version"] = SCHEMA_VERSION
        digest["mode"] = "single"
        digest["document"] = {"filename": filename, "format": format}

    return _check(text, "per_file_digest", _per_file_ref_check(filename, set(span_ids)), force)


def check_aggregate_digest(text: str, *, allowed_sources: set[str], manifest: list[dict]) -> Checked:
    def force(digest: dict) -> None:
        digest["schema_version"] = SCHEMA_VERSION
        digest["mode"] = "batch"
        digest["document"] = {"filename": "__BATCH__", "format": "mixed"}
        digest["batch"] = {"files": [{"filename": m["filename"], "format": m["format"]} for m in manifest]}

    return _check(text, "aggregate_digest", _aggregate_ref_check(set(allowed_sources)), force)


def _check(text: str, schema_name: str, ref_problem: RefCheck, force: Callable[[dict], None]) -> Checked:
    try:
        digest = parse_model_json(text)
    except ValueError as exc:
        return Checked(output=None, errors=[str(exc)])
    validator = schema_validator(schema_name)
    errors = _schema_errors(validator, digest)
    errors += [f"{where}: {ref!r} {problem}" for where, ref, problem in _bad_refs(digest, ref_problem)]
    if not errors:
        force(digest)  # stamps what the caller already knows; changes nothing a valid digest said
        return Checked(output=digest)

    sanitised, dropped = _sanitise(digest, ref_problem)
    if sanitised is None:
        return Checked(output=None, errors=errors, dropped=dropped)
    force(sanitised)
    dropped += _drop_schema_failures(validator, sanitised)
    if any(True for _ in validator.iter_errors(sanitised)):
        return Checked(output=None, errors=errors, dropped=dropped)
    return Checked(output=sanitised, errors=errors, dropped=dropped)


def _schema_errors(validator: Draft202012Validator, digest: dict) -> list[str]:
    messages = []
    for error in sorted(validator.iter_errors(digest), key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(error.absolute_path)
        # A malformed SourceRef is reported by the SourceRef check, in plainer words.
        if error.validator == "pattern" and len(path) >= 2 and path[-2] == "sources":
            continue
        messages.append(f"{json_path(path)}: {error.message}")
    return messages


def _bad_refs(digest: dict, ref_problem: RefCheck) -> Iterator[tuple[str, object, str]]:
    for section in ("facts", "uncertainties"):
        for i, item in enumerate(_list(digest.get(section))):
            sources = item.get("sources") if isinstance(item, dict) else None
            for j, ref in enumerate(_list(sources)):
                problem = ref_problem(ref)
                if problem:
                    yield f"{section}[{i}].sources[{j}]", ref, problem


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


# --- sanitising ------------------------------------------------------------------


def _sanitise(digest: dict, ref_problem: RefCheck) -> tuple[dict | None, list[dict]]:
    """A copy with invalid sources removed and what cannot be cited dropped; None if unusable."""
    dropped: list[dict] = []
    if not isinstance(digest.get("summary"), str) or not isinstance(digest.get("facts"), list):
        return None, dropped  # no summary or no fact list: nothing a reader could rely on
    clean = dict(digest)
    clean["facts"] = _clean_facts(digest["facts"], ref_problem, dropped)
    if not isinstance(digest.get("uncertainties"), list):
        dropped.append({"where": "uncertainties", "reason": "missing or not a list; replaced by []"})
    clean["uncertainties"] = _clean_uncertainties(_list(digest.get("uncertainties")), ref_problem, dropped)
    return clean, dropped


def _clean_facts(facts: list, ref_problem: RefCheck, dropped: list[dict]) -> list[dict]:
    kept: list[dict] = []
    for where, fact, claim in _texted_objects("facts", facts, "claim", dropped):
        fact["sources"] = _clean_sources(fact.get("sources"), where, ref_problem, dropped)
        if not fact["sources"]:
            dropped.append({"where": where, "reason": "no valid sources left", "claim": claim[:300]})
            continue
        if fact.get("kind") not in KINDS:
            dropped.append(
                {"where": f"{where}.kind", "value": _shown(fact.get("kind")), "reason": 'unknown kind; set to "fact"'}
            )
            fact["kind"] = "fact"
        if fact.get("reliability") not in RELIABILITIES:
            # Unstated reliability is treated as the cautious end of the scale.
            dropped.append(
                {
                    "where": f"{where}.reliability",
                    "value": _shown(fact.get("reliability")),
                    "reason": 'missing or unknown reliability; set to "low"',
                }
            )
            fact["reliability"] = "low"
        if "reliability_note" in fact and not isinstance(fact["reliability_note"], str):
            dropped.append({"where": f"{where}.reliability_note", "reason": "not a string"})
            del fact["reliability_note"]
        kept.append(fact)
    ids = [fact.get("id") for fact in kept]
    if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
        for number, fact in enumerate(kept, start=1):  # ids only need to be unique labels
            fact["id"] = f"F{number}"
    return kept


def _clean_uncertainties(items: list, ref_problem: RefCheck, dropped: list[dict]) -> list[dict]:
    kept: list[dict] = []
    for where, item, _text in _texted_objects("uncertainties", items, "text", dropped):
        # An uncertainty may have no source (a gap no span states), so it survives losing them.
        kept.append({**item, "sources": _clean_sources(item.get("sources"), where, ref_problem, dropped)})
    return kept


def _texted_objects(section: str, items: list, text_key: str, dropped: list[dict]) -> Iterator[tuple[str, dict, str]]:
    """(where, a copy, its text) of each item that is an object with a non-blank `text_key`; the rest dropped."""
    for i, item in enumerate(items):
        where = f"{section}[{i}]"
        if not isinstance(item, dict):
            dropped.append({"where": where, "reason": "not an object"})
            continue
        text = item.get(text_key)
        if not isinstance(text, str) or not text.strip():
            dropped.append({"where": where, "reason": f"missing {text_key}"})
            continue
        yield where, dict(item), text


def _clean_sources(sources: object, where: str, ref_problem: RefCheck, dropped: list[dict]) -> list[str]:
    if sources is None:
        return []
    if not isinstance(sources, list):
        dropped.append({"where": f"{where}.sources", "value": _shown(sources), "reason": "not a list"})
        return []
    kept: list[str] = []
    for j, ref in enumerate(sources):
        problem = ref_problem(ref)
        if problem:
            dropped.append({"where": f"{where}.sources[{j}]", "value": _shown(ref), "reason": problem})
        elif ref not in kept:
            kept.append(ref)
    return kept


def _drop_schema_failures(validator: Draft202012Validator, digest: dict) -> list[dict]:
    """Remove list items (facts, uncertainties, documents) the schema still rejects."""
    dropped: list[dict] = []
    doomed: dict[str, set[int]] = {}
    for error in validator.iter_errors(digest):
        path = list(error.absolute_path)
        if len(path) >= 2 and path[0] in ("facts", "uncertainties", "documents") and isinstance(path[1], int):
            doomed.setdefault(path[0], set()).add(path[1])
            dropped.append({"where": json_path(path), "reason": error.message[:300]})
        elif path == ["documents"]:
            digest.pop("documents", None)
            dropped.append({"where": "documents", "reason": error.message[:300]})
    for section, indexes in doomed.items():
        digest[section] = [item for i, item in enumerate(digest[section]) if i not in indexes]
    return dropped


def _shown(value: object) -> str:
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))[:300]
