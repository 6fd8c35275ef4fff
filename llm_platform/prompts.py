"""The one prompt loader: system prompts, JSON Schemas and prompt sheets under settings.PROMPTS_DIR.

Files are read once per process and directory (pointing PROMPTS_DIR elsewhere
reads the new files). Prompt sheets are Django templates rendered without HTML
escaping: their output is a prompt, not a page. A comment in a sheet that spans
lines needs `{% comment %}…{% endcomment %}` (`{# #}` is one line only).
"""

import json
from functools import cache
from pathlib import Path

from django.conf import settings
from django.template import Context, Engine
from jsonschema import Draft202012Validator


def prompts_dir() -> Path:
    return Path(settings.PROMPTS_DIR)


def system_prompt(*files: str) -> str:
    """`prompts/<file>.system.txt`; several files are joined in order, a blank line apart."""
    return _system_prompt(prompts_dir(), files)


def load_schema(name: str) -> dict:
    """`prompts/schemas/<name>.schema.json`."""
    return _load_schema(prompts_dir(), name)


def schema_validator(name: str) -> Draft202012Validator:
    return _validator(prompts_dir(), name)


def render_sheet(name: str, context: dict) -> str:
    """`prompts/sheets/<name>.txt` rendered with `context` (no autoescape).

    The Context says so too: a template of a bare Engine renders with its Context's
    autoescape (default on), not the engine's, so `R&D` would reach the model as `R&amp;D`.
    """
    template = _sheet_engine(prompts_dir() / "sheets").get_template(f"{name}.txt")
    return template.render(Context(context, autoescape=False)).strip()


def style_fragment(style: str) -> str:
    """`prompts/sheets/styles/<style>.md`, or "" when there is no such style."""
    path = prompts_dir() / "sheets" / "styles" / f"{style}.md"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


@cache
def _system_prompt(directory: Path, files: tuple[str, ...]) -> str:
    texts = [(directory / f"{name}.system.txt").read_text(encoding="utf-8") for name in files]
    if len(texts) == 1:
        return texts[0]
    return "\n\n".join(text.strip() for text in texts) + "\n"


@cache
def _load_schema(directory: Path, name: str) -> dict:
    return json.loads((directory / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))


@cache
def _validator(directory: Path, name: str) -> Draft202012Validator:
    return Draft202012Validator(_load_schema(directory, name))


@cache
def _sheet_engine(directory: Path) -> Engine:
    return Engine(dirs=[str(directory)], autoescape=False)
