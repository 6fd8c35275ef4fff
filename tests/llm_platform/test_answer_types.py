"""llm_platform.answer_types: what a question asks for, and whether a sentence holds it."""

import numpy as np
import pytest

from llm_platform import embeddings
from llm_platform import relevance as relevance_module
from llm_platform.answer_types import answer_type_terms, asks_answer_type, holds_answer_type
from llm_platform.relevance import relevance
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
        # A currency's code before the amount, or in the name of a record's field, says money too.
        (
            "How much is the contractor budget?",
            "budget: engineering_weeks 26, contractor_usd 18000.",
            "budget: weeks 26.",
        ),
        ("How much will the licence cost?", "The licence costs USD 12,000 a year.", "The licence covers 12 sites."),
        # A quantity may be a share; an article is none.
        (
            "How much electricity did the pump upgrade save?",
            "The station used 31 percent less electricity.",
            "The upgrade was a success for the station.",
        ),
        ("How long did the training take?", "It took about three weeks.", "The training was long and thorough."),
        ("How many households lost water?", "The burst left 230 households without water.", "230 pipes burst."),
        # What is counted ends at the verb: "support tickets", counted as "37 tickets".
        (
            "How many support tickets did the outage cause?",
            "Sam Kowalski: Support got 37 tickets during that window.",
            "The outage lasted 95 minutes.",
        ),
        # An article counts nothing: "a second engineer" says no number of engineers.
        (
            "How many engineers does the team have?",
            "The team has four engineers.",
            "Hiring a second engineer may slip.",
        ),
        (
            "How many faulty laptops does North High have?",
            "schools, item 1: name North High, laptops.count 760, laptops.faulty 95.",
            "schools, item 1: name North High, laptops.count 760.",
        ),
        (
            "How many appointments were missed?",
            "month: 2024-03; booked: 805; missed: 93",  # a table's row: its column names what it counts
            "month: 2024-03; booked: 805",
        ),
        (  # … as the chat quotes it, its source and full stop after the count
            "How many candidates are in the pipeline?",
            "role: Support Specialist; candidates_in_pipeline: 14 (roles.csv::S2).",
            "role: Support Specialist; level: L2 (roles.csv::S2).",
        ),
        (
            "How many workbooks did we order?",
            "Reading Steps workbooks, 300 copies at $12.50: $3,750.00",
            "Line: 5030; Category: Workbooks and printing; Budget: $22,000",  # 5030 is another field's
        ),
        ("When did the main burst?", "The main burst on 14 February 2023.", "The main burst near the harbour."),
        # A software's release dates a change: "in 3.0.0"; an address is no release.
        (
            "When will offset pagination be removed?",
            "Offset pagination (?page=) will be removed in 3.0.0.",
            "Offset pagination is served from 10.0.0.1.",
        ),
        (
            "Between which months did the programme run?",
            "It ran between March 2021 and June 2022.",
            "The valves are checked every six months.",  # months counted are no months named
        ),
        # A plan dates what is to come by its offset from a start; what happened has a date.
        (
            "When are the new hire check-ins?",
            "The manager holds check-ins at 30, 60 and 90 days.",
            "The manager holds check-ins with every new hire.",
        ),
        ("When does on-call start?", "On-call starts no earlier than week 8.", "On-call starts with shadowing."),
        ("When did the pump fail?", "The pump failed on 3 May 2026.", "The pump failed after 3 days of frost."),
        ("In what year was the plant built?", "The plant opened in 1998.", "The plant was built quickly."),
        ("Who chaired the meeting?", "The meeting was chaired by Ana Ruiz.", "The meeting was chaired well."),
        (
            "Which grep option counts matching lines?",
            "-c, --count: Suppress normal output; instead print a count of matching lines.",
            "Grep can print a count of matching lines.",
        ),
        ("Why did costs rise?", "Costs rose because energy prices went up.", "Costs rose sharply."),
        # A record's field may name the cause.
        (
            "Why did the cold store incident happen?",
            "incidents, item 3: area Cold store, root_cause Door alarm had been muted",
            "incidents, item 3: area Cold store, value_gbp 9240",
        ),
        # A period's end is a date or a time it holds; an amount may sit in a field named for money.
        (
            "When does peak season end?",
            "Peak runs from 16 November 2026 to 4 January 2027.",
            "Peak season is the busiest time of the year.",
        ),
        (
            "What time do we stop accepting deliveries?",
            "Deliveries are accepted between 06:00 and 14:00, Monday to Friday.",
            "A delivery that arrives without a booking reference is refused.",
        ),
        (
            "How much does Fastline charge for next day to zone 1?",
            "carrier: Fastline; service: Next day; zone: 1; price_per_pallet_gbp: 52.0",
            "carrier: Fastline; service: Next day; zone: 1; transit_days: 1",
        ),
        (  # … or in a table's column named with its currency's symbol
            "How much is spent on sequencing?",
            "Item: Sequencing; Amount (£): 520,000",
            "Item: Sequencing; Runs: 12",
        ),
        (
            "How long did the checkout outage last?",
            "Between 09:12 and 10:47 UTC, checkout requests failed.",  # two clock times give its length
            "The valve programme ran between March 2021 and June 2022.",  # a period, not how long one lasts
        ),
        (
            "How long do card refunds take to show up?",
            "Card refunds take 5 to 10 business days to appear on the customer's statement.",  # a word between
            "Card refunds go back to the original payment method.",
        ),
        (  # … or in a record's field that names its unit
            "How long can the glovebox be booked?",
            "instruments, item 5: name Glovebox, hourly_rate_eur 12, max_booking_hours 8",
            "instruments, item 5: name Glovebox, hourly_rate_eur 12, room A0.11",
        ),
        (  # "N times a year" is how often
            "How often does the Grants Committee meet?",
            "Applications go to the Grants Committee, which meets four times a year.",
            "The Grants Committee met in the Quayside office.",
        ),
        (  # … and so is an interval, in a record's field too
            "How often are the backups tested?",
            "backups: store offsite, restore_test_interval_weeks 6",
            "backups: store offsite, last_restore_test 2026-09-14",
        ),
        (  # an amount in pence or cents is money
            "How much do we pay per mile?",
            "Mileage in your own car is paid at 45 pence per mile.",
            "We pay mileage for the first 10,000 miles.",
        ),
        (  # "how much of" a whole asks for its part
            "How much of the grant is paid when the agreement is signed?",
            "Grants are paid in instalments: 50 percent on signing the grant agreement.",
            "Grants are paid in instalments after the grant agreement is signed.",
        ),
        (  # "what percentage of" a whole: a share
            "What percentage of repairs were completed within target?",
            "932 repairs (88.4%) were completed within target, against a target of 92%.",
            "Repairs completed within target are reported to the Board.",
        ),
        (  # pence by their sign are an amount
            "How much does it cost to charge an electric car at Tannery Court?",
            "Charging costs 38p per kWh, paid through the operator's app.",
            "Charging points are in bays 1 to 4.",
        ),
        (  # "how much is" a thing asks its price: a reference's number is no amount
            "How much is the Pet Health Club for a cat each month?",
            "Cats: £13.50 a month.",
            "Pet Health Club monthly fees are frozen for 2027 (see item 7).",
        ),
        (  # a row's count column counts what the row is ("appointment_type: Vaccination"), not its duration
            "How many vaccination appointments did Elmfield see in July?",
            "month: 2026-07; site: Elmfield; appointment_type: Vaccination; attended_count: 190",
            "month: 2026-07; site: Elmfield; appointment_type: Vaccination; avg_duration_min: 15",
        ),
        (  # a number asked for by name: any figure is one, the word "number" need not be said
            "What is the phone number for out-of-hours emergencies?",
            "Out of hours, owners are directed to Portmere Emergency Vets on 01632 960 999.",
            "Out of hours, owners are directed to Portmere Emergency Vets.",
        ),
        (
            "Why are patients missing appointments?",
            "Patients miss them since the bus route was cut.",
            "Since April 2024 every patient gets a text reminder.",  # "since" a time says when, not why
        ),
        (
            "What made the outage last so long?",
            "The page reached the wrong person, so nobody acted for 19 minutes.",  # ", so": cause, then effect
            "The outage lasted so long that orders failed.",
        ),
        (
            "Why did the outage last so long?",
            # A research statement is weighed after its section's heading, which may ask why itself.
            "What made it last longer: The rollback did not release connections.",
            "Summary: The outage lasted 3 hours and 40 minutes.",
        ),
        (
            "Why did we lose deals in Q3?",
            # … or tells why, anywhere in its path: a win/loss analysis's "Why we lose" section gives the reasons.
            "Win/loss analysis, Q3 2026 > Why we lose: In each case the buyer had a hard deadline.",
            "Win/loss analysis, Q3 2026 > Summary: We lost two deals.",
        ),
    ],
)
def test_a_sentence_holds_what_the_question_asks_for_or_not(question, holds, lacks):
    asked = set(question_terms(question))
    assert holds_answer_type(question, holds, asked)
    assert not holds_answer_type(question, lacks, asked)


