"""llm_platform.terms and llm_platform.prose: the sentences of a span's text, and which of them are prose."""

from llm_platform.terms import analyze, bm25_rank, content_terms, question_terms, split_sentences

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


def test_a_narrow_columns_sentence_is_one_sentence_and_a_units_letter_ends_one():
    # Two-column PDF text: lines of ~40 characters, one of them shorter than that.
    text = (
        "We measured the melting temperature of\nthe KX-7 variant in five buffers.\n"
        "In 5 mM phosphate it fell to 61.2 °C. Adding\n150 mM sodium chloride restored it.\n"
        "The study was led by Ruth C. Halden in Oslo.\n"
        "Equipment\nfreezer, centrifuge, scale"
    )
    assert split_sentences(text) == [
        "We measured the melting temperature of the KX-7 variant in five buffers.",
        "In 5 mM phosphate it fell to 61.2 °C.",
        "Adding 150 mM sodium chloride restored it.",
        "The study was led by Ruth C. Halden in Oslo.",
        "freezer, centrifuge, scale",  # a line of fewer words is no sentence the next one takes up
    ]


def test_a_slides_items_stay_items_and_a_marker_alone_on_its_line_is_no_word():
    """A slide exported to PDF: each item a line without a full stop, and the list's markers read after them."""
    slide = (
        "First response median 2.4 hours (target 4 hours)\nResolution median 19 hours\n"
        "Priority 1 tickets resolved within 6 hours on average\n•\n1.\n2."
    )
    assert split_sentences(slide) == [
        "First response median 2.4 hours (target 4 hours)",
        "Resolution median 19 hours",
        "Priority 1 tickets resolved within 6 hours on average",
    ]
    # A line that ends in a word no sentence ends in goes on, whatever the next one opens with.
    assert split_sentences("The outage was confirmed by\nPriya Nair on the call.") == [
        "The outage was confirmed by Priya Nair on the call."
    ]


def test_a_quoted_emails_wrapped_lines_are_its_sentences_and_a_tasks_box_says_whether_it_is_done():
    """A runbook's unticked "- [ ] Temporary car park agreed with the landlord" was a digest fact without its box:
    it stated as done what is still to do."""
    text = (
        "> Should we use glycine? I estimate the series at about\n"
        "> 900 EUR in reagents.\n"
        "> Ruth\n"
        "- [ ] Mika to repeat the sample in HEPES\n"
        "- [x] Ada to upload the raw curves\n"
        "- [ ] Smartcard issued"  # two words: a statement with its state
    )
    assert split_sentences(text) == [
        "Should we use glycine?",
        "I estimate the series at about 900 EUR in reagents.",
        "To do: Mika to repeat the sample in HEPES",
        "Done: Ada to upload the raw curves",
        "To do: Smartcard issued",
    ]


