"""The task envelopes of seed 000 §4, and their inverse (read by the offline provider).

Task A lists one file's spans as `[S1] text`. A span's text may span several
lines; every continuation line is indented by two spaces, so no line inside a
span can read as a new `[S9]` marker or as `END_FILE` (both are only recognised
at column 0). The parser removes exactly those two spaces again.

Task B lists a YAML-style manifest (filenames JSON-quoted, because a display
name may contain ": " or "#") and one compact JSON digest per line.
"""

import json
import re

PER_FILE_TASK = "TASK: PER_FILE_DIGEST"
AGGREGATE_TASK = "TASK: AGGREGATE_DIGEST"
CONTINUATION = "  "

_SPAN_LINE = re.compile(r"^\[(S[1-9][0-9]*)\](?: (.*))?$")


class EnvelopeError(ValueError):
    """The text is not an envelope this module wrote."""


# --- Task A --------------------------------------------------------------------


def per_file_envelope(filename: str, format: str, spans: list[dict]) -> str:
    lines = [PER_FILE_TASK, f"FILE: {filename}", f"FORMAT: {format}", "SOURCE_SPANS:"]
    for span in spans:
        first, *rest = span["text"].split("\n")
        lines.append(f"[{span['span_id']}] {first}")
        lines.extend(CONTINUATION + line for line in rest)
    lines.append("END_FILE")
    return "\n".join(lines)


def parse_per_file_envelope(prompt: str) -> tuple[str, str, list[dict]]:
    """(filename, format, [{span_id, text}]) of a Task A envelope."""
    lines = prompt.split("\n")
    if len(lines) < 5 or lines[0] != PER_FILE_TASK or lines[3] != "SOURCE_SPANS:":
        raise EnvelopeError("not a PER_FILE_DIGEST envelope")
    filename = _header(lines[1], "FILE")
    file_format = _header(lines[2], "FORMAT")
    spans: list[dict] = []
    for line in lines[4:]:
        if line == "END_FILE":
            return filename, file_format, spans
        if line.startswith(CONTINUATION) and spans:
            spans[-1]["text"] += "\n" + line[len(CONTINUATION) :]
            continue
        match = _SPAN_LINE.match(line)
        if not match:
            raise EnvelopeError(f"unexpected line in SOURCE_SPANS: {line[:80]!r}")
        spans.append({"span_id": match.group(1), "text": match.group(2) or ""})
    raise EnvelopeError("PER_FILE_DIGEST envelope has no END_FILE line")


def _header(line: str, name: str) -> str:
    prefix = f"{name}: "
    if not line.startswith(prefix):
        raise EnvelopeError(f"expected a {name}: line, got {line[:80]!r}")
    return line[len(prefix) :]


# --- Task B --------------------------------------------------------------------


def aggregate_envelope(manifest: list[dict], digests: list[dict]) -> str:
    lines = [AGGREGATE_TASK, "MANIFEST:"]
    for entry in manifest:
        lines.append(f"- filename: {json.dumps(entry['filename'], ensure_ascii=False)}")
        lines.append(f"  format: {json.dumps(entry['format'], ensure_ascii=False)}")
    lines.append("")
    lines.append("FILE_DIGESTS:")
    # json.dumps escapes newlines, so each digest is exactly one line.
    lines.extend(json.dumps(digest, ensure_ascii=False, separators=(",", ":")) for digest in digests)
    lines.append("END_FILE_DIGESTS")
    return "\n".join(lines)


def parse_aggregate_envelope(prompt: str) -> tuple[list[dict], list[dict]]:
    """(manifest [{filename, format}], digests) of a Task B envelope."""
    lines = prompt.split("\n")
    if not lines or lines[0] != AGGREGATE_TASK:
        raise EnvelopeError("not an AGGREGATE_DIGEST envelope")
    manifest: list[dict] = []
    digests: list[dict] = []
    section = ""
    for number, line in enumerate(lines[1:], start=2):
        if line in ("MANIFEST:", "FILE_DIGESTS:"):
            section = line
        elif line == "END_FILE_DIGESTS":
            return manifest, digests
        elif not line.strip():
            continue
        elif section == "MANIFEST:" and line.startswith("- filename: "):
            manifest.append({"filename": _scalar(line[len("- filename: ") :])})
        elif section == "MANIFEST:" and line.startswith("  format: ") and manifest:
            manifest[-1]["format"] = _scalar(line[len("  format: ") :])
        elif section == "FILE_DIGESTS:":
            try:
                digests.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise EnvelopeError(f"line {number}: a file digest is not JSON ({exc.msg})") from None
        else:
            raise EnvelopeError(f"line {number}: unexpected {line[:80]!r}")
    raise EnvelopeError("AGGREGATE_DIGEST envelope has no END_FILE_DIGESTS line")


def _scalar(value: str) -> str:
    """A manifest value: JSON-quoted as written here, or plain as a person might write it."""
    return json.loads(value) if value.startswith('"') else value.strip()
