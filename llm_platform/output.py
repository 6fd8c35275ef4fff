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


_NOT_BLANK = re.compile(r"[^ \t\r\n]")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_LOW_SURROGATE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def partial_string_field(text: str, key: str) -> str:
    """The value of the top-level string field `key` of a JSON object still being received, as far as it goes.

    `text` is a prefix of a model's answer (prose or a ```json fence before the object
    are passed over); "" until the field's value starts. An escape cut off at the end
    (`\\`, `\\u00`, half a surrogate pair) is left for the next call, so the result only grows.
    """
    depth, index, length = 0, 0, len(text)
    last_string = None  # the last complete string read at depth 1: a key when a ":" follows
    while index < length:
        char = text[index]
        if char == '"':
            value, index, closed = _read_string(text, index + 1)
            if not closed:
                return ""
            last_string = value if depth == 1 and _next_char(text, index) == ":" else None
            continue
        if char == ":" and last_string is not None:
            # The key is read: its value starts after the blanks; if it is not a string, it is not ours.
            following = _next_char(text, index + 1)
            if last_string == key and following == '"':
                start = text.index('"', index + 1)
                return _read_string(text, start + 1)[0]
            last_string = None
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        index += 1
    return ""


def _next_char(text: str, index: int) -> str:
    """The first character at or after `index` that is not a JSON blank ("" at the end)."""
    match = _NOT_BLANK.search(text, index)
    return match.group() if match else ""


def _read_string(text: str, index: int) -> tuple[str, int, bool]:
    """The JSON string starting at `index` (after its opening quote): (its value so far, the index after it,
    whether its closing quote was read)."""
    out: list[str] = []
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            return "".join(out), index + 1, True
        if char != "\\":
            out.append(char)
            index += 1
            continue
        if index + 1 >= length:
            break
        code = text[index + 1]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            index += 2
            continue
        if code != "u" or index + 6 > length:
            break
        digits = text[index + 2 : index + 6]
        if not _HEX4.fullmatch(digits):
            break
        unit = int(digits, 16)
        if 0xD800 <= unit < 0xDC00:  # a high surrogate: its low half must follow
            low = text[index + 6 : index + 12]
            if not _LOW_SURROGATE.fullmatch(low):
                break
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (int(low[2:], 16) - 0xDC00)))
            index += 12
            continue
        out.append(chr(unit))
        index += 6
    return "".join(out), length, False
