"""Readers of decoded text: Markdown, CSV, JSON and plain text (HTML has html_reader)."""

import csv
import io
import json
import re

from .blocks import Block, _paragraphs, _path
from .decoding import normalise_text
from .limits import ExtractionError, _Budget, _short

CSV_ROWS_PER_SPAN = 40


def _atx_heading(line: str) -> tuple[int, str] | None:
    """`## Title ##` → (2, "Title"). By hand, not a regex: `^(#{1,6})\\s+(.*?)\\s*#*\\s*$`
    backtracked cubically on a heading followed by thousands of spaces (7.5 KB took 34 s)."""
    level = len(line) - len(line.lstrip("#"))
    rest = line[level:]
    if not 1 <= level <= 6 or not rest[:1].isspace():
        return None
    return level, rest.strip().rstrip("#").rstrip()  # without a closing run of #s


def _is_setext_underline(line: str) -> bool:
    stripped = line.rstrip()
    return bool(stripped) and (set(stripped) == {"="} or set(stripped) == {"-"})


FRONT_MATTER_MAX_LINES = 50


def _front_matter(lines: list[str]) -> tuple[str, int] | None:
    """A note's YAML front matter ("---" / "title: Travel policy" / "author: Ruth Lind" / "---"), said as one
    record ("title: Travel policy; author: Ruth Lind", as a CSV's row is), and the index of its closing line; None
    when the note has none. A nested line (indented, a list's "- item") goes on its field's value."""
    if not lines or lines[0].strip() != "---":
        return None
    fields: list[list[str]] = []
    for end, line in enumerate(lines[1:FRONT_MATTER_MAX_LINES], start=1):
        if line.strip() in ("---", "..."):
            said = "; ".join(f"{key}: {' '.join(value.split())}" for key, value in fields if value.strip())
            return (said, end) if said else None
        key, colon, value = line.partition(":")
        if line[:1] in (" ", "\t", "-") and fields:
            fields[-1][1] += f" {line.strip().removeprefix('- ')}"
        elif colon and key.strip() and " " not in key.strip():
            fields.append([key.strip(), value.strip().replace(";", ",")])
        elif line.strip():
            return None  # not YAML: a thematic break, then text
    return None


def _markdown_blocks(text: str, budget: "_Budget") -> list[Block]:
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    lines = normalise_text(text).split("\n")
    paragraph: list[str] = []
    front_matter = _front_matter(lines)
    if front_matter is not None:
        said, end = front_matter
        blocks.append(Block(said, "front matter", new_section=True))
        lines = lines[end + 1 :]

    def flush():
        if paragraph:
            blocks.append(Block("\n".join(paragraph), _path(headings)))
            paragraph.clear()

    for index, line in enumerate(lines):
        if index % 256 == 0:
            budget.check_time()
        atx = _atx_heading(line)
        setext = index + 1 < len(lines) and line.strip() and not paragraph and _is_setext_underline(lines[index + 1])
        if atx:
            flush()
            level, title = atx
            headings = [h for h in headings if h[0] < level] + [(level, title)]
            blocks.append(Block(line, _path(headings), new_section=True))
        elif setext:
            level = 1 if lines[index + 1].startswith("=") else 2
            headings = [h for h in headings if h[0] < level] + [(level, line.strip())]
            blocks.append(Block(line, _path(headings), new_section=True))
        elif _is_setext_underline(line) and blocks and blocks[-1].new_section and not paragraph:
            blocks[-1].text += "\n" + line  # the underline of a setext heading
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
    flush()
    return blocks


def _csv_blocks(text: str, budget: _Budget) -> list[Block]:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise ExtractionError("corrupt", f"CSV could not be read: {_short(exc)}") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return []
    # A quoted cell may hold line breaks ("We were charged twice.\nThe second charge …"): a row is one line. Its
    # "; " would read as the start of the row's next field ("… can log in; the app shows …"): a comma instead.
    # A row's empty last cells are left out: "status: open; resolution_hours: " loses its space at the line's end.
    rows = [[" ".join(cell.split()).replace("; ", ", ") for cell in row] for row in rows]
    rows = [row[: max(i + 1 for i, cell in enumerate(row) if cell)] for row in rows]
    header, body = rows[0], rows[1:]
    blocks = [Block(", ".join(header), "header", new_section=True)]
    for first in range(0, len(body), CSV_ROWS_PER_SPAN):
        budget.check_time()
        chunk = body[first : first + CSV_ROWS_PER_SPAN]
        lines = [
            "; ".join(f"{header[i] if i < len(header) else f'column {i + 1}'}: {cell}" for i, cell in enumerate(row))
            for row in chunk
        ]
        # +2: the header is row 1 and rows count from 1
        locator = f"rows {first + 2}-{first + len(chunk) + 1}"
        blocks.append(Block("\n".join(lines), locator, new_section=True))
    return blocks


def _json_blocks(text: str, budget: "_Budget") -> list[Block]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        value = _json_lines(text)
        if value is None:
            raise ExtractionError("corrupt", f"invalid JSON: {_short(exc)}") from None
    except RecursionError as exc:
        raise ExtractionError("corrupt", f"invalid JSON: {_short(exc)}") from None
    if isinstance(value, dict):
        items = [
            (f"$.{key}" if re.fullmatch(r"\w+", str(key)) else f"$[{json.dumps(key)}]", v) for key, v in value.items()
        ]
    elif isinstance(value, list):
        items = [(f"$[{index}]", v) for index, v in enumerate(value)]
    else:
        items = [("$", value)]
    blocks = []
    for index, (path, item) in enumerate(items):
        if index % 256 == 0:
            budget.check_time()
        try:
            rendered = json.dumps(item, ensure_ascii=False, indent=2) if isinstance(item, dict | list) else str(item)
        except RecursionError:
            raise ExtractionError("too_large", "JSON is nested too deeply") from None
        label = path.rsplit(".", 1)[-1] if path.startswith("$.") else path
        blocks.append(Block(f"{label}: {rendered}", path, new_section=True))
    return blocks


def _json_lines(text: str) -> list | None:
    """The values of a JSON Lines file (an export of records, one a line: a chat log, an event stream), as the
    list they make; None when some line is no JSON value, or there is a single line (then it is plain invalid)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    try:
        return [json.loads(line) for line in lines]
    except (json.JSONDecodeError, RecursionError):
        return None


def _text_blocks(text: str, budget: "_Budget") -> list[Block]:
    budget.check_time()
    return [Block(paragraph, "") for paragraph in _paragraphs(normalise_text(text))]