def test_only_the_questions_first_question_word_asks_for_a_kind_of_answer():
    """ "Which module measures how long snippets take?" asks for a module: a sentence that names one with no
    duration answers it. "how long" after "Which" is part of what it asks about."""
    question = "Which module measures how long small code snippets take to run?"
    assert not asks_answer_type(question)
    assert answer_type_terms(question) == set()
    assert holds_answer_type(question, "The timeit module times small bits of code.", set(question_terms(question)))
    assert asks_answer_type("How long does the timeit module run a snippet?")


def test_a_question_that_names_no_answer_type_lets_any_sentence_through():
    assert holds_answer_type("Which module measures time?", "The timeit module does.", {"modul", "measur", "time"})


def test_only_a_question_that_asks_for_a_kind_of_answer_lifts_the_sentences_that_hold_it():
    """A typed question's answers score above 1; a question of no type scores on its terms and meaning
    alone, so a sentence's fit to two sibling questions ("why …", "what are we doing about …") compares."""
    texts = ["Patients miss them because the bus route was cut.", "The clinic sends reminders to patients."]
    assert relevance("Why do patients miss appointments?", texts)[0] > 1
    assert max(relevance("What are we doing about patients missing appointments?", texts)) <= 1


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("How long did the outage last?", {"long", "last"}),  # "last" names the duration too: no answer repeats it
        ("How long does a rotation take?", {"long", "take"}),
        ("How often is the backup run?", {"often"}),
        ("How many orders failed?", {"mani"}),
        ("What is the name of our CFO?", {"name"}),
        ("What's the serial number of the X-ray generator?", {"number"}),
        ("Why did the cold store incident happen?", {"happen"}),  # the cause answers it
        # The money word is answered by the amount: "price_per_pallet_gbp: 52.0" says what Fastline charges.
        ("What did the valve programme cost?", {"cost"}),
        ("How much does Fastline charge for next day to zone 1?", {"much", "charg"}),
        ("What do we charge to fill in an insurance claim form?", {"charg"}),  # an amount of money
        ("By how much did the water price rise in 2023?", {"much"}),  # a change; the price is what changed
        ("What percentage of repairs were completed within target?", {"percentag"}),  # a share answers it
        # A question of its own after "and": its words name a kind of answer as well.
        ("When do the lift works kick off and how long will they last?", {"long", "last"}),
        # A period's start or end is answered by the time it holds.
        ("When does peak season end?", {"end"}),
        ("What time do we stop accepting deliveries?", {"time", "stop"}),
        ("Between which months did the programme run?", {"month"}),
        ("Who is working in Surgery 2 on 3 December?", set()),
        ("Which pods were restarted?", set()),
    ],
)
def test_the_words_that_name_the_answer_type_are_known(question, named):
    assert answer_type_terms(question) == named


