"""The offline extractive digest of a CSV file: what its table states, computed from its rows.

Sentence extraction reads a CSV as one long run-on line ("district: Harbour; year:
2015; …"), so its digest was one truncated fact of concatenated rows. A table
states its columns and its values instead: the facts here say how many rows and
which columns the file has, and per column its range and total (numeric measures;
not identifiers counting up row by row) or its distinct values (a few repeated
labels), each citing the row spans it was computed from. A last row that adds up
the rows above it (a spreadsheet's "Total") is the table's total, not a row: it is
counted in no statistic, and a column it leaves empty (an account code) is no
measure. Everything is computed from the spans the extractor made
(extraction.text_readers._csv_blocks): span "header" holds the column names joined
by ", ", every other span a run of rows, one per line, as "column: value; …".
"""

import itertools
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation

from llm_platform.terms import WORD, cut_text

MAX_CLAIM_CHARS = 400
MAX_CATEGORIES = 8  # a column with more distinct labels than this is not summarised by them
MAX_GROUP_FACTS = 6  # totals of a measure per label of another column
MAX_ROW_NAME_CHARS = 40  # a row named by its first column's value in a claim ("month 2026-07")
MIN_NUMERIC_SHARE = 0.8  # of a column's non-empty cells, to read it as numbers
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
# The notes of the facts computed from a file's own rows or values: they describe that file, so two files'
# different counts are no disagreement between them (offline_aggregate looks for conflicts elsewhere).
COUNTED = "offline extractive: counted in the file"
COMPUTED = "offline extractive: computed from the rows"
READ_FROM_VALUES = "offline extractive: read from the file's values"
ABOUT_THE_FILE = frozenset({COUNTED, COMPUTED, READ_FROM_VALUES})
_UNIT_AROUND = re.compile(r"^[€$£¥]?\s*|\s*%$")
_SWAPPED_MARKS = str.maketrans(",.", ".,")  # a decimal comma's figure in the English notation, and back
# A level is averaged, not added: a share, a rate, a temperature or a concentration, whose total means nothing
# (five samples at 66 °C are not at 331 °C). A column is one when its name says so (a unit's word, as the offline
# digest's measures know "percent" and "pct"), or when its values are percentages.
LEVEL_UNITS = frozenset(
    "percent percentage pct ratio rate share avg average mean per temperature temp celsius fahrenheit kelvin ph "
    "concentration".split()
)
# A column named for a rank or a grade ("tier", "priority") numbers its labels: 3 is no quantity to sum.
ORDINAL_NAMES = frozenset("tier level priority rank grade severity stage phase".split())
# A header's last word that calls a column the rows' keys ("ticket_id", "Order No.", "Fleet number", "ref"); not
# "no_shows" nor "number of staff", which count.
IDENTIFIER_NAMES = frozenset("id no nr number ref".split())


@dataclass
class Column:
    name: str
    cells: list[tuple[str, str, int]] = field(default_factory=list)  # (value, SourceRef, row number)
    total: str | None = None  # its value on the table's total row ("" when the row leaves it empty); None: no such row

    @property
    def decimal_comma(self) -> bool:
        """Whether the column writes its numbers with a decimal comma ("12.500,00", "0,75"), as a spreadsheet
        in most of Europe exports them (with ";" between the fields): some value reads only that way (a
        comma after a point, or with other than three digits after it) and none reads only the English way."""
        texts = [_UNIT_AROUND.sub("", value.strip()) for value, _ref, _row in self.cells]
        return any(_only_reads_with(text, ",", ".") for text in texts) and not any(
            _only_reads_with(text, ".", ",") for text in texts
        )


def _only_reads_with(text: str, decimal: str, grouping: str) -> bool:
    """Whether a figure reads only with `decimal` as its decimal mark: "12.500,00" with a comma, "11,980.50"
    and "0.5" with a point; "12,500" reads both ways."""
    whole, mark, fraction = text.rpartition(decimal)
    return (
        bool(mark)
        and fraction.isdigit()
        and whole.lstrip("-+").replace(grouping, "").isdigit()
        and (grouping in whole or len(fraction) != 3)
    )


@dataclass(frozen=True)
class Table:
    columns: list[Column]
    rows: int
    row_refs: list[str]
    unit: str = "row"  # what a row is called in a claim ("record" for a JSON file's list of objects)


