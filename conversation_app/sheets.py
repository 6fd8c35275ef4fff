"""Prompt sheets (seed 003 §4.1.5): the chat's baseline inclusions, worded and ordered in text files.

A sheet is a Django template under prompts/sheets/, rendered without HTML
escaping (the output is a prompt, not a page), so wording and order change
without code.
"""

from functools import cache
from pathlib import Path

from django.conf import settings
from django.template import Context, Engine


@cache
def _engine(directory: Path) -> Engine:
    return Engine(dirs=[str(directory)], autoescape=False)


def render_sheet(name: str, context: dict) -> str:
    directory = Path(settings.PROMPTS_DIR) / "sheets"
    return _engine(directory).get_template(f"{name}.txt").render(Context(context)).strip()


def style_fragment(style: str) -> str:
    path = Path(settings.PROMPTS_DIR) / "sheets" / "styles" / f"{style}.md"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""
