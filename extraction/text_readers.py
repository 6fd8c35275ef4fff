"""Readers of decoded text: Markdown, CSV, JSON and plain text (HTML has html_reader)."""

import csv
import io
import json
import re
from typing import TYPE_CHECKING

from llm_platform.prose import MAIL_FIELDS, closes_fence, code_fence

from .blocks import Block, _paragraphs, _path, heading_level, section_level, section_number
from .decoding import normalise_text
from .limits import ExtractionError, _Budget, _short
from .spans import SPAN_MAX_CHARS

if TYPE_CHECKING:
    from email.message import EmailMessage

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
            item = _yaml_scalar(line.strip().removeprefix("- "))
            fields[-1][1] += f", {item}" if fields[-1][1] else item
        elif colon and key.strip() and " " not in key.strip():
            fields.append([key.strip(), _yaml_value(value.strip()).replace(";", ",")])
        elif line.strip():
            return None  # not YAML: a thematic break, then text
    return None


def _yaml_value(value: str) -> str:
    """A front matter field's value as words: a list's items ("[Priya Nair, Tom Becker]") joined by commas, a
    quoted string ("\"ADR 7: Queues\"") without its quotes."""
    if value.startswith("[") and value.endswith("]"):
        return ", ".join(_yaml_scalar(item.strip()) for item in value[1:-1].split(",") if item.strip())
    return _yaml_scalar(value)


def _yaml_scalar(value: str) -> str:
    quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'"
    return value[1:-1] if quoted else value


def _notebook_markdown(text: str) -> str | None:
    """A Jupyter notebook (.ipynb, JSON of cells) as the Markdown it reads as: its Markdown cells as written, a
    code cell's source fenced as code, the text it printed after it; None for a text that is no notebook."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        notebook = json.loads(text)
    except ValueError:
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    parts = []
    for cell in (cell for cell in cells if isinstance(cell, dict)):
        source = _cell_text(cell.get("source"))
        if cell.get("cell_type") != "code":
            parts.append(source)
            continue
        if source.strip():
            parts.append(f"```\n{source}\n```")
        for output in (output for output in cell.get("outputs") or [] if isinstance(output, dict)):
            data = output.get("data")
            parts.append(_cell_text(output.get("text") or (data.get("text/plain") if isinstance(data, dict) else "")))
    return "\n\n".join(part.strip("\n") for part in parts if part.strip())


def _cell_text(value: object) -> str:
    """A notebook's text, kept as a string or as a list of its lines."""
    if isinstance(value, list):
        return "".join(line for line in value if isinstance(line, str))
    return value if isinstance(value, str) else ""


def _markdown_blocks(text: str, budget: "_Budget") -> list[Block]:
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    notebook = _notebook_markdown(text)
    text = text if notebook is None else notebook  # a notebook without text reads as none, not as its JSON
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

    fence = ""  # the fence of the code block being read ("```", "~~~"): its lines are code, never headings
    for index, line in enumerate(lines):
        if index % 256 == 0:
            budget.check_time()
        if fence or code_fence(line):
            if not fence:
                flush()
                fence = code_fence(line)
            elif closes_fence(line, fence):
                fence = ""
            paragraph.append(line)
            if not fence:
                flush()
            continue
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
    lines = [
        "; ".join(f"{header[i] if i < len(header) else f'column {i + 1}'}: {cell}" for i, cell in enumerate(row))
        for row in body
    ]
    blocks = [Block(", ".join(header), "header", new_section=True)]
    first = 0
    while first < len(lines):
        budget.check_time()
        # Rows up to a span's size, so that each span's locator names its own rows: a block the span
        # assembly had to cut would give every piece the whole block's "rows 2-41".
        last, size = first + 1, len(lines[first])
        while last < min(len(lines), first + CSV_ROWS_PER_SPAN) and size + 1 + len(lines[last]) <= SPAN_MAX_CHARS:
            size += 1 + len(lines[last])
            last += 1
        # +2: the header is row 1 and rows count from 1
        blocks.append(Block("\n".join(lines[first:last]), f"rows {first + 2}-{last + 1}", new_section=True))
        first = last
    return blocks


JSON_ROOT = "$"  # a JSON file's span is located by its value's path from the root: "$.notes", "$[2]"


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
            (f"{JSON_ROOT}.{key}" if re.fullmatch(r"\w+", str(key)) else f"{JSON_ROOT}[{json.dumps(key)}]", v)
            for key, v in value.items()
        ]
    elif isinstance(value, list):
        items = [(f"{JSON_ROOT}[{index}]", v) for index, v in enumerate(value)]
    else:
        items = [(JSON_ROOT, value)]
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
    text = normalise_text(text)
    message = _mail_message(text)
    if message is None:
        text, underlined = _without_rules(text)
        return _plain_text_blocks(_paragraphs(text), underlined)
    # The subject heads the message as a heading does its section (it says what the message is about and answers
    # nothing); the rest of the header is one record under it (who wrote to whom, when), then the body.
    subject = _header_value(text, "Subject")
    fields = "; ".join(
        f"{name}: {_header_value(text, name)}" for name in MAIL_FIELDS if name != "Subject" and message[name]
    )
    heading = [Block(subject, subject, new_section=True)] if subject else []
    record = [Block(fields, subject, new_section=not subject)] if fields else []
    return [*heading, *record, *(Block(paragraph, subject) for paragraph in _paragraphs(_mail_body(message, text)))]


