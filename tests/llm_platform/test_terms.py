"""llm_platform.terms and llm_platform.prose: the sentences of a span's text, and which of them are prose."""

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


def test_a_table_row_is_not_prose():
    """A Word table's row ("North | 12000 | 2.4 million") stood as a digest's fact: it has two lower-case
    words and nothing else, the test of prose; a row is data for its table, not a statement."""
    from llm_platform.prose import is_prose

    assert not is_prose("North | 12000 | 2.4 million")
    assert not is_prose("district: Harbour; year: 2023; bursts: 63")
    assert is_prose("The board met: it approved the plan; then it left.")
    assert is_prose("Losses fell from 24 % to 19 % in 2022.")