def read_table(filename: str, spans: list[dict]) -> Table | None:
    """The columns of a CSV's spans with each cell's SourceRef; None when the spans are not such a table. A
    header alone is a table of no rows, cited to its header."""
    if not spans:
        return None
    names = [name.strip() for name in spans[0]["text"].split(", ")]
    columns = [Column(name) for name in names]
    rows, row_refs = 0, []
    for span in spans[1:]:
        ref = f"{filename}::{span['span_id']}"
        lines = [line for line in span["text"].split("\n") if line.strip()]
        for line in lines:
            cells = _cells(line, names)
            if cells is None:
                return None
            rows += 1
            for column, value in zip(columns, cells, strict=False):
                if value.strip():
                    column.cells.append((value.strip(), ref, rows + 1))  # +1: the header is row 1
        if lines:
            row_refs.append(ref)
    if len(spans) == 1:
        return Table(columns, 0, [f"{filename}::{spans[0]['span_id']}"])
    if rows and _adds_up_the_rows_above(columns, rows + 1):
        for column in columns:
            last = column.cells[-1] if column.cells and column.cells[-1][2] == rows + 1 else None
            column.total = last[0] if last else ""
            column.cells = column.cells[:-1] if last else column.cells
        rows -= 1
    return Table(columns, rows, row_refs) if rows else None


MIN_ROWS_UNDER_A_TOTAL = 3  # fewer, and a row that happens to add up ("2, 3, 5") would be taken for a total


def _adds_up_the_rows_above(columns: list[Column], last_row: int) -> bool:
    """Whether the table's last row is its total: each column it gives a number in that is no level (a share is
    no sum) holds the sum of the rows above, to the cent, in one column at least."""
    sums = 0
    for column in columns:
        numbers = _numbers(column)
        if numbers is None or not numbers or numbers[-1][2] != last_row or _is_level(column):
            continue
        *above, (total, _ref, _row) = numbers
        added = sum(number for number, _r, _n in above)
        if len(above) < MIN_ROWS_UNDER_A_TOTAL or abs(added - total) > Decimal("0.01"):
            return False
        sums += 1
    return sums > 0


def _cells(line: str, names: list[str]) -> list[str] | None:
    """The values of one "name: value; name: value" row line, in column order (fewer when the row is short)."""
    values, rest = [], line
    for i, name in enumerate(names):
        prefix = f"{name}: "
        if not rest.startswith(prefix):
            return values if values and not rest else None
        rest = rest[len(prefix) :]
        following = f"; {names[i + 1]}: " if i + 1 < len(names) else None
        cut = rest.find(following) if following else -1
        if cut < 0:
            values.append(rest)
            rest = ""
        else:
            values.append(rest[:cut])
            rest = rest[cut + 2 :]
    return values


def _number(value: str, decimal_comma: bool = False) -> Decimal | None:
    """A cell's figure: with its currency or percent sign, a minus sign of any kind, or an accountant's
    brackets for a negative amount ("($7,250)")."""
    text = value.strip().replace("\u2212", "-")
    bracketed = text.startswith("(") and text.endswith(")")
    text = _UNIT_AROUND.sub("", text[1:-1].strip() if bracketed else text)
    if decimal_comma:
        text = text.translate(_SWAPPED_MARKS)
    if not _NUMBER.fullmatch(text) or (bracketed and text[0] in "-+"):
        return None
    try:
        number = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    return -number if bracketed else number


def _shown(number: Decimal, decimal_comma: bool = False) -> str:
    """A figure as a reader writes it: no trailing zeros, thousands grouped from 10,000 (not 2,015); with a
    decimal comma where its column has one ("48.000", "11.980,5")."""
    text = f"{number.normalize():{',' if abs(number) >= 10_000 else ''}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return text.translate(_SWAPPED_MARKS) if decimal_comma else text


