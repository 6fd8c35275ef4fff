"""The task envelopes of seed 000 §4, and their inverse (read by the offline provider)."""

import json
import re

_SPAN_LINE = re.compile(r"^\[(S[1-9][0-9]*)\] ?(.*)$")


def per_file_envelope(filename: str, format: str, spans: list[dict]) -> str:
    lines = ["TASK: PER_FILE_DIGEST", f"FILE: {filename}", f"FORMAT: {format}", "SOURCE_SPANS:"]
    for span in spans:
        first, *rest = span["text"].split("\n")
        lines.append(f"[{span['span_id']}] {first}")
        # Continuation lines are indented so a line inside a span can never read as
        # a new "[S9]" marker or as END_FILE.
        lines.extend(f"  {line}" for line in rest)
    lines.append("END_FILE")
    return "\n".join(lines)


def parse_per_file_envelope(prompt: str) -> tuple[str, str, list[dict]]:
    lines = prompt.split("\n")
    header = dict(line.split(": ", 1) for line in lines[1:3])
    spans: list[dict] = []
    for line in lines[4:]:
        if line == "END_FILE":
            break
        if line.startswith("  ") and spans:
            spans[-1]["text"] += "\n" + line[2:]
            continue
        match = _SPAN_LINE.match(line)
        if match:
            spans.append({"span_id": match.group(1), "text": match.group(2)})
    return header["FILE"], header["FORMAT"], spans


def aggregate_envelope(manifest: list[dict], digests: list[dict]) -> str:
    lines = ["TASK: AGGREGATE_DIGEST", "MANIFEST:"]
    for entry in manifest:
        lines.append(f"- filename: {json.dumps(entry['filename'], ensure_ascii=False)}")
        lines.append(f"  format: {entry['format']}")
    lines.append("")
    lines.append("FILE_DIGESTS:")
    lines.extend(json.dumps(digest, ensure_ascii=False, separators=(",", ":")) for digest in digests)
    lines.append("END_FILE_DIGESTS")
    return "\n".join(lines)


def parse_aggregate_envelope(prompt: str) -> tuple[list[dict], list[dict]]:
    manifest: list[dict] = []
    digests: list[dict] = []
    section = None
    for line in prompt.split("\n"):
        if line in ("MANIFEST:", "FILE_DIGESTS:"):
            section = line
        elif line == "END_FILE_DIGESTS":
            break
        elif section == "MANIFEST:" and line.startswith("- filename: "):
            manifest.append({"filename": json.loads(line[len("- filename: ") :])})
        elif section == "MANIFEST:" and line.startswith("  format: ") and manifest:
            manifest[-1]["format"] = line[len("  format: ") :]
        elif section == "FILE_DIGESTS:" and line.strip():
            digests.append(json.loads(line))
    return manifest, digests
