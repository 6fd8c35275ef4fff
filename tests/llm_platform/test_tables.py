"""llm_platform.tables: a table inside a document's text is read as records under its header."""

import pytest

from llm_platform.grounding import supporting
from llm_platform.statements import statements
from llm_platform.tables import said_as_records

RECORDS = [
    "Action: Write the storage design; Owner: Sam Okafor; Due: 20 November 2026",
    "Action: Recruit 20 beta customers; Owner: Priya Raman; Due: 15 January 2027",
]


@pytest.mark.parametrize(
    "table",
    [
        # A DOCX's table: a row a line.
        "Action | Owner | Due\nWrite the storage design | Sam Okafor | 20 November 2026\n"
        "Recruit 20 beta customers | Priya Raman | 15 January 2027",
        # A web page's: a row a paragraph.
        "Action | Owner | Due\n\nWrite the storage design | Sam Okafor | 20 November 2026\n\n"
        "Recruit 20 beta customers | Priya Raman | 15 January 2027",
        # Markdown's, with its rule under the header.
        "| Action | Owner | Due |\n|---|:---:|---|\n| Write the storage design | Sam Okafor | 20 November 2026 |\n"
        "| Recruit 20 beta customers | Priya Raman | 15 January 2027 |",
    ],
)
def test_a_tables_rows_are_records_under_its_header_and_state_them(table):
    text = f"Actions\n\n{table}\n\nThe council meets again in December."
    assert said_as_records(text) == "Actions\n\n" + "\n".join(RECORDS) + "\n\nThe council meets again in December."
    assert statements(text) == [*RECORDS, "The council meets again in December."]


def test_an_empty_cell_is_left_out_of_its_record():
    table = "Action | Owner | Due\nWrite the storage design |  | 20 November 2026"
    assert said_as_records(table) == "Action: Write the storage design; Due: 20 November 2026"


@pytest.mark.parametrize(
    "text",
    [
        "Budget | 2026 | 2027\nStaff | 10 | 12",  # a first row with figures is data, not a header
        "Use grep -c | wc -l to count the matching lines.",  # a pipe in prose
        "Action | Owner\nWrite the storage design | Sam Okafor | 20 November 2026",  # rows of another width
    ],
)
def test_what_is_no_table_under_a_header_is_left_as_it_is(text):
    assert said_as_records(text) == text


def test_a_record_is_supported_by_the_table_it_was_read_from():
    table = "Action | Owner | Due\nWrite the storage design | Sam Okafor | 20 November 2026"
    assert supporting(RECORDS[0], {"S3": table})[0] == ["S3"]


def test_a_record_of_capitalised_names_is_no_title():
    # Every word of this row is capitalised, as a heading's are; its fields make it a record.
    table = "| Phase | Schools | When |\n| --- | --- | --- |\n| 1 | North High, Riverside Middle | June 2027 |"
    assert statements(f"Rollout\n\n{table}") == ["Phase: 1; Schools: North High, Riverside Middle; When: June 2027"]


def test_a_markdown_tables_rule_marks_its_header_whatever_it_holds():
    """Interview notes scored "Score (1–4)": a header with a figure was no header, and the rule line under it
    was taken for one ("---: Jonas Weber; ---: System design; ---: 4")."""
    table = "| Interviewer | Score (1–4) |\n|---|---|\n| Jonas Weber | 4 |\n| Priya Nair | 3 |"
    assert said_as_records(table) == "Interviewer: Jonas Weber; Score (1–4): 4\nInterviewer: Priya Nair; Score (1–4): 3"
    assert said_as_records("|---|---|\n| Jonas Weber | 4 |") == "|---|---|\n| Jonas Weber | 4 |"  # a rule heads nothing


def test_a_header_may_hold_a_figure_after_its_first_word():
    """A status page's "Uptime (90 days)" column kept its table from being read: a header had to hold no digit.
    A cell that starts with a figure is a value, and a first row of such cells is still data."""
    page = "Component | Status | Uptime (90 days)\n\nAPI | Operational | 99.97%\n\nPDF export | Operational | 99.41%"
    assert said_as_records(page).split("\n") == [
        "Component: API; Status: Operational; Uptime (90 days): 99.97%",
        "Component: PDF export; Status: Operational; Uptime (90 days): 99.41%",
    ]
    data = "API | Operational | 99.97%\nPDF export | Operational | 99.41%"
    assert said_as_records(data) == data


def test_a_plain_text_tables_rows_are_records_under_its_header_by_its_rule_lines_columns():
    """A quota report printed to text: its columns are aligned with spaces under a rule line of dashes, a
    figure to its column's right. Its rows were no statement, and "What is Priya's quota attainment?" was
    asked back."""
    report = (
        "QUARTERLY QUOTA ATTAINMENT - Q3 2026\n\n"
        "Rep              Quota ($)   Closed ($)   Attainment\n"
        "---------------  ----------  -----------  ----------\n"
        "Priya Nair          120,000       48,000         40%\n"
        "Jonas Weber         100,000      103,500        104%\n"
        "Notes: Jonas is the only rep above quota this quarter."  # crosses the columns: no row
    )
    assert said_as_records(report).split("\n")[2:] == [
        "Rep: Priya Nair; Quota ($): 120,000; Closed ($): 48,000; Attainment: 40%",
        "Rep: Jonas Weber; Quota ($): 100,000; Closed ($): 103,500; Attainment: 104%",
        "Notes: Jonas is the only rep above quota this quarter.",
    ]
    # A line drawn across the page, or a setext heading's, marks no columns.
    for text in ("Minutes\n=======\nWe met.", "Budget\n--------------------\nIt rose.", "a  b\n--  --\nc  d"):
        assert said_as_records(text) == text


def test_a_band_of_a_measure_names_its_column_over_bare_figures():
    """A price list by weight: "10–25 kg" starts with a figure and names a column all the same, as its cells are
    amounts. Over cells that say a measure too, a first row of such cells is still data."""
    page = (
        "Procedure | Up to 10 kg | 10–25 kg | Over 25 kg\n\n"
        "Dog castration | £285.00 | £325.00 | £365.00\n\nBitch spay (open) | £365.00 | £415.00 | £475.00"
    )
    assert said_as_records(page).split("\n")[1] == (
        "Procedure: Bitch spay (open); Up to 10 kg: £365.00; 10–25 kg: £415.00; Over 25 kg: £475.00"
    )
    terms = "Contract length | 12 months\nNotice period | 3 months"
    assert said_as_records(terms) == terms