def _is_identifier_column(name: str, numbers: list[Decimal]) -> bool:
    """Row numbers or keys: a column whose header calls it an id ("ticket_id", "Order ID number", "fleet_no",
    "Invoice number"), or whole numbers counting up by one step, row after row (1, 2, 3…; 1001, 1002…). They tell
    rows apart; a total or a mean of them measures nothing."""
    words = WORD.findall(name.lower())
    if "id" in words or words[-1:] and words[-1] in IDENTIFIER_NAMES:
        return True
    if len(numbers) < 3 or any(number != number.to_integral_value() for number in numbers):
        return False
    steps = {later - earlier for earlier, later in itertools.pairwise(numbers)}
    return len(steps) == 1 and steps.pop() > 0


def _is_year_column(numbers: list[Decimal]) -> bool:
    return all(number == number.to_integral_value() and 1800 <= number <= 2100 for number in numbers)


def table_facts(filename: str, table: Table) -> list[dict]:
    """The table's shape, then per column what it holds; each fact cites the rows it was computed from."""
    names = ", ".join(column.name for column in table.columns)
    total_row = " (and a total row)" if _has_total_row(table) else ""
    shape = (
        f"{filename} is a table of {table.rows} rows{total_row} and {len(table.columns)} columns: {names}."
        if table.rows
        else f"{filename} has the columns {names} and no rows."
    )
    return [computed_fact(shape, table.row_refs, COUNTED), *column_facts(table)]


def column_facts(table: Table) -> list[dict]:
    """Per column, its range and total (a measure), its span (years, dates) or its few labels counted; then each
    measure's totals per label."""
    facts = (
        _numeric_fact(column, table) or _date_fact(column, table) or _category_fact(column, table.unit)
        for column in table.columns
    )
    return [fact for fact in facts if fact] + _group_facts(table)


Numbers = list[tuple[Decimal, str, int]]  # (number, SourceRef, row number) of a column's cells


def _numbers(column: Column) -> Numbers | None:
    """The column read as numbers, or None when it is not a column of numbers."""
    comma = column.decimal_comma
    numbers = [(number, ref, row) for value, ref, row in column.cells if (number := _number(value, comma)) is not None]
    return numbers if len(numbers) >= 2 and len(numbers) >= MIN_NUMERIC_SHARE * len(column.cells) else None


def _is_measure(column: Column, numbers: Numbers) -> bool:
    """Numbers whose total means something: not years (a period), not identifiers (telling rows apart), not
    ranks (labels in order), not a column the table's total row leaves empty (account codes)."""
    values = [number for number, _ref, _row in numbers]
    return not (
        _is_year_column(values) or _is_identifier_column(column.name, values) or _is_rank(column) or column.total == ""
    )


def _is_rank(column: Column) -> bool:
    return any(word in ORDINAL_NAMES for word in WORD.findall(column.name.lower()))


def _labels(column: Column) -> dict[str, list[str]] | None:
    """Each label of a column of a few repeated labels with the SourceRefs of its rows; None for another column:
    one where most rows have a label of their own (dates of service, notes), which no total per label summarises
    ("odometer_km by notes, in total: accident damage rear panel 702,115, …")."""
    refs: dict[str, list[str]] = {}
    for value, ref, _row in column.cells:
        refs.setdefault(value, []).append(ref)
    shared = sum(len(rows) for rows in refs.values() if len(rows) > 1)  # rows whose label another row has
    return refs if 1 < len(refs) <= MAX_CATEGORIES and 2 * shared >= len(column.cells) else None


def _group_facts(table: Table) -> list[dict]:
    """Each measure's total per label of each labelled column, highest first ("leaks_found by site, in total:
    Harbour Road 14, …"): what a question of which label has the most asks, summed once from the rows."""
    measures = [
        (column, numbers) for column in table.columns if (numbers := _numbers(column)) and _is_measure(column, numbers)
    ]
    facts = []
    for category in table.columns:
        as_numbers = _numbers(category)
        if _labels(category) is None or (as_numbers is not None and _is_measure(category, as_numbers)):
            continue  # not a few labels, or a measure: a year or a place is a label, a count is not
        if _refers_to_rows(category, table):
            continue  # its labels are rows of the table ("predecessor": a task), not groups of them
        label_of_row = {row: value for value, _ref, row in category.cells}
        for measure, values in measures:
            per_label: dict[str, list[Decimal]] = {}
            for number, _ref, row in values:
                if row in label_of_row:
                    per_label.setdefault(label_of_row[row], []).append(number)
            if len(per_label) < 2:
                continue
            level = _is_level(measure)
            figures = {
                label: round(sum(numbers) / len(numbers), 2) if level else sum(numbers)
                for label, numbers in per_label.items()
            }
            listed = ", ".join(
                f"{label} {_shown(figure, measure.decimal_comma)}"
                for label, figure in sorted(figures.items(), key=_highest)
            )
            claim = f"{measure.name} by {category.name}, {'on average' if level else 'in total'}: {listed}."
            sources = _unique([ref for _number, ref, _row in values])
            facts.append(computed_fact(claim, sources, COMPUTED))
            if len(facts) == MAX_GROUP_FACTS:
                return facts
    return facts