# What a plain-text file draws a line with: a rule across the page, or a heading's underline.
RULE_CHARACTERS = frozenset("-=_*~─━═")
MAX_UNDERLINED_WORDS = 16  # a longer line over a rule is a paragraph's, whatever the rule under it


def _is_rule(line: str) -> bool:
    return len(line.strip()) >= 3 and set(line.strip()) <= RULE_CHARACTERS


def _without_rules(text: str) -> tuple[str, frozenset[str]]:
    """`text` with each line that only draws a rule ("-----", "=====") a paragraph break, and the lines a rule
    underlines, alone on their line: headings, however long or closed ("4. REPAIRS PERFORMANCE - QUARTER 2 OF
    2026/27 (JULY TO SEPTEMBER 2026)" between two rules, a title over "=====" as in Markdown)."""
    lines = text.split("\n")
    ruled = [_is_rule(line) for line in lines]
    underlined = frozenset(
        line.strip()
        for index, line in enumerate(lines[:-1])
        if ruled[index + 1]
        and line.strip()
        and not ruled[index]
        and (index == 0 or ruled[index - 1] or not lines[index - 1].strip())
        and len(line.split()) <= MAX_UNDERLINED_WORDS
    )
    return "\n".join("" if rule else line for line, rule in zip(lines, ruled, strict=True)), underlined


def _plain_text_blocks(paragraphs: list[str], underlined: frozenset[str] = frozenset()) -> list[Block]:
    """A plain-text file's paragraphs under the headings it writes as lines of their own: the first line when
    it heads the file (its title), then numbered and unnumbered headings ("3. Fastline", "Actions") and the lines
    a rule underlines (`underlined`) that head the paragraphs after them, as Markdown's do. A paragraph of short
    lines is a list, not a heading and its section ("Grace Okafor" over "Tomasz Wiśniewski")."""
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    for index, paragraph in enumerate(paragraphs):
        first, _, rest = paragraph.partition("\n")
        level = heading_level(first)
        if level is None and first.strip() in underlined and not first[:1].isspace():
            level = section_level(first)
        heads = bool(rest.strip()) or index + 1 < len(paragraphs)
        if level is None or not heads or (rest.strip() and all(heading_level(line) for line in rest.splitlines())):
            blocks.append(Block(paragraph, _path(headings)))
            continue
        level = 1 if index == 0 and not section_number(first) else level
        headings = [h for h in headings if h[0] < level] + [(level, first.strip())]
        blocks.append(Block(first, _path(headings), new_section=True))
        if rest.strip():
            blocks.append(Block(rest.strip("\n"), _path(headings)))
    return blocks


def _is_header_field(line: str) -> bool:
    """An e-mail header's field line: a name of ASCII letters, digits and hyphens, a colon, then a space."""
    name, colon, value = line.partition(":")
    return bool(colon and name[:1].isalpha() and name.isascii() and name.replace("-", "").isalnum()) and (
        value[:1] in (" ", "\t")
    )


def _mail_message(text: str) -> "EmailMessage | None":
    """The e-mail a text is (a saved .eml, a message pasted into a .txt), read by the standard library's parser;
    None unless the text opens with a header block (fields until the first blank line) that holds a sender or a
    subject and another field a mail program shows."""
    head = text.split("\n\n", 1)[0].split("\n")
    if not _is_header_field(head[0]) or not all(_is_header_field(line) or line[:1] in " \t" for line in head):
        return None
    # Imported here: every file is read in a fresh child process, which would load the package for every text.
    import email
    from email import policy

    message = email.message_from_string(text, policy=policy.default)
    shown = [name for name in MAIL_FIELDS if message[name]]
    return message if len(shown) >= 2 and ({"From", "Subject"} & set(shown)) else None


def _header_value(text: str, name: str) -> str:
    """A header field as its sender wrote it ("To: Project team", not the parser's '"Project team"'), its
    encoded words decoded ("=?utf-8?q?Gr=C3=BC=C3=9Fe?=" → "Grüße") and its folds unfolded."""
    from email.header import decode_header, make_header
    from email.parser import HeaderParser

    raw = HeaderParser().parsestr(text, headersonly=True)[name] or ""
    try:
        value = str(make_header(decode_header(raw)))
    except (LookupError, ValueError):  # an unknown charset: the field as written
        value = raw
    return " ".join(value.replace(";", ",").split())


# Transfer encodings that leave a part's text as written in the file (base64 and quoted-printable do not).
UNENCODED = ("7bit", "8bit", "binary")


def _mail_body(message: "EmailMessage", text: str) -> str:
    """The message's text: its plain part (a MIME message's alternative or first attachment-free text); else
    what follows its header, as written."""
    part = message.get_body(preferencelist=("plain",))
    if part is not None:
        if part.get("Content-Transfer-Encoding", "7bit").strip().lower() in UNENCODED:
            # The file's own decoding already read these characters; the parser, handed a str, would read them
            # again as its declared charset or ASCII ("-80 °C" came out "-80 �C").
            return normalise_text(part.get_payload())
        try:
            return normalise_text(part.get_content())
        except (LookupError, ValueError):  # an unknown charset or a broken transfer encoding
            pass
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""
