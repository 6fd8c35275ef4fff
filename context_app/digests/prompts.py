"""Prompt files and JSON Schemas under settings.PROMPTS_DIR, read once per process.

`prompt_version()` reads settings.CONTEXT_PREPROCESS_PROMPT_VERSION on every call,
so an override in a test or a deployment is seen at once.
"""

import json
from functools import cache
from pathlib import Path
from typing import Literal

from django.conf import settings

SCHEMA_VERSION = "context_digest.v1.4.1"

TaskName = Literal["per_file", "aggregate"]
_TASKS: tuple[str, ...] = ("per_file", "aggregate")


def prompt_version() -> str:
    return settings.CONTEXT_PREPROCESS_PROMPT_VERSION


def system_prompt(task: TaskName) -> str:
    """The system prompt of a task: the common rules, then the task's own."""
    if task not in _TASKS:
        raise ValueError(f"unknown digest task {task!r}; known: {', '.join(_TASKS)}")
    return _system_prompt(Path(settings.PROMPTS_DIR), task)


def load_schema(name: str) -> dict:
    """A JSON Schema by name, e.g. "per_file_digest" → prompts/schemas/per_file_digest.schema.json."""
    return _load_schema(Path(settings.PROMPTS_DIR), name)


# Cached on the directory too, so pointing PROMPTS_DIR elsewhere reads the new files.
@cache
def _system_prompt(directory: Path, task: str) -> str:
    common = (directory / "context_preprocess_common.system.txt").read_text(encoding="utf-8")
    specific = (directory / f"context_preprocess_{task}.system.txt").read_text(encoding="utf-8")
    return f"{common.strip()}\n\n{specific.strip()}\n"


@cache
def _load_schema(directory: Path, name: str) -> dict:
    return json.loads((directory / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