def _refers_to_rows(column: Column, table: Table) -> bool:
    """Whether each of the column's values names a row of the table by another column that names every row (a
    schedule's "predecessor" by its "task", a staff list's "reports_to" by its "name")."""
    values = {value.strip() for value, _ref, _row in column.cells}
    return any(
        other is not column and values <= {value.strip() for value, _ref, _row in other.cells}
        for other in table.columns
        if _names_every_row([other], table.rows)
    )


def _is_level(column: Column) -> bool:
    named = any(word in LEVEL_UNITS for word in WORD.findall(column.name.lower()))
    return named or "%" in column.name or all(value.strip().endswith("%") for value, _r, _n in column.cells)


def _highest(item: tuple[str, Decimal]) -> tuple[Decimal, str]:
    return (-item[1], item[0])


def _numeric_fact(column: Column, table: Table) -> dict | None:
    numbers = _numbers(column)
    if numbers is None or _is_rank(column):  # a rank's labels are counted (_category_fact)
        return None

    def shown(number: Decimal) -> str:
        return _shown(number, column.decimal_comma)

    low = min(numbers, key=lambda item: item[0])
    high = max(numbers, key=lambda item: item[0])
    sources = _unique([low[1], high[1], *(ref for _n, ref, _r in numbers)])
    if _is_year_column([number for number, _ref, _row in numbers]):  # a period: its total means nothing
        distinct = len({number for number, _ref, _row in numbers})
        claim = f"{column.name} runs from {shown(low[0])} to {shown(high[0])} ({distinct} distinct values)."
        return computed_fact(claim, sources, COMPUTED)
    if not _is_measure(column, numbers):
        return None
    total = sum(number for number, _ref, _row in numbers)
    unit = table.unit
    counted = f"{len(numbers)} {unit}s" if len(numbers) == table.rows else f"the {len(numbers)} {unit}s with a number"
    mean = shown(round(total / len(numbers), 2))
    if _is_level(column):
        summed = f"the mean over {counted} is {mean}" + (f" (the total row: {column.total})" if column.total else "")
    else:
        agreed = ", as the total row says" if column.total else ""
        summed = f"the total over {counted} is {shown(total)}{agreed}, the mean {mean}"
    named = _row_names(table)
    lowest, highest = (named.get(row, f"{unit} {row}") for row in (low[2], high[2]))
    ranges = f"{column.name} ranges from {shown(low[0])} ({lowest}) to {shown(high[0])} ({highest})"
    claim = f"{ranges}; {summed}."
    return computed_fact(claim, sources, COMPUTED)


def _date_fact(column: Column, table: Table) -> dict | None:
    """A column of ISO dates, by its first and last ("finish runs from 2026-09-12 (task Site clearance) to
    2027-06-11 (task Handover)"): when a plan starts and ends, which no sum or count of its cells says."""
    dates = [(day, ref, row) for value, ref, row in column.cells if (day := _iso_date(value)) is not None]
    if len(dates) < 2 or len(dates) < MIN_NUMERIC_SHARE * len(column.cells):
        return None
    first, last = min(dates, key=lambda item: item[0]), max(dates, key=lambda item: item[0])
    named = _row_names(table)
    earliest, latest = (named.get(row, f"{table.unit} {row}") for _day, _ref, row in (first, last))
    claim = f"{column.name} runs from {first[0].isoformat()} ({earliest}) to {last[0].isoformat()} ({latest})."
    return computed_fact(claim, _unique([first[1], last[1], *(ref for _d, ref, _r in dates)]), COMPUTED)


def _iso_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value.strip()) if len(value.strip()) == len("2026-09-01") else None
    except ValueError:
        return None


