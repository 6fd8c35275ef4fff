"""llm_platform.answer_types: what a question asks for, and whether a sentence holds it."""

import pytest

from llm_platform.answer_types import holds_answer_type
from llm_platform.terms import question_terms


@pytest.mark.parametrize(
    ("question", "holds", "lacks"),
    [
        (
            "How much did the valve programme cost?",
            "It cost 1.2 million euros.",
            "The valve programme replaced 42 valves.",
        ),
        ("What did the valve programme cost?", "It cost €1.2 M.", "The programme's cost was reviewed in May."),
        ("How long did the training take?", "It took about three weeks.", "The training was long and thorough."),
        ("How many households lost water?", "The burst left 230 households without water.", "230 pipes burst."),
        ("When did the main burst?", "The main burst on 14 February 2023.", "The main burst near the harbour."),
        ("Who chaired the meeting?", "The meeting was chaired by Ana Ruiz.", "The meeting was chaired well."),
        ("Why did costs rise?", "Costs rose because energy prices went up.", "Costs rose sharply."),
    ],
)
def test_a_sentence_holds_what_the_question_asks_for_or_not(question, holds, lacks):
    asked = set(question_terms(question))
    assert holds_answer_type(question, holds, asked)
    assert not holds_answer_type(question, lacks, asked)


def test_a_question_that_names_no_answer_type_lets_any_sentence_through():
    assert holds_answer_type("Which module measures time?", "The timeit module does.", {"modul", "measur", "time"})