def test_cosines_that_lie_close_together_do_not_outweigh_the_terms(monkeypatch):
    """A byline under the document's title ("Laptop refresh proposal: Prepared by the IT office") was as near
    the question in meaning as the sentence that answers it, a few hundredths apart; scaled to their range,
    those hundredths outweighed the one rare term the answer shares with the question."""
    question = "What could delay the laptop refresh?"
    texts = [
        "Laptop refresh proposal: Prepared by the district IT office, November 2026.",
        "Laptop refresh proposal > Risks: Shipping delays could push phase 2 into the school year.",
        "Laptop refresh proposal > Why now: Most staff laptops are out of warranty.",
    ]
    monkeypatch.setattr(relevance_module.embeddings, "closeness", lambda q, t: np.array([0.494, 0.448, 0.486]))
    scores = relevance(question, texts)
    assert scores[1] == max(scores), scores
    # Far apart, the cosines still decide: meaning finds the answer that shares no term.
    monkeypatch.setattr(relevance_module.embeddings, "closeness", lambda q, t: np.array([0.2, 0.2, 0.8]))
    scores = relevance(question, texts)
    assert scores[2] == max(scores), scores


@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("How long did the Wi-Fi ticket take to close?", "ticket: 4102; school: Riverside; hours_to_close: 51"),
        ("How often are the filters cleaned?", "site: Elm Street; cleanings_per_month: 2"),
    ],
)
def test_a_records_field_holds_what_its_column_names(question, row):
    assert holds_answer_type(question, row, set(question_terms(question)))
    assert not holds_answer_type(question, "ticket: 4102; school: Riverside", set(question_terms(question)))


