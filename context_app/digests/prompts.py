"""Prompt files and JSON Schemas under prompts/, read once per process."""

import json
from functools import cache
from typing import Literal

from django.conf import settings

PROMPT_VERSION = "v1.4"
SCHEMA_VERSION = "context_digest.v1.4.1"

TaskName = Literal["per_file", "aggregate"]


@cache
def system_prompt(task: TaskName) -> str:
    directory = settings.PROMPTS_DIR
    common = (directory / "context_preprocess_common.system.txt").read_text(encoding="utf-8")
    specific = (directory / f"context_preprocess_{task}.system.txt").read_text(encoding="utf-8")
    return f"{common.strip()}\n\n{specific.strip()}\n"


@cache
def load_schema(name: str) -> dict:
    return json.loads((settings.PROMPTS_DIR / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
