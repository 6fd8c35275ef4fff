"""llm_platform.terms: the sentences of a span's text."""

from llm_platform.terms import split_sentences

ROWS = (
    "district: Northgate; year: 2023; losses_percent: 25.0; bursts: 30\n"
    "district: Riverside; year: 2023; losses_percent: 19.1; bursts: 41\n"
    "district: Old Town; year: 2023; losses_percent: 26.2; bursts: 52"
)


def test_a_line_wrapped_by_its_author_is_joined_to_the_next():
    text = "A line of prose that its author wrapped at forty\ncharacters goes on in the next line. Another ends here."
    assert split_sentences(text) == [
        "A line of prose that its author wrapped at forty characters goes on in the next line.",
        "Another ends here.",
    ]


def test_the_rows_of_a_table_stay_rows():
    """A CSV's rows as extracted ("name: value; …", one a line) were taken for a paragraph wrapped by its
    author and read as one sentence of every row."""
    assert split_sentences(ROWS) == ROWS.split("\n")
    cells = "Maria Lopez | night crew lead | since 2022\nJon Berg | electrician on nights | since 2019"
    assert split_sentences(cells) == cells.split("\n")