@pytest.mark.django_db
def test_a_heading_makes_its_statements_relevant_but_does_not_rank_them(settings):
    """Read under "Reminder pilot plan 2027", a byline and the board's date came nearer "Which reminder
    approach should we fund in 2027?" than the plan's recommendation: the heading, which matches the
    question, was most of what the two short lines said. A statement ranks by itself and a share of its
    heading; the heading still makes relevant what says its subject only through it."""
    settings.GROUNDWORK_EMBEDDINGS = "local"
    embeddings.reset_provider()
    try:
        plan = "Reminder pilot plan 2027"
        headed = [
            (plan, "Prepared by Maria Okafor, clinic operations lead, 3 November 2026."),
            (f"{plan} > Decision needed", "The board must approve the budget at its January meeting."),
            (f"{plan} > Options", "We recommend text reminders for every appointment, combined with bus tickets."),
        ]
        headings, texts = zip(*headed, strict=True)
        scores = relevance("Which reminder approach should we fund in 2027?", texts, headings)
        assert scores[2] == max(scores), scores
        question, cause = "What went wrong with the checkout?", ["A configuration change lowered the pool to ten."]
        assert relevance(question, cause) == [0.0]
        assert relevance(question, cause, ["Checkout outage > Root cause"])[0] > 0
        # A table's column names are its rows' heading: a booking log's rows, whose columns say "booking" and
        # "instrument", are no better an answer on booking instruments than the rule for it.
        question = "What does a new student need to know about booking instruments?"
        texts = [
            "booking_id: B-2306; instrument: XRD; user: Tomasz Wójcik; date: 2026-10-13; hours: 5",
            "Bookings that are not cancelled at least 24 hours ahead are charged in full to the project.",
        ]
        scores = relevance(question, texts)
        assert scores[1] > scores[0] > 0, scores
    finally:
        embeddings.reset_provider()
