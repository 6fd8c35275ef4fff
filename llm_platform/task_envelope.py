"""The task section of an IR envelope for structured model tasks (the other apps' tasks).

An envelope (llm_platform.ir) carries the evidence as ranked chunks; its task
text names the task and carries the structured inputs as JSON, last:

    === TASK ===
    TASK: SOME_TASK
    <instructions>
    INPUT_JSON:
    {"question": "...", "items": [...]}

A model reads it as text; the offline handlers read it back with `read_task`
and `evidence_chunks`, so both answer from exactly what the prompt contains.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from llm_platform.ir.render import OMITTED_MARKER, TASK_HEADER, TRUNCATED_MARKER

INPUT_MARKER = "INPUT_JSON:"
_TASK_LINE = re.compile(r"^TASK: *([A-Z_]+) *$", re.M)
_CHUNK = re.compile(r"^\[CHUNK\]\n(?P<header>.*?)\n---\n(?P<body>.*?)\n\[/CHUNK\]$", re.M | re.S)


def task_text(name: str, instructions: str, inputs: dict) -> str:
    """The task section's text: the task line, the instructions, then the inputs as one JSON line."""
    if not re.fullmatch(r"[A-Z_]+", name):
        raise ValueError(f"task names are upper-case words joined by _, got {name!r}")
    return f"TASK: {name}\n{instructions.strip()}\n{INPUT_MARKER}\n{json.dumps(inputs, ensure_ascii=False)}"


def task_name(prompt: str) -> str:
    """`NAME` of the prompt's task: its first line (seed 000 envelopes) or its task section's first line."""
    first_line = prompt.split("\n", 1)[0]
    if first_line.startswith("TASK:"):
        return first_line.removeprefix("TASK:").strip()
    _, header, section = prompt.rpartition(f"{TASK_HEADER}\n")
    match = _TASK_LINE.match(section) if header else None
    return match.group(1) if match else ""


def read_task(prompt: str) -> tuple[str, dict]:
    """The task name and its INPUT_JSON (the JSON value after the marker; a repair note may follow it)."""
    _, marker, tail = prompt.rpartition(f"\n{INPUT_MARKER}\n")
    if not marker:
        raise ValueError("the prompt has no INPUT_JSON")
    inputs, _end = json.JSONDecoder().raw_decode(tail)
    if not isinstance(inputs, dict):
        raise ValueError("INPUT_JSON must be an object")
    return task_name(prompt), inputs


@dataclass(frozen=True)
class EvidenceChunk:
    anchor: str
    title: str
    locator: str
    text: str  # "" when the budget omitted the chunk's text


def evidence_chunks(prompt: str) -> list[EvidenceChunk]:
    """The envelope's chunks in rank order, as rendered (omitted ones have no text)."""
    content = prompt.rpartition(f"{TASK_HEADER}\n")[0] or prompt
    chunks = []
    for match in _CHUNK.finditer(content):
        header = dict(line.split(": ", 1) for line in match.group("header").split("\n") if ": " in line)
        body = match.group("body")
        if body == OMITTED_MARKER:
            body = ""
        body = body.removesuffix(f"\n{TRUNCATED_MARKER}")
        chunks.append(
            EvidenceChunk(
                anchor=header.get("anchor", ""),
                title=header.get("title", ""),
                locator=header.get("locator", ""),
                text=body,
            )
        )
    return chunks
