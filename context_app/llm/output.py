"""A model's answer read as data: one JSON object, checked, with what sanitising removed (no Django here)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


@dataclass
class Checked:
    output: dict | None  # the (sanitised) answer; None when nothing usable is left
    errors: list[str] = field(default_factory=list)  # every problem found, for the repair note
    dropped: list[dict] = field(default_factory=list)  # what sanitising removed or replaced

    @property
    def valid(self) -> bool:
        return self.output is not None and not self.errors


def json_path(path: list) -> str:
    """A JSON path as `facts[2].sources[0]`, or `(root)`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def parse_model_json(text: str) -> dict:
    """The one JSON object in a model's answer, tolerating ```json fences or prose around it."""
    stripped = (text or "").strip()
    fenced = _FENCE.search(stripped)
    for candidate in ([fenced.group(1).strip()] if fenced else []) + [stripped]:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            raise ValueError(f"output must be one JSON object, not a JSON {_json_type(value)}")
        return value
    return _object_in_prose(stripped)


def _object_in_prose(text: str) -> dict:
    """The object that starts at the first "{", with prose allowed before and after it.

    Only the first "{" is tried: when that object is broken (often: cut off at the
    token limit), an inner fragment that happens to parse must not pass for the
    answer, and the decoder's own error is what the repair note needs.
    """
    start = text.find("{")
    if start < 0:
        raise ValueError("output is not JSON: no JSON object found")
    decoder = json.JSONDecoder()
    try:
        value, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        cut_off = " (the output seems cut off)" if exc.pos >= len(text) - 1 else ""
        raise ValueError(f"output is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{cut_off}") from None
    if _holds_another_object(decoder, text, end):
        raise ValueError("output is not JSON: it holds more than one JSON object, expected exactly one")
    return value


def _holds_another_object(decoder: json.JSONDecoder, text: str, position: int) -> bool:
    position = text.find("{", position)
    while position >= 0:
        try:
            value, _ = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            return True
        position = text.find("{", position + 1)
    return False


def _json_type(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