def _row_names(table: Table) -> dict[int, str]:
    """How a claim names each row: by the first column that names every row (a value of each row's own, such as
    a month, a name or an id, short enough for a claim: "month 2026-07"), a column of words before one of codes
    ("Category Travel", not "Line 5020"); else by the first two columns of words whose values together name every
    row ("trade Drainage, estate Tannery Court" of a table of trades per estate); {} when none do, and the claim
    says the row's number ("row 4"), which sends the reader counting."""
    keys = [column for column in table.columns if _names_every_row([column], table.rows)]
    worded = [column for column in keys if _is_worded(column)]
    key = next(iter(worded or keys), None)
    if key is not None:
        return {row: f"{key.name} {value.strip()}" for value, _ref, row in key.cells}
    labels = [column for column in table.columns if _is_worded(column)]
    pair = next(
        (
            (first, second)
            for first, second in itertools.combinations(labels, 2)
            if _names_every_row([first, second], table.rows)
        ),
        None,
    )
    if pair is None:
        return {}
    names: dict[int, list[str]] = {}
    for column in pair:
        for value, _ref, row in column.cells:
            names.setdefault(row, []).append(f"{column.name} {value.strip()}")
    return {row: ", ".join(parts) for row, parts in names.items()}


def _is_worded(column: Column) -> bool:
    return any(c.isalpha() for value, _ref, _row in column.cells for c in value)


def _names_every_row(columns: list[Column], rows: int) -> bool:
    """Whether the columns' values, read together, are each row's own: every row has them, no two rows share
    them, and they are short enough for a claim; never a measure's."""
    by_row: dict[int, list[str]] = {}
    for column in columns:
        if (numbers := _numbers(column)) and _is_measure(column, numbers):
            return False
        for value, _ref, row in column.cells:
            by_row.setdefault(row, []).append(value.strip())
    values = [tuple(values) for values in by_row.values() if len(values) == len(columns)]
    return (
        len(values) == rows
        and all(all(value) for value in values)
        and len(set(values)) == len(values)
        and max((len(", ".join(value)) for value in values), default=0) <= MAX_ROW_NAME_CHARS
    )


def _category_fact(column: Column, unit: str) -> dict | None:
    counts = _labels(column)
    if counts is None:
        return None  # one label, or a label per row (names, ids): nothing a count adds
    ordered = sorted(counts.items(), key=lambda item: (-len(item[1]), item[0]))
    listed = ", ".join(f"{value} ({len(refs)})" for value, refs in ordered)
    claim = f"{column.name} takes {len(counts)} values over {len(column.cells)} {unit}s: {listed}."
    sources = _unique([ref for _value, refs in ordered for ref in refs])
    return computed_fact(claim, sources, COUNTED)


def _has_total_row(table: Table) -> bool:
    return any(column.total is not None for column in table.columns)


def _unique(refs: list[str]) -> list[str]:
    return list(dict.fromkeys(refs))


def computed_label(claim: str) -> str:
    """What a computed fact is about, without its figures: "Variance % ranges from" of "Variance % ranges from
    -8940 (Category Travel) to …", "activity_pct by variant, on average" of "…: KX-7 60.5, WT 23.5.". The same
    label in a file's new digest is the same fact computed from the new rows."""
    head = claim.partition(": ")[0]
    words = itertools.takewhile(lambda word: not word.lstrip("-−")[:1].isdigit(), head.split(" "))
    return " ".join(words)


def computed_fact(claim: str, sources: list[str], note: str) -> dict:
    """A fact the offline digest counted or read in the file's values (high reliability: nothing interpreted)."""
    return {
        "id": "",
        "kind": "fact",
        "claim": cut_text(claim, MAX_CLAIM_CHARS),
        "sources": sources,
        "reliability": "high",
        "reliability_note": note,
    }


def table_summary(table: Table) -> str:
    numeric = [column.name for column in table.columns if _numeric_fact(column, table)]
    names = ", ".join(column.name for column in table.columns)
    if not table.rows:
        return f"A table with the columns {names} and no rows."
    total_row = " and a total row," if _has_total_row(table) else ""
    said = f"A table of {table.rows} rows{total_row} with the columns {names}."
    return said + (f" Numeric columns: {', '.join(numeric)}." if numeric else "")