def test_a_sentence_is_its_words_without_markdowns_markup():
    """What research reports and the chat quote, as digests do: no emphasis marks, code ticks or link targets."""
    text = (
        "- **Decision:** samples are stored in `HEPES` at 4 °C.\nSee [the ordering page](https://wiki.example/order)."
    )
    assert split_sentences(text) == [
        "Decision: samples are stored in HEPES at 4 °C.",
        "See the ordering page.",
    ]
    # Emphasis around two sentences comes off both: "… contact your Housing Officer.*" was a digest's lead.
    assert split_sentences("*Last reviewed: January 2026. If in doubt, contact your Housing Officer.*") == [
        "Last reviewed: January 2026.",
        "If in doubt, contact your Housing Officer.",
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


def test_the_term_of_a_definition_list_goes_with_the_sentence_that_defines_it():
    """A manual's options: "-c, --count" on a line, what it does on the next. The term line was dropped as
    a fragment (two words), so an answer quoted "Suppress normal output; …" without naming the option."""
    text = (
        "-c, --count\n"
        "Suppress normal output; instead print a count of matching lines.  With -v, count non-matching lines.\n"
        "\n"
        "--color[=WHEN], --colour[=WHEN]\n"
        "Surround the matched strings with escape sequences.\n"
    )
    assert split_sentences(text) == [
        "-c, --count: Suppress normal output; instead print a count of matching lines.",
        "With -v, count non-matching lines.",
        "--color[=WHEN], --colour[=WHEN]: Surround the matched strings with escape sequences.",
    ]


def test_a_definition_wrapped_onto_the_next_line_still_goes_with_its_term():
    """A PDF manual wraps its lines: the term's sentence ends on the line after. Left without its term, the
    answer to "Which option counts matching lines?" was the sentence after it, the one naming -v."""
    text = (
        "-c, --count\n"
        "Suppress normal output; instead print a count of matching lines for each input file. With the -v,\n"
        "--invert-match option (see above), count non-matching lines.\n"
    )
    assert split_sentences(text) == [
        "-c, --count: Suppress normal output; instead print a count of matching lines for each input file.",
        "With the -v, --invert-match option (see above), count non-matching lines.",
    ]


def test_a_heading_a_list_or_a_table_row_is_no_term_of_what_follows():
    text = (
        "## Options\nThe options come in three groups.\n"
        "Rollout Budget Memo\nThe budget was set in May.\n"
        "Attendees\n- Alice Moreau chaired the meeting.\n"
        "Site A | 12 MWh\nThe sites used 21 MWh in all.\n"
        "Site B used 9 MWh\nwhich was less.\n"
    )
    assert split_sentences(text) == [
        "The options come in three groups.",
        "The budget was set in May.",
        "Alice Moreau chaired the meeting.",
        "The sites used 21 MWh in all.",
        "Site B used 9 MWh which was less.",  # a sentence goes on: one sentence, no term of the line after it
    ]


def test_a_heading_in_sentence_case_is_no_term_of_the_sentence_under_it():
    """A PDF's title on the line above its first sentence ("Annual water loss report 2025") was joined to it
    as a definition's term, and the report then said that sentence twice: once with the title before it (from
    the page) and once without (from the digest). A term is a name of a few words or an option."""
    text = "Annual water loss report 2025\nNon-revenue water fell from 23 percent in 2024 to 19 percent in 2025.\n"
    assert "Non-revenue water fell from 23 percent in 2024 to 19 percent in 2025." in split_sentences(text)
    term = "Non-revenue water\nWater that is produced but never billed to a customer.\n"
    assert split_sentences(term) == ["Non-revenue water: Water that is produced but never billed to a customer."]


def test_a_title_is_no_term_of_its_version_line():
    """A PDF's title above "Version 3, September 2026." read as the statement "Checkout architecture overview:
    Version 3, September 2026.", which led a report's section on what the team is doing: a definition is prose."""
    text = "Checkout overview\nVersion 3, September 2026. Platform team.\nRequest path\nA request enters.\n"
    sentences = split_sentences(text)
    assert not any(sentence.startswith("Checkout overview:") for sentence in sentences), sentences
    assert "Request path: A request enters." in sentences


def test_an_iso_dates_month_is_also_a_term_by_its_name():
    row = "month: 2024-03; booked: 1250; missed: 70; reviewed 2023-11-14"
    assert {"march", "novemb"} <= set(analyze(row)) and {"march", "novemb"} <= set(content_terms(row))
    # The library finds the row for a question in words; a number that only looks like a date names no month.
    march, april = bm25_rank("missed in March 2024", [row, "month: 2024-04; missed: 55"])
    assert march > april
    assert not {"march", "januari"} & set(analyze("build 12024-03, part 2024-13, 2024-01-015"))


def test_a_modal_verb_is_no_term_a_sentence_must_share():
    # "can", "should" and "would" never were: "must", "shall" and "might" say no more of the subject.
    assert question_terms("How often must the NanoDrop be calibrated?") == ["often", "nanodrop", "calibr"]
    assert "shall" not in question_terms("Who shall sign the contract?")
    assert "might" not in question_terms("What might delay the release?")
    # Nor do the adverbs that weigh what is said: "actually", "really", "just".
    assert question_terms("How many vaccinations did Elmfield actually see?") == ["vaccin", "elmfield", "see"]
    assert question_terms("Is it really ok to just text Gemma?") == ["text", "gemma"]  # "ok" asks nothing about
    # Nor does an indefinite pronoun name anyone.
    reported = question_terms("Someone's reported a hate crime: how quickly must we reply?")
    assert reported == ["report", "hate", "crime", "quick", "repli"]
    assert question_terms("What can the duty manager sign off without anyone else's approval?") == [
        "duti", "manag", "sign", "approv"
    ]


def test_a_quotation_of_several_sentences_is_one_statement_and_keeps_its_closing_mark():
    quoted = '"I don\'t need the maps offline. I need my notes not to vanish." Photos matter most.'
    assert split_sentences(quoted) == [
        '"I don\'t need the maps offline. I need my notes not to vanish."',
        "Photos matter most.",
    ]
    assert split_sentences('> "I need my notes not to vanish." (surveyor)') == [  # a Markdown quote's mark is markup
        '"I need my notes not to vanish." (surveyor)'
    ]
    assert split_sentences('He said "stop the pumps." Then the crew left.') == [
        'He said "stop the pumps."',
        "Then the crew left.",
    ]


def test_nothing_is_glued_across_lines():
    items = "- Pumps, valves, meters etc.\n- Replacement parts are ordered in March."
    assert split_sentences(items) == ["Pumps, valves, meters etc.", "Replacement parts are ordered in March."]
    stray = 'The sign read "Closed. Nobody works here.\nThe next day it opened again.'
    assert split_sentences(stray)[-1] == "The next day it opened again."


def test_what_a_negative_contraction_leaves_is_no_term():
    """The word pattern splits "aren't" at its apostrophe: "aren" named no thing, yet became a key term,
    a gap and a sub-question ("What is known about aren?")."""
    terms = question_terms(
        "Why do some copies survive when they aren't next to each other, and why doesn't uniq see them?"
    )
    assert "aren" not in terms and "doesn" not in terms
    assert {"copi", "surviv", "uniq"} <= set(terms)


def test_a_contracts_numbered_clauses_are_its_sentences_under_no_heading():
    """A grant agreement's PDF: "1. Amount and payment" ran into its first clause ("Amount and payment 1.1 The
    Foundation grants …"), since "1.1" was no list's number; then it stood as a fact of its own."""
    page = (
        "1. Amount and payment\n"
        "1.1 The Foundation grants the Grantee USD 250,000 for the period 1 November 2026 to 31\n"
        "October 2028.\n"
        "1.2 The grant is paid in two instalments.\n"
        "2. Use of funds\n"
        "2.1 Indirect costs may not exceed 12 percent of direct costs.\n"
        "The temperature was raised to\n"
        "2.5 degrees above the set point."
    )
    assert split_sentences(page) == [
        "The Foundation grants the Grantee USD 250,000 for the period 1 November 2026 to 31 October 2028.",
        "The grant is paid in two instalments.",
        "Indirect costs may not exceed 12 percent of direct costs.",
        "The temperature was raised to 2.5 degrees above the set point.",
    ]


def test_a_label_with_its_figure_is_a_sentence_not_a_title():
    """A scanned invoice's "Total due: $4,275.00" was read as a title (its one long word capitalised)."""
    assert split_sentences(
        "Board of Directors: Minutes of 14 October 2026\nTotal due: $4,275.00\nPayment Terms Apply\n"
        "Delivery to Eastport: $150.00"
    ) == ["Total due: $4,275.00", "Delivery to Eastport: $150.00"]


def test_a_numbered_section_heading_is_no_sentence_and_a_numbered_list_keeps_its_items():
    """A subcontract's "2. Price and payment" (a DOCX heading) and a safety plan's "3. Cranes and lifting" (a PDF's
    line) were digest facts: a numbered line between lines that are no list's items heads a section."""
    assert split_sentences("2. Price and payment\n\nThe subcontract sum is EUR 612,000.") == [
        "The subcontract sum is EUR 612,000."
    ]
    assert split_sentences("Lifts are planned.\n3. Cranes and lifting\nThe crane stops in high wind.") == [
        "Lifts are planned.",
        "The crane stops in high wind.",
    ]
    steps = ["Open the valve now", "Close the tap now", "Wait for ten minutes"]  # one long word is no title
    tight = "Steps:\n" + "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1)) + "\nThen read the meter."
    loose = "\n\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
    assert split_sentences(tight) == [*steps, "Then read the meter."]
    assert split_sentences(loose) == steps


def test_a_number_without_a_mark_heads_nothing_and_a_capitalised_word_alone_is_a_heading():
    """Kept as they were by the numbered headings' change: an exit status and its meaning ("124 if COMMAND times
    out") is no section's number, and a word alone on its line ("Idle") heads the sentence under it."""
    assert split_sentences("EXIT STATUS\n\n124 if COMMAND times out\n\n125 if the timeout command fails") == [
        "124 if COMMAND times out",
        "125 if the timeout command fails",
    ]
    assert split_sentences("Idle\nA program running with idle priority gets disk time last.") == [
        "A program running with idle priority gets disk time last."
    ]
