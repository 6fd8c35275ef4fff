"""Checks every digest before anything stores or shows it (SPEC §2.3).

JSON Schema first, then SourceRefs: in Task A every source names this file and
an existing span; in Task B every source already occurs in the input digests.
`errors` feed the one repair call; `sanitise` then removes what is still wrong
and records it, so a fact without a valid SourceRef never reaches the UI.
"""

import json
import re
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator

from .prompts import SCHEMA_VERSION, load_schema

SOURCE_REF = re.compile(r"^(?P<file>(?:(?!::).)+)::(?P<span>S[1-9][0-9]*)(?:::.*)?$", re.DOTALL)


@dataclass
class ValidationResult:
    digest: dict | None
    errors: list[str] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.digest is not None and not self.errors


def parse_model_json(text: str) -> dict:
    """One JSON object, tolerating ```json fences or prose around it."""
    stripped = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", stripped, re.DOTALL)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("output is not JSON: no JSON object found") from None
        try:
            value = json.loads(stripped[start : end + 1])
        except json.JSONDecodeError as exc:
            raise ValueError(f"output is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise ValueError("output must be a JSON object")
    return value


def ref_key(ref: str) -> str | None:
    """`file::S4` of a SourceRef (hint dropped), or None when it is not one."""
    match = SOURCE_REF.match(ref) if isinstance(ref, str) else None
    return f"{match['file']}::{match['span']}" if match else None


def sources_of(digest: dict) -> set[str]:
    refs = set()
    for item in digest.get("facts", []) + digest.get("uncertainties", []):
        for ref in item.get("sources", []):
            key = ref_key(ref)
            if key:
                refs.add(key)
    return refs


def check_per_file_digest(text: str, *, filename: str, format: str, span_ids: set[str]) -> ValidationResult:
    def ref_problem(ref: str) -> str | None:
        key = ref_key(ref)
        if key is None:
            return "not a SourceRef (<filename>::S<n>)"
        ref_file, span = key.split("::")
        if ref_file != filename:
            return f"names {ref_file!r}, not this file {filename!r}"
        if span not in span_ids:
            return f"unknown span {span}"
        return None

    def force(digest: dict) -> None:
        digest["mode"] = "single"
        digest["document"] = {"filename": filename, "format": format}

    return _check(text, "per_file_digest", ref_problem, force)


def check_aggregate_digest(text: str, *, allowed_sources: set[str], manifest: list[dict]) -> ValidationResult:
    def ref_problem(ref: str) -> str | None:
        key = ref_key(ref)
        if key is None:
            return "not a SourceRef (<filename>::S<n>)"
        if key not in allowed_sources:
            return "does not occur in the input digests"
        return None

    def force(digest: dict) -> None:
        digest["mode"] = "batch"
        digest["document"] = {"filename": "__BATCH__", "format": "mixed"}
        digest["batch"] = {"files": [{"filename": m["filename"], "format": m["format"]} for m in manifest]}

    return _check(text, "aggregate_digest", ref_problem, force)


def _check(text: str, schema_name: str, ref_problem, force) -> ValidationResult:
    try:
        digest = parse_model_json(text)
    except ValueError as exc:
        return ValidationResult(digest=None, errors=[str(exc)])
    validator = Draft202012Validator(load_schema(schema_name))
    errors = [_schema_error(e) for e in sorted(validator.iter_errors(digest), key=lambda e: list(e.path))]
    errors += [f"{where}: {ref!r} {problem}" for where, ref, problem in _bad_refs(digest, ref_problem)]
    if not errors:
        return ValidationResult(digest=digest)
    sanitised, dropped = _sanitise(digest, ref_problem)
    force(sanitised)
    sanitised.setdefault("schema_version", SCHEMA_VERSION)
    if list(validator.iter_errors(sanitised)):
        return ValidationResult(digest=None, errors=errors, dropped=dropped)
    return ValidationResult(digest=sanitised, errors=errors, dropped=dropped)


def _schema_error(error) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"{where}: {error.message}"


def _bad_refs(digest: dict, ref_problem):
    for section in ("facts", "uncertainties"):
        items = digest.get(section)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            sources = item.get("sources") if isinstance(item, dict) else None
            for j, ref in enumerate(sources if isinstance(sources, list) else []):
                problem = ref_problem(ref) if isinstance(ref, str) else "is not a string"
                if problem:
                    yield f"{section}[{i}].sources[{j}]", ref, problem


def _sanitise(digest: dict, ref_problem) -> tuple[dict, list[dict]]:
    """Remove invalid sources; drop facts left without one and malformed items."""
    dropped: list[dict] = []
    clean = dict(digest)
    for section in ("facts", "uncertainties"):
        kept = []
        items = digest.get(section) if isinstance(digest.get(section), list) else []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                dropped.append({"where": f"{section}[{i}]", "reason": "not an object"})
                continue
            item = dict(item)
            sources = []
            for j, ref in enumerate(item.get("sources") or []):
                problem = ref_problem(ref) if isinstance(ref, str) else "is not a string"
                if problem:
                    dropped.append(
                        {"where": f"{section}[{i}].sources[{j}]", "value": str(ref)[:300], "reason": problem}
                    )
                else:
                    sources.append(ref)
            item["sources"] = sources
            text_field = "claim" if section == "facts" else "text"
            if not isinstance(item.get(text_field), str) or not item[text_field].strip():
                dropped.append({"where": f"{section}[{i}]", "reason": f"missing {text_field}"})
                continue
            if section == "facts" and not sources:
                dropped.append(
                    {"where": f"{section}[{i}]", "reason": "no valid sources left", "claim": item["claim"][:300]}
                )
                continue
            if section == "facts" and item.get("kind") not in _KINDS:
                item["kind"] = "fact"
            if section == "facts" and item.get("reliability") not in ("high", "medium", "low"):
                item.pop("reliability", None)
            kept.append(item)
        clean[section] = kept
    return clean, dropped


_KINDS = {"fact", "analysis", "case", "definition", "constraint", "lead", "conflict"}
