"""A table inside a document's text, its rows said as records.

The extractor writes a DOCX's, a web page's or a PDF's ruled table a row a line, its cells joined by
" | ", and keeps a Markdown table as written ("| a | b |" under a "|---|" line). A row alone ("Write the
design | Sam Okafor | 20 November 2026") is no statement: it names neither what its cells are nor whose
they are. Under its header it is said the way a CSV's spans say a row ("Action: Write the design; Owner:
Sam Okafor; Due: 20 November 2026", llm_platform.prose.csv_row_fields), so digests, research findings and
grounding read both kinds of table alike.

A table is taken as one only when its first row reads as a header (two to twelve short names, none
starting with a figure: a first row of figures is data, and a table without a header is left as it is; a Markdown
table's rule line marks its header, whatever it holds) and the rows under it have as many cells.
"""

from __future__ import annotations

import itertools

from .prose import MAX_COLUMN_NAME_CHARS

MAX_COLUMNS = 12


def said_as_records(text: str) -> str:
    """`text` with each table's rows said as records under its header, a record a line; all else as it was."""
    lines = text.split("\n")
    said: list[str] = []
    start = 0
    while start < len(lines):
        columns = _fixed_width_columns(lines[start + 1]) if start + 1 < len(lines) else []
        if columns:
            header = [_sliced(lines[start], columns, i) for i in range(len(columns))]
            rows, end = _fixed_width_rows(lines, start + 2, columns)
            if rows and _is_header(header, rows[0]):
                said.extend(_record(header, row) for row in rows)
                start = end
                continue
        header = _cells(lines[start])
        ruled = header is not None and start + 1 < len(lines) and _is_rule_line(lines[start + 1], len(header))
        is_header = (
            header is not None
            and not _is_rule_line(lines[start], len(header))
            and (ruled or _is_header(header, _next_cells(lines, start + 1)))
        )
        rows, end = _rows_under(header, lines, start + 1) if is_header else ([], start + 1)
        if rows:
            said.extend(_record(header, row) for row in rows)
        else:
            said.extend(lines[start:end])
        start = end
    return "\n".join(said)


def _fixed_width_columns(line: str) -> list[tuple[int, int]]:
    """The columns a plain-text table's rule line marks under its header, as (start, end) of each run of dashes
    or equals signs ("Rep     Quota ($)" over "------  ---------", as reports printed to text and command-line
    tools lay tables out); [] for any other line, or one run alone (a line drawn across the page)."""
    if not line.strip() or set(line.strip()) - {"-", "=", " "}:
        return []
    columns, start = [], None
    for index, char in enumerate(f"{line} "):
        if char in "-=" and start is None:
            start = index
        elif char == " " and start is not None:
            columns.append((start, index))
            start = None
    long_enough = all(end - begin >= 3 for begin, end in columns)
    return columns if 2 <= len(columns) <= MAX_COLUMNS and long_enough else []


def _sliced(line: str, columns: list[tuple[int, int]], index: int) -> str:
    """Column `index`'s cell of a plain-text table's line: from its rule's start to the next one's (a figure
    is aligned to its column's right, a name to its left)."""
    end = columns[index + 1][0] if index + 1 < len(columns) else len(line)
    return line[columns[index][0] : end].strip()


def _fixed_width_rows(lines: list[str], start: int, columns: list[tuple[int, int]]) -> tuple[list[list[str]], int]:
    """The rows of a plain-text table from `start`, and the index after the last: lines that leave the space
    between its columns blank, up to a blank line or one that does not (the notes under the table)."""
    gaps = [(end, following) for (_start, end), (following, _end) in itertools.pairwise(columns)]
    rows, end = [], start
    for index in range(start, len(lines)):
        line = lines[index]
        if not line.strip() or any(line[begin:stop].strip() for begin, stop in gaps):
            break
        rows.append([_sliced(line, columns, i) for i in range(len(columns))])
        end = index + 1
    return rows, end


def _rows_under(header: list[str], lines: list[str], start: int) -> tuple[list[list[str]], int]:
    """The rows after a header that have its number of cells (blank lines between them allowed: a web page's
    rows are paragraphs), and the index after the last one."""
    rows, end = [], start
    for index in range(start, len(lines)):
        if not lines[index].strip():
            continue
        cells = _cells(lines[index])
        if cells is None or len(cells) != len(header):
            break
        if not all(_is_rule(cell) for cell in cells):
            rows.append(cells)
        end = index + 1
    return rows, end


def _cells(line: str) -> list[str] | None:
    """A table line's cells ("| a | b |" or "a | b"), None for a line with no cell border."""
    if "|" not in line:
        return None
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return cells if len(cells) >= 2 else None


def _is_rule_line(line: str, columns: int) -> bool:
    """A Markdown table's line under its header ("|---|:---:|"), with `columns` cells: it marks the line above
    as the header, whatever that holds ("Score (1–4)")."""
    cells = _cells(line)
    return cells is not None and len(cells) == columns and all(_is_rule(cell) for cell in cells)


def _is_rule(cell: str) -> bool:
    """A cell of a Markdown table's line under its header: "---", ":---:"."""
    dashes = cell.strip(":")
    return len(dashes) >= 3 and set(dashes) == {"-"}


def _next_cells(lines: list[str], start: int) -> list[str] | None:
    """The cells of the first line from `start` that is not blank (a web page's rows are paragraphs)."""
    return next((_cells(line) for line in lines[start:] if line.strip()), None)


def _is_header(cells: list[str], below: list[str] | None) -> bool:
    """Whether a table's first row names its columns. A cell that starts with a figure is a value ("99.97%";
    "Uptime (90 days)" names a column), unless it names a band of a measure over a column of bare figures:
    "10–25 kg" over "£415.00" (a price list by weight), not "12 months" over "3 months" (a two-column table of
    terms, all data)."""
    if len(cells) > MAX_COLUMNS:
        return False
    below = below if below is not None and len(below) == len(cells) else [""] * len(cells)
    return all(
        cell
        and len(cell) <= MAX_COLUMN_NAME_CHARS
        and (not _starts_with_figure(cell) or (index and _has_letters(cell) and not _has_letters(below[index])))
        and ":" not in cell
        and ";" not in cell
        for index, cell in enumerate(cells)
    )


def _starts_with_figure(cell: str) -> bool:
    return cell.lstrip("-+€$£")[:1].isdigit()


def _has_letters(cell: str) -> bool:
    return any(char.isalpha() for char in cell)


def _record(header: list[str], row: list[str]) -> str:
    return "; ".join(f"{name}: {value.replace(';', ',')}" for name, value in zip(header, row, strict=True) if value)
