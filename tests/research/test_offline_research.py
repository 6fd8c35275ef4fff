"""The offline provider's six research tasks: schema-valid, extractive, deterministic answers.

Prompts are built the way the research engine builds them: an IR envelope of
numbered search results (`note_source("[n] label", text)`) with the task text
and its INPUT_JSON, rendered to text.
"""

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from llm_platform.base import LLMRequest, ProviderError
from llm_platform.ir import build_envelope, note_source, render_text
from llm_platform.ir.budget import SUMMARY_PREFIX, fit_to_budget, stage_costs
from llm_platform.offline import OfflineProvider
from llm_platform.sourcerefs import ref_key
from llm_platform.statements import is_statement, statements
from llm_platform.task_envelope import evidence_chunks, task_text
from research_app.runs.offline import sufficiency
from research_app.runs.offline.findings import MAX_FINDING_CHARS, MAX_FINDINGS, page_sections, result_number
from research_app.runs.offline.questions import own_part, question_clauses, question_parts, split_clauses
from research_app.runs.split import split_by_token_overlap

SCHEMAS = Path(__file__).resolve().parents[2] / "prompts" / "schemas"
SCHEMA_OF = {
    "NODE_QUERIES": "node_queries",
    "NODE_FINDINGS": "node_findings",
    "NODE_SUFFICIENCY": "node_sufficiency",
    "NODE_DECOMPOSE": "node_decompose",
    "CONTEXT_SPLIT": "context_split",
    "REPORT": "report",
}

QUESTION = "Did the valve programme reduce water losses and what did it cost?"
RESULTS = [
    (3, "report.pdf, Page 4", "The valve programme started in 2019. Water losses fell from 24 % to 19 % after it."),
    (5, "plan.md § Budget > 2022", "The valve programme cost 2.1 M€ in total. The weather was mild that year."),
    (7, "Football results", "The home team won three matches in a row."),
]
ITEMS = [
    {
        "kind": "fact",
        "text": "The board approved a budget of 2 M€ for the valves in 2020.",
        "sources": ["memo.docx::S3"],
    },
    {"kind": "uncertainty", "text": "Night-time losses may be underestimated.", "sources": ["report.pdf::S9"]},
    {"kind": "fact", "text": "Staff training took place in March.", "sources": ["memo.docx::S5"]},
]


@cache
def validator(schema: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / f"{schema}.schema.json").read_text(encoding="utf-8")))


def envelope_for(task: str, inputs: dict, results=()):
    sources = [note_source(f"[{number}] {label}", text) for number, label, text in results]
    return build_envelope(task_text(task, "Do the task described in the system prompt.", inputs), sources)


def prompt_for(task: str, inputs: dict, results=(), *, limit_tokens: int | None = None) -> str:
    envelope = envelope_for(task, inputs, results)
    if limit_tokens is not None:
        envelope = fit_to_budget(envelope, limit_tokens)
    return render_text(envelope)


def answer(prompt: str, task: str) -> dict:
    response = OfflineProvider().complete(LLMRequest(task=task.lower(), system="", prompt=prompt))
    output = json.loads(response.text)
    errors = [error.message for error in validator(SCHEMA_OF[task]).iter_errors(output)]
    assert errors == [], f"{task} output does not match its schema: {errors}"
    return output


def ask(task: str, inputs: dict, results=()) -> dict:
    return answer(prompt_for(task, inputs, results), task)


# --- NODE_QUERIES -----------------------------------------------------------------


def test_queries_start_with_the_question_then_its_keywords():
    queries = ask("NODE_QUERIES", {"question": QUESTION, "max_queries": 8})["queries"]
    assert queries[0] == QUESTION
    assert queries[1] == "valve programme reduce water losses cost"
    assert len({q.lower() for q in queries}) == len(queries)


def test_queries_keep_quoted_phrases_and_respect_max_queries():
    question = 'How did "pressure management" affect night-time leakage in Lyon districts?'
    queries = ask("NODE_QUERIES", {"question": question, "max_queries": 8})["queries"]
    assert '"pressure management"' in queries
    assert "Lyon districts" in queries
    assert ask("NODE_QUERIES", {"question": question, "max_queries": 2})["queries"] == queries[:2]
    assert len(ask("NODE_QUERIES", {"question": question, "max_queries": 50})["queries"]) <= 8
    assert ask("NODE_QUERIES", {"question": question, "max_queries": 0})["queries"] == [question]


def test_a_prompt_without_a_question_is_refused():
    with pytest.raises(ProviderError, match="no question"):
        OfflineProvider().complete(
            LLMRequest(task="node_queries", system="", prompt=prompt_for("NODE_QUERIES", {"max_queries": 3}))
        )


# --- NODE_FINDINGS ----------------------------------------------------------------


def test_findings_cite_the_results_they_come_from():
    findings = ask("NODE_FINDINGS", {"question": QUESTION}, RESULTS)["findings"]
    by_text = {f["text"]: f["citations"] for f in findings}
    assert by_text["Water losses fell from 24 % to 19 % after it."] == [3]
    assert by_text["The valve programme cost 2.1 M€ in total."] == [5]
    assert by_text["The valve programme started in 2019."] == [3]
    cited = {n for f in findings for n in f["citations"]}
    assert 7 not in cited  # shares no word with the question
    assert "The weather was mild that year." not in by_text
    # Ranked by overlap: "valve programme cost" (3 terms) before "valve programme" (2).
    assert findings[0]["text"] == "The valve programme cost 2.1 M€ in total."


def test_the_same_sentence_in_several_results_is_one_finding_citing_all():
    shared = "Water losses fell from 24 % to 19 % after the valve programme."
    results = [
        (2, "a.pdf, Page 1", f"Intro text without much. {shared}"),
        (6, "b.md § Results", f"{shared} Other remarks follow here."),
        (4, "c.html", "Nothing about that topic in here at all."),
    ]
    findings = ask("NODE_FINDINGS", {"question": QUESTION}, results)["findings"]
    assert [f for f in findings if f["text"] == shared] == [{"text": shared, "citations": [2, 6]}]
    assert sum(f["text"] == shared for f in findings) == 1


def test_a_result_that_bears_on_the_question_by_one_word_gives_no_finding():
    """A report on new parents quoted an onboarding plan's "the new engineer meets their buddy": each result gave
    its best two statements, however far from the question the best of them came."""
    results = [
        (1, "handbook.pdf, Page 2", "Birth parents receive 20 weeks of paid leave. Other parents receive 8 weeks."),
        (2, "onboarding.docx", "On day one the new engineer meets their buddy. Laptops arrive before day one."),
    ]
    findings = ask("NODE_FINDINGS", {"question": "How much paid leave do new parents get?"}, results)["findings"]
    assert findings[0] == {"text": "Birth parents receive 20 weeks of paid leave.", "citations": [1]}
    assert {n for finding in findings for n in finding["citations"]} == {1}, findings


def test_a_part_of_a_list_finds_what_answers_it_not_what_answers_the_frame_its_siblings_share():
    """A grant team's "What does a new programme officer need to know about payments, reporting and expenses?":
    the payments node's findings were the register's rows ("programme_officer: Leah Morgan") and "Every
    application is read by two programme officers …", which bear on the words every part shares."""
    frame = "What does a new programme officer need to know about"
    results = [
        (1, "handbook.pdf, Page 1", "A new programme officer gets to know each grantee in the first month."),
        (2, "policy.pdf, Page 1", "Every application is read by two programme officers, who score it."),
        (3, "email.txt", "Payment requests reach finance by noon on the Monday before a run."),
    ]
    question = {"question": f"{frame} payments?"}
    others = [f"{frame} reporting?", f"{frame} expenses?"]
    alone = ask("NODE_FINDINGS", question, results)["findings"]
    assert alone[0]["citations"] == [1], "the frame's words found it"
    apart = ask("NODE_FINDINGS", {**question, "other_parts": others}, results)["findings"]
    assert apart == [{"text": results[2][2], "citations": [3]}], apart
    # What no statement says apart from the frame leaves the findings as they were.
    nothing = ask("NODE_FINDINGS", {"question": f"{frame} parking?", "other_parts": others}, results)["findings"]
    assert nothing == ask("NODE_FINDINGS", {"question": f"{frame} parking?"}, results)["findings"]


def test_a_part_that_names_the_kind_of_answer_finds_the_statements_that_hold_it():
    """ "What will the Block C lift replacement mean for residents: cost?" quoted a boiler programme's cost and
    the agency plumbers': the tender ("… Kellaway Lifts at £186,000") never says "cost", so the part's own word
    kept it out. A part that names the kind of answer the question asks for is borne on by holding it."""
    frame = "What will the Block C lift replacement mean for residents:"
    results = [
        (
            1,
            "minutes.txt, 7. Block C lift replacement",
            "The lowest compliant tender for the Block C lift replacement was from Kellaway Lifts at £186,000.",
        ),
        (2, "minutes.txt, 9. Gas safety", "The boiler programme's average cost is 3,150 boilers."),
    ]
    question = {"question": f"{frame} cost?", "other_parts": [f"{frame} timing?", f"{frame} support?"]}
    findings = ask("NODE_FINDINGS", question, results)["findings"]
    assert findings and findings[0]["citations"] == [1], findings


def test_a_parts_own_words_are_those_its_siblings_do_not_all_share():
    frame = "What does a new programme officer need to know about"
    siblings = [f"{frame} reporting?", f"{frame} expenses?"]
    assert own_part(f"{frame} payments?", siblings) == "payments"
    assert own_part("What did the valves cost?", ["Did the valves reduce water losses?"]) == "cost"
    assert own_part(f"{frame} payments?", []) == ""
    assert own_part(f"{frame} payments?", [f"{frame} payments?"]) == "", "no word of its own"


def test_a_finding_is_weighed_with_its_sections_heading_and_quoted_without_it():
    results = [
        (1, "postmortem.md, Section: Checkout outage > Summary", "The checkout outage lasted 47 minutes."),
        (2, "postmortem.md, Section: Checkout outage > Root cause", "## Root cause\n\nA setting lowered the pool."),
    ]
    findings = ask("NODE_FINDINGS", {"question": "What caused the checkout outage?"}, results)["findings"]
    # The cause shares no word with the question: its heading does.
    assert {"text": "A setting lowered the pool.", "citations": [2]} in findings
    # The report reads it the same way: the cause leads the section and the summary.
    report_findings = [
        {"node": "1", "question": "What caused the checkout outage?", "text": f["text"], "citations": f["citations"]}
        for f in reversed(findings)
    ]
    inputs = report_inputs(question="What caused the checkout outage?", findings=report_findings, context_items=[])
    out = ask("REPORT", inputs, results)
    assert out["sections"][0]["paragraphs"][0]["text"] == "A setting lowered the pool."
    assert out["summary"].startswith("A setting lowered the pool.")


def test_a_pdf_pages_statements_are_weighed_under_their_own_sections_heading():
    """A PDF's page holds several sections (the reader opens a span at each heading it sets larger): each
    statement was read under the page's title, so the second item of "Follow-up work" bore on nothing."""
    page = (
        "Checkout outage postmortem\nAuthor: Dana Whitfield.\n\nTimeline\nAt 13:55 a setting raised the pool "
        "of every pod.\n\nFollow-up work\nPgBouncer goes in front of the primary database.\nA check in CI "
        "rejects a pool larger than the database allows."
    )
    findings = ask(
        "NODE_FINDINGS", {"question": "What follow-up work is planned?"}, [(1, "postmortem.pdf, Page 1", page)]
    )
    texts = [finding["text"] for finding in findings["findings"]]
    assert "A check in CI rejects a pool larger than the database allows." in texts, texts
    assert not any("13:55" in text for text in texts), texts


def test_a_clause_asked_again_with_a_bare_question_word_is_two_questions():
    """ "What is changing on our routes in January, and why?" ran as one node: "why" alone names nothing, so it
    stayed with the clause before it, and the report's one section never asked for a cause."""
    assert question_clauses("What is changing on our routes in January, and why?") == [
        "What is changing on our routes in January",
        "Why is this changing on our routes in January",
    ]
    assert question_clauses("Which buses are off the road and why?") == [
        "Which buses are off the road",
        "Why are the buses off the road",
    ]
    # Its "what" the object, or who asks, there is no sure way to ask it again: one question, as before.
    assert question_clauses("What did the pumps cost, and why?") == ["What did the pumps cost, and why"]
    assert question_clauses("Who is leaving and why?") == ["Who is leaving and why"]


def test_a_lead_that_lists_what_it_asks_is_asked_of_each_after_the_lead():
    """ "Explain Brookvale's approach to recharging tenants: what is charged, how much, how it is collected and
    when charges are waived." asked "how Explain Brookvale s approach is collected": the lead's imperative
    stood in for "it". A lead then a list of things, or "…, including a, b and c", is asked of each too."""
    assert question_clauses(
        "Explain our approach to recharging tenants: what is charged, how it is collected and when charges are waived."
    ) == [
        "Explain our approach to recharging tenants: what is charged",
        "Explain our approach to recharging tenants: how it is collected",
        "Explain our approach to recharging tenants: when charges are waived",
    ]
    assert question_clauses(
        "Summarise our boiler position: compliance, problem properties and the replacement plan."
    ) == [
        "Summarise our boiler position: compliance",
        "Summarise our boiler position: problem properties",
        "Summarise our boiler position: the replacement plan",
    ]
    assert question_clauses("What will the lift works mean for residents, including cost, timing and support?") == [
        "What will the lift works mean for residents: cost",
        "What will the lift works mean for residents: timing",
        "What will the lift works mean for residents: support",
    ]
    # Two things, or a clause after the colon, stay one question.
    assert question_clauses("Summarise the pilot: costs and savings.") == ["Summarise the pilot: costs and savings"]
    assert question_clauses("What happened to the pumps: did they fail?") == [
        "What happened to the pumps: did they fail"
    ]


def test_a_pdf_spans_opening_heading_heads_its_statements():
    """A handbook's page span opens with its section's heading ("2. Vehicle checks"): its statements stood under
    no heading, the first paragraph's heading being taken for the page's."""
    span = "2. Vehicle checks\nTyre tread below 2 mm is always a red defect.\n\n3. Passengers\nDogs travel free."
    assert page_sections("", span) == [
        ("2. Vehicle checks", "2. Vehicle checks\nTyre tread below 2 mm is always a red defect."),
        ("3. Passengers", "3. Passengers\nDogs travel free."),
    ]
    assert page_sections("handbook", "Intro text.\n\n2. Checks\nA check.")[0] == ("handbook", "Intro text.")


def test_a_finding_is_weighed_after_its_pages_title_which_names_what_its_options_are_of():
    """A manual's OPTIONS section says "-o" without the command's name: its section's path
    ("killall(1) > OPTIONS") says it."""
    results = [
        (1, "ps.1.md, Section: ps(1) > OPTIONS", "## OPTIONS\n\n-o: Show processes started before a time."),
        (
            2,
            "killall.1.md, Section: killall(1) > OPTIONS",
            "## OPTIONS\n\n-o: Match only processes started before a time.",
        ),
    ]
    question = "How do I make killall act only on processes started before a time?"
    findings = ask("NODE_FINDINGS", {"question": question}, results)["findings"]
    assert findings[0] == {"text": "-o: Match only processes started before a time.", "citations": [2]}


def test_a_list_without_full_stops_states_its_items_and_a_lone_heading_states_nothing():
    """A board deck's slide ("Q4 plan" over "Hire two implementation consultants by January", "Launch fast-track
    onboarding") gave no finding: a line no full stop ends read as a heading. Two such lines in a row are a
    list's items; a title, or one line above its paragraph, is still a heading."""
    slide = (
        "Q4 plan\nHire two implementation consultants by January\nLaunch fast-track onboarding\n"
        "Target: $220,000 new ARR\nTallyfox · Confidential"
    )
    assert statements(slide) == [
        "Q4 plan: Hire two implementation consultants by January.",  # a short term above a line: a definition
        "Launch fast-track onboarding.",
        "Target: $220,000 new ARR",
    ]
    assert statements("Q3 2026 board update for the revenue team\nRevenue team · 20 October 2026") == []
    memo = "Costs and maintenance of the valves\n\nThe valves cost 48,000 euros. They were fitted in May."
    assert statements(memo) == ["The valves cost 48,000 euros.", "They were fitted in May."]
    findings = ask("NODE_FINDINGS", {"question": "What are we hiring in Q4?"}, [(1, "board.pdf, Page 4", slide)])
    assert {"text": "Q4 plan: Hire two implementation consultants by January.", "citations": [1]} in findings[
        "findings"
    ]


def test_a_result_gives_every_statement_that_holds_what_the_question_asks_for():
    """A win/loss analysis's "Why we lose" section holds three reasons; a result gave its best two, and the one
    that says why ("… our eight-week implementation was too slow") was left out of "Why did we lose deals?"."""
    lose = (
        "Both lost deals went to Ledgerly. Price was mentioned, but it was not the deciding factor. "
        "In each case the buyer had a hard deadline and our eight-week implementation was too slow."
    )
    results = [
        (1, "win-loss.docx, Section: Win/loss analysis > Why we lose", lose),
        *(
            (n, f"pipeline-{n}.md, Section: Q3 deals", f"Region {n} closed deals in Q3. Region {n} lost deals in Q3.")
            for n in range(2, 6)
        ),
    ]
    findings = ask("NODE_FINDINGS", {"question": "Why did we lose deals in Q3?"}, results)["findings"]
    texts = [finding["text"] for finding in findings]
    assert texts[:3] == [sentence + "." for sentence in lose.rstrip(".").split(". ")], texts


def test_licence_text_is_no_finding():
    """A manual's COPYRIGHT section shares "copies" and "program" with many questions: it states the
    licence, not anything the manual is about."""
    results = [
        (
            1,
            "patch.1.md, Section: patch(1) > COPYING",
            "## COPYING\n\nCopyright (C) 1989 Free Software "
            "Foundation, Inc.\n\nPermission is granted to make verbatim copies of this program's manual.",
        ),
        (2, "cp.1.md, Section: cp(1) > DESCRIPTION", "## DESCRIPTION\n\nCopy the program's files to a folder."),
    ]
    findings = ask("NODE_FINDINGS", {"question": "How do I make copies of a program?"}, results)["findings"]
    assert findings == [{"text": "Copy the program's files to a folder.", "citations": [2]}]


def test_a_result_gives_more_than_its_best_two_statements_when_findings_have_room():
    """A grant agreement is one span: "What does the grant require us to report?" found its due dates and
    lost the clause that says what each report states, two statements a result being all it could give."""
    agreement = (
        "The interim report is due on 31 March 2027 and the final report on 31 December 2028. "
        "Each report states the number of learners enrolled and the hours of tutoring delivered. "
        "The report to the Foundation is signed by the Grantee's director. "
        "The grant is paid in two instalments."
    )
    results = [
        (1, "grant.pdf, Page 1", agreement),
        (2, "faq.html", "We mail a receipt for every gift to the Foundation."),
    ]
    findings = ask("NODE_FINDINGS", {"question": "What does the grant require us to report?"}, results)["findings"]
    texts = [finding["text"] for finding in findings]
    assert "Each report states the number of learners enrolled and the hours of tutoring delivered." in texts
    assert len([finding for finding in findings if finding["citations"] == [1]]) > 2, texts


def test_findings_are_empty_without_results_or_overlap():
    assert ask("NODE_FINDINGS", {"question": QUESTION})["findings"] == []
    unrelated = [(1, "x.pdf", "The home team won three matches in a row.")]
    assert ask("NODE_FINDINGS", {"question": QUESTION}, unrelated)["findings"] == []


def test_findings_skip_results_whose_text_is_empty_or_omitted_by_the_budget():
    empty = [(1, "empty.pdf", ""), (2, "full.pdf", "The valve programme cost 2.1 M€ in total.")]
    findings = ask("NODE_FINDINGS", {"question": QUESTION}, empty)["findings"]
    assert findings == [{"text": "The valve programme cost 2.1 M€ in total.", "citations": [2]}]

    # The degrade ladder's first stage reduces the low-ranked half to "[omitted]": those cannot be cited.
    results = [(n, f"doc{n}.pdf", f"The valve programme cost {n} M€ in year {2000 + n}.") for n in range(1, 7)]
    inputs = {"question": QUESTION}
    full_prompt = prompt_for("NODE_FINDINGS", inputs, results)
    costs = stage_costs(envelope_for("NODE_FINDINGS", inputs, results))
    assert costs[1] < costs[0]
    prompt = prompt_for("NODE_FINDINGS", inputs, results, limit_tokens=costs[1])
    visible = {result_number(c) for c in evidence_chunks(prompt) if c.text}
    assert visible == {1, 2, 3}
    cited = {n for f in answer(prompt, "NODE_FINDINGS")["findings"] for n in f["citations"]}
    assert cited == visible
    assert {n for f in answer(full_prompt, "NODE_FINDINGS")["findings"] for n in f["citations"]} == set(range(1, 7))


def test_findings_drop_the_budget_summary_marker():
    # Stage 2 of the degrade ladder replaces the second-best result by "[extractive summary] … [see … for full
    # content]" (the best stays whole, the low-ranked half is already omitted).
    long_tail = "\n\n".join(f"Paragraph {n} says nothing of note about the weather." for n in range(30))
    results = [
        (1, "a.pdf", "The valve programme cost 2.1 M€ in total."),
        (2, "b.pdf", f"Water losses fell after the valve programme.\n\n{long_tail}"),
        (3, "c.pdf", "The valve programme ended."),
        (4, "d.pdf", "The valve programme was praised."),
    ]
    inputs = {"question": QUESTION}
    costs = stage_costs(envelope_for("NODE_FINDINGS", inputs, results))
    prompt = prompt_for("NODE_FINDINGS", inputs, results, limit_tokens=costs[2])
    assert SUMMARY_PREFIX in prompt
    findings = answer(prompt, "NODE_FINDINGS")["findings"]
    assert {"text": "Water losses fell after the valve programme.", "citations": [2]} in findings
    assert not any("[" in f["text"] or "full content" in f["text"] for f in findings)


def test_long_sentences_are_cut_at_a_word_boundary():
    sentence = "The valve programme " + " ".join(f"reduced losses in district number {n}" for n in range(60)) + "."
    findings = ask("NODE_FINDINGS", {"question": QUESTION}, [(1, "long.pdf", sentence)])["findings"]
    text = findings[0]["text"]
    assert len(text) <= MAX_FINDING_CHARS
    assert text.endswith("…")
    assert sentence.startswith(text.removesuffix("…"))
    assert sentence[len(text) - 1] == " "  # the cut fell between words


def test_at_most_eight_findings():
    results = [(n, f"d{n}.pdf", f"The valve programme cost {n} M€ in district {n}.") for n in range(1, 13)]
    findings = ask("NODE_FINDINGS", {"question": QUESTION}, results)["findings"]
    assert len(findings) == MAX_FINDINGS
    assert [f["citations"] for f in findings] == [[n] for n in range(1, 9)]  # ties ranked by result number


# --- NODE_SUFFICIENCY ---------------------------------------------------------------


def test_sufficient_when_the_findings_cover_the_question():
    findings = [
        {"text": "The valve programme reduced water losses by a fifth.", "citations": [3]},
        {"text": "Losses fell in every district.", "citations": [5]},
    ]
    question = "Did the valve programme reduce water losses?"
    out = ask("NODE_SUFFICIENCY", {"question": question, "findings": findings, "context_items": []})
    assert out["is_sufficient"] is True
    assert out["gaps"] == []
    assert "2 search findings" in out["reasoning"] and "0 items" in out["reasoning"]
    assert "user's files cover" not in out["reasoning"]


def test_a_question_of_several_parts_is_explored_part_by_part():
    findings = [
        {"text": "The valve programme reduced water losses by a fifth.", "citations": [3]},
        {"text": "It cost 2.1 M€.", "citations": [5]},
    ]
    out = ask("NODE_SUFFICIENCY", {"question": QUESTION, "findings": findings, "context_items": []})
    assert out["is_sufficient"] is False, "each part is searched on its own"
    assert "asks 2 things" in out["reasoning"]
    children = ask("NODE_DECOMPOSE", {"question": QUESTION, "gaps": out["gaps"], "context_items": []})["children"]
    assert [child["question"] for child in children] == [
        "Did the valve programme reduce water losses?",
        "What did the valve programme cost?",
    ]


def test_insufficient_with_one_gap_per_uncovered_phrase():
    question = "What was the maintenance cost of the valves and the staff training budget?"
    findings = [{"text": "Valves were installed in 14 districts.", "citations": [1]}]
    out = ask("NODE_SUFFICIENCY", {"question": question, "findings": findings, "context_items": []})
    assert out["is_sufficient"] is False
    assert out["gaps"] == ["No evidence yet on “maintenance cost”.", "No evidence yet on “staff training budget”."]
    assert "1 of 6 key terms covered" in out["reasoning"]


def test_reasoning_names_the_users_files_when_they_cover_a_term():
    question = "What budget did the board approve for the valve programme?"
    findings = [{"text": "The valve programme started in 2019.", "citations": [3]}]
    out = ask("NODE_SUFFICIENCY", {"question": question, "findings": findings, "context_items": ITEMS[:1]})
    assert out["is_sufficient"] is True  # "budget", "board", "approve" come from the user's files
    assert "1 item from the user's files" in out["reasoning"]
    assert "the user's files cover “budget”, “board”, “approve”" in out["reasoning"]

    alone = ask("NODE_SUFFICIENCY", {"question": question, "findings": findings, "context_items": []})
    assert alone["is_sufficient"] is False
    assert alone["gaps"] == ["No evidence yet on “budget”.", "No evidence yet on “board”."]  # a thing, not its verb


def test_never_sufficient_without_any_evidence():
    out = ask("NODE_SUFFICIENCY", {"question": QUESTION, "findings": [], "context_items": []})
    assert out["is_sufficient"] is False
    assert out["gaps"] == ["No evidence yet on “valve programme water losses”.", "No evidence yet on “cost”."]
    assert "no evidence" in out["reasoning"]


def test_coverage_threshold():
    # 3 of 4 terms covered = 75 %: sufficient; 2 of 4: not.
    question = "valves pumps meters pipes"
    three = [{"text": "Valves, pumps and meters were replaced.", "citations": [1]}]
    two = [{"text": "Valves and pumps were replaced.", "citations": [1]}]
    assert ask("NODE_SUFFICIENCY", {"question": question, "findings": three, "context_items": []})["is_sufficient"]
    out = ask("NODE_SUFFICIENCY", {"question": question, "findings": two, "context_items": []})
    assert out["is_sufficient"] is False
    assert out["gaps"] == ["No evidence yet on “meters pipes”."]


# --- NODE_DECOMPOSE -----------------------------------------------------------------


def test_a_two_clause_question_splits_into_its_clauses():
    out = ask("NODE_DECOMPOSE", {"question": QUESTION, "gaps": [], "context_items": [], "max_children": 4})
    assert [c["question"] for c in out["children"]] == [
        "Did the valve programme reduce water losses?",
        "What did the valve programme cost?",
    ]


def test_a_subject_written_with_hyphens_is_said_as_written():
    assert question_clauses("How stable is the KX-7 variant at high temperature, and what limits its stability?") == [
        "How stable is the KX-7 variant at high temperature",
        "what limits the KX-7 variant's stability",
    ]
    assert question_clauses("Is the follow-up study funded, and when does it start?") == [
        "Is the follow-up study funded",
        "when does the follow-up study start",
    ]


def test_when_the_question_word_is_the_subject_a_later_clauses_it_is_the_first_clause():
    question = "What went wrong for customers in Q3, and what are we doing about it?"
    assert question_clauses(question) == [
        "What went wrong for customers in Q3",
        "what are we doing about what went wrong for customers in Q3",
    ]
    assert question_parts(question)[0] == ""  # "went" is no subject


def test_a_later_clauses_they_is_the_plural_subject_of_the_first():
    """A site team's "What safety risks came up on site this month and how were they handled?" made a node of
    "How were they handled?", which named nothing it could find."""
    assert question_clauses("What safety risks came up on site this month and how were they handled?") == [
        "What safety risks came up on site this month",
        "how were safety risks handled",
    ]
    assert question_clauses("Why did the pumps fail, and what did their repair cost?")[1] == (
        "what did the pumps' repair cost"
    )
    # A subject that is no plural noun leaves "they" as it is.
    assert question_clauses("Why did the network fail, and were they warned?")[1] == "were they warned"


def test_a_clause_that_asks_of_the_subject_splits_and_it_stands_for_what_the_subject_is_doing():
    question = "Where is the network losing water, what is being done about it, and what does it cost?"
    assert question_clauses(question) == [
        "Where is the network losing water",
        "what is being done about the network losing water",
        "what does the network losing water cost",
    ]
    # What the subject is doing is a verb of the question: a gap names the thing ("network"), not "network losing".
    assert question_parts(question_clauses(question)[1]) == ("the network", frozenset({"being", "losing"}))
    # A bare question word asks nothing of its own.
    assert split_clauses("How and why did costs rise?") == ["How and why did costs rise"]
    assert split_clauses("What did the pumps cost, and why?") == ["What did the pumps cost, and why"]


def test_when_the_asker_is_the_subject_a_later_clauses_it_is_what_they_would_do():
    """ "Should we build offline mode, and what would it cost?": "it" is the building, never "we"."""
    assert question_clauses("Should we build offline mode, and what would it cost and when would it ship?") == [
        "Should we build offline mode",
        "what would building offline mode cost",
        "when would building offline mode ship",
    ]
    assert question_clauses("Should I migrate the database to PostgreSQL, and how long would it take?")[1] == (
        "how long would migrating the database to PostgreSQL take"
    )
    assert question_clauses("Can we stop the pumps at night, and what would it save?")[1] == (
        "what would stopping the pumps at night save"
    )
    # … unless the question word is what they do something to: then "it" is that thing.
    assert question_clauses("What do we offer new parents, and how does it compare with our leave policy?")[1] == (
        "how does what we offer new parents compare with our leave policy"
    )


def test_a_later_clauses_that_key_is_said_as_the_first_clause_says_it():
    """Asked on its own as a sub-question, "what that key can run" has nothing before it to point at."""
    question = "How do I let a colleague log in with their SSH key, and how do I restrict what that key can run?"
    assert question_clauses(question)[1] == "how do I restrict what the SSH key can run"
    # A noun the first clause does not name stays as it is, and so does one it names with no determiner.
    assert question_clauses("What did the board decide, and why was that decision late?")[1] == (
        "why was that decision late"
    )
    assert question_clauses("How do I configure SSH keys, and where is that key kept?")[1] == "where is that key kept"


def test_a_thing_after_the_verb_and_a_preposition_is_the_subject():
    """What went wrong with X is about X: "it" of the next clause is X, never the verb "went"."""
    question = "What went wrong with the DNA extraction of the deep soil cores, and how was it fixed?"
    assert question_parts(question)[0] == "the DNA extraction of the deep soil cores"
    assert question_clauses(question)[1] == "how was the DNA extraction of the deep soil cores fixed"
    assert question_parts("What happened to the pumps at station north?")[0] == "the pumps"
    # … but what "happens" is an event: what went wrong (a figure keeps its minus sign).
    question = "What went wrong with the -80 freezer, and what are we changing so it does not happen again?"
    assert question_clauses(question)[1] == (
        "what are we changing so what went wrong with the -80 freezer does not happen again"
    )
    assert question_clauses("What caused the outage, and why did it happen?")[1] == "why did the outage happen"
    # Without a determiner after the preposition, the words before the verb stay the subject.
    assert question_parts("What water losses occurred in 2022?")[0] == "water losses"


def test_a_subject_is_never_a_determiner_alone():
    """An adverb, a stop word, ends the subject before its verb: the noun before it is no bare verb."""
    assert question_parts("How can the script just skip if the last one is still running?")[0] == "the script"
    assert question_parts("Did the valve crews swap?") == ("the valve crews", frozenset({"swap"}))  # a verb still


def test_why_how_when_and_where_are_never_the_subject():
    question = "Why are patients missing appointments, what does it cost us, and what are we doing about it?"
    assert question_parts(question) == ("patients", frozenset({"missing"}))
    assert question_clauses(question) == [
        "Why are patients missing appointments",
        "what does patients missing appointments cost us",
        "what are we doing about patients missing appointments",
    ]
    # "who", "what" and "which" can be: the word after the auxiliary is then the verb.
    assert question_parts("Who must consent before the report is shared?")[1] == frozenset({"consent"})


def test_a_question_no_evidence_answers_in_meaning_is_one_gap_and_gives_no_child(monkeypatch):
    """In a colleague's words the files' answer shares few terms with the question, so its uncovered words
    ("stop", "copy", "day") are no gaps: children about them ("What is known about day?") found nothing
    that answered. Asked again in other words, the whole question finds nothing new: the node ends limited."""
    monkeypatch.setattr(sufficiency.embeddings, "closeness", lambda query, texts: np.full(len(texts), 0.1))
    question = "How do I stop every copy of a program that has been running for more than a day?"
    item = {"kind": "fact", "text": "A program's copies each have their own process.", "sources": ["ps.md::S2"]}
    judged = ask("NODE_SUFFICIENCY", {"question": question, "findings": [], "context_items": [item]})
    gaps = judged["gaps"]
    assert gaps == [f"No passage answers “{question.rstrip('?')}” yet."]
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 3})
    assert out["children"] == []
    # A question set by what comes before it asks its ask on its own: the search then looks for the ask alone.
    question = "Our logs vanish every time the machine restarts. How do I keep them across a reboot?"
    gaps = [f"No passage answers “{question.rstrip('?')}” yet."]
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 3})
    assert [c["question"] for c in out["children"]] == ["How do I keep them across a reboot?"]
    assert out["children"][0]["rationale"].startswith("Asks what the question asks without “Our logs vanish")
    # A gap that names part of it still narrows.
    gaps.append("No evidence yet on “program running”.")
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 3})
    assert [c["question"] for c in out["children"]] != [], out
    # A pronoun is no gap: "what does it cost us" lacks nothing the evidence must name but the cost.
    item = {"kind": "fact", "text": "Missed appointments cost 45 euros each.", "sources": ["p.md::S3"]}
    judged = ask("NODE_SUFFICIENCY", {"question": "What does it cost us?", "findings": [], "context_items": [item]})
    assert not any("“us”" in gap for gap in judged["gaps"]), judged


def test_what_sets_a_question_before_its_question_word_is_no_clause():
    question = "In a script, how can I turn a raw byte count like 2048 into something readable like 2.0K?"
    assert split_clauses(question) == [question.rstrip("?")]
    assert split_clauses("For the 2027 plan, what will it cost and who approves it?") == [
        "For the 2027 plan, what will it cost",
        "who approves it",
    ]


def test_a_list_of_three_things_is_asked_of_each_and_two_things_stay_one_part():
    """A lab's "What does a new lab member need to know about safety, waste and booking equipment?" ran as one
    node, whose search found the best-said of the three: the report had one sentence on booking."""
    assert split_clauses("What does a new lab member need to know about safety, waste and booking equipment?") == [
        "What does a new lab member need to know about safety",
        "What does a new lab member need to know about waste",
        "What does a new lab member need to know about booking equipment",
    ]
    assert split_clauses("What are the risks, costs and timeline of the project?") == [
        "What are the risks of the project",
        "What are the costs of the project",
        "What are the timeline of the project",
    ]
    # A doing that ends the list takes what follows as its own; "of" follows a thing shared by all.
    assert split_clauses("What does a new student need to know about safety, booking and looking after data?") == [
        "What does a new student need to know about safety",
        "What does a new student need to know about booking",
        "What does a new student need to know about looking after data",
    ]
    assert split_clauses("What are the costs, risks and funding of the project?")[2] == (
        "What are the funding of the project"
    )
    assert split_clauses("Did the programme reduce costs and complaints?") == [
        "Did the programme reduce costs and complaints"
    ]
    # Of two lists, the last is asked apart: "… older, disabled or vulnerable tenants across repairs, tenancy and
    # complaints?" ran as one node, its first list's long piece ending the search for the second.
    assert split_clauses(
        "What support do we offer older, disabled or vulnerable tenants across repairs, tenancy and complaints?"
    ) == [
        "What support do we offer older, disabled or vulnerable tenants across repairs",
        "What support do we offer older, disabled or vulnerable tenants across tenancy",
        "What support do we offer older, disabled or vulnerable tenants across complaints",
    ]
    # A clause that asks no question wants the things together.
    assert split_clauses("Compare Postgres, MySQL and SQLite for our workload") == [
        "Compare Postgres, MySQL and SQLite for our workload"
    ]
    out = ask(
        "NODE_DECOMPOSE",
        {"question": "Did the programme reduce losses, costs and complaints?", "gaps": [], "max_children": 4},
    )
    assert [child["question"] for child in out["children"]] == [
        "Did the programme reduce losses?",
        "Did the programme reduce costs?",
        "Did the programme reduce complaints?",
    ]


def test_gap_terms_are_partitioned_among_children():
    question = "What did the valve programme cost?"
    gaps = [
        "No evidence yet on “maintenance cost”.",
        "No evidence yet on “staff training”.",
        "No data on maintenance contracts after 2021",
    ]
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 4})
    questions = [c["question"] for c in out["children"]]
    assert questions == [
        "What is known about maintenance cost for the valve programme?",
        "What is known about staff training for the valve programme?",
        "What is known about contracts 2021 for the valve programme?",  # "maintenance" is already taken
    ]
    for term in ("maintenance", "staff", "training", "contracts", "2021"):
        assert sum(term in q for q in questions) == 1, term
    assert all("valve programme" in q for q in questions)  # the parent's subject is kept


def test_a_question_in_our_frame_narrows_to_its_own_key_terms_not_the_frames():
    question = "What is known about the platform team?"
    gaps = ["No evidence yet on “platform”."]
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 3})
    [child] = [c["question"] for c in out["children"]]
    assert child == "What do sources state directly about platform team?"  # not "… about known platform team?"
    # Its sufficiency asks the evidence for the platform team, not for the frame's words.
    item = {"kind": "fact", "text": "The search team plans a migration.", "sources": ["road.txt::S1"]}
    judged = ask("NODE_SUFFICIENCY", {"question": child, "findings": [], "context_items": [item]})
    assert judged["gaps"] == ["No evidence yet on “platform”."]


def test_a_question_in_our_frame_that_no_passage_answers_names_its_subject_not_our_words(monkeypatch):
    monkeypatch.setattr(sufficiency.embeddings, "closeness", lambda query, texts: np.full(len(texts), 0.1))
    item = {"kind": "fact", "text": "Configuration changes now need a second reviewer.", "sources": ["pm.md::S4"]}
    for question, gap in (
        ("What is known about changing?", "No evidence yet on “changing”."),
        ("What are we changing?", "No passage answers “What are we changing” yet."),
    ):
        judged = ask("NODE_SUFFICIENCY", {"question": question, "findings": [], "context_items": [item]})
        assert judged["is_sufficient"] is False and judged["gaps"] == [gap], question
    # With findings drawn for it, they bear on it: the gap is a passage that answers it whole (a report listed
    # "No passage answers “… need to know about safety” yet" under eight findings on safety).
    finding = {"text": "Configuration changes now need a second reviewer.", "citations": [1]}
    judged = ask("NODE_SUFFICIENCY", {"question": "What are we changing?", "findings": [finding], "context_items": []})
    assert judged["gaps"] == [
        "No passage answers “What are we changing” on its own yet; the findings bear on it in part."
    ]


def test_decompose_respects_max_children():
    question = "What did the valve programme cost?"
    gaps = ["No evidence yet on “maintenance cost”.", "No evidence yet on “staff training”.", "No data on meters"]
    two = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 2})
    assert [c["question"] for c in two["children"]] == [
        "What is known about maintenance cost for the valve programme?",
        "What is known about staff training and meters for the valve programme?",
    ]
    one = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 1})
    assert [c["question"] for c in one["children"]] == ["What is known about maintenance cost for the valve programme?"]
    clauses = ask(
        "NODE_DECOMPOSE",
        {"question": QUESTION, "gaps": ["No evidence yet on “cost”."], "context_items": [], "max_children": 1},
    )
    assert [c["question"] for c in clauses["children"]] == ["What did the valve programme cost?"]


def test_children_never_repeat_the_parent_or_each_other():
    question = "What is known about cost for the valve programme?"
    gaps = ["No evidence yet on “cost”.", "No evidence yet on “cost”."]
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 4})
    questions = [c["question"] for c in out["children"]]
    assert len(questions) == 1
    assert questions[0] != question
    nothing = ask("NODE_DECOMPOSE", {"question": question, "gaps": [], "context_items": [], "max_children": 4})
    assert [c["question"] for c in nothing["children"]] != [question]


def test_rationale_says_when_the_users_files_bear_on_a_child():
    question = "What did the valve programme cost?"
    gaps = [
        "No evidence yet on “budget”.",
        "No evidence yet on “pump maintenance”.",
        "No evidence yet on “night flow”.",
    ]
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": ITEMS, "max_children": 4})
    budget, pumps, night = out["children"]
    assert "budget" in budget["question"] and "user's files bear on it" in budget["rationale"]
    assert "“budget”" in budget["rationale"]
    assert "pump maintenance" in pumps["question"] and "user's files" not in pumps["rationale"]
    assert night["rationale"].endswith("The user's files bear on it: 1 context item mentions “night”.")


# --- CONTEXT_SPLIT ------------------------------------------------------------------

CHILDREN = ["Did the valve programme reduce water losses?", "What budget did the board approve for the valves?"]


def test_each_item_goes_to_the_child_it_overlaps_most():
    out = ask("CONTEXT_SPLIT", {"children": CHILDREN, "parent_items": ITEMS})
    contexts = out["child_contexts"]
    assert [c["child_question"] for c in contexts] == CHILDREN
    losses, budget = contexts
    assert losses["selected_items"] == [ITEMS[1]]  # "losses"
    assert budget["selected_items"] == [ITEMS[0]]  # "budget", "board", "approve", "valves" beat "valve"
    assert ITEMS[2] not in losses["selected_items"] + budget["selected_items"]  # shares nothing with either
    assert "1 shared term: “losses”" in losses["selection_reason"]
    assert "1 shared no term with any child" in out["overall_note"]


def test_tied_items_go_to_every_tied_child_and_empty_children_keep_their_entry():
    item = {"kind": "fact", "text": "Valves were replaced.", "sources": ["a.pdf::S1"]}
    children = ["Which valves failed?", "When were valves bought?", "Who paid the staff?"]
    contexts = ask("CONTEXT_SPLIT", {"children": children, "parent_items": [item]})["child_contexts"]
    assert [c["child_question"] for c in contexts] == children
    assert [c["selected_items"] for c in contexts] == [[item], [item], []]


def test_the_handler_is_split_by_token_overlap():
    prompt = prompt_for("CONTEXT_SPLIT", {"children": CHILDREN, "parent_items": ITEMS})
    out = answer(prompt, "CONTEXT_SPLIT")
    assert out["child_contexts"] == split_by_token_overlap(CHILDREN, ITEMS)
    assert split_by_token_overlap([], ITEMS) == []


def test_split_copies_items_verbatim_without_extra_keys():
    item = {"id": "F1", "kind": "fact", "text": "Water losses fell.", "sources": ["r.pdf::S2"], "reliability": "high"}
    [context] = split_by_token_overlap(["Did water losses fall?"], [item])
    assert context["selected_items"] == [{"kind": "fact", "text": "Water losses fell.", "sources": ["r.pdf::S2"]}]
    assert context["selected_items"][0]["sources"] is not item["sources"]


# --- REPORT -------------------------------------------------------------------------

REPORT_FINDINGS = [
    {
        "node": "1.1",
        "question": "Did the valve programme reduce water losses?",
        "text": "Losses fell.",
        "citations": [3],
    },
    {
        "node": "1.1",
        "question": "Did the valve programme reduce water losses?",
        "text": "Water losses fell from 24 % to 19 % after the valve programme.",
        "citations": [3, 5],
    },
    {"node": "1.2", "question": "What did the valve programme cost?", "text": "It cost 2.1 M€.", "citations": [5, 9]},
]
REPORT_RESULTS = [
    (3, "report.pdf, Page 4", "Water losses fell from 24 % to 19 %."),
    (5, "plan.md § Budget", "The programme cost 2.1 M€."),
    (9, "Web page", "Cost overview."),
]


def report_inputs(**overrides) -> dict:
    inputs = {
        "question": QUESTION,
        "findings": REPORT_FINDINGS,
        "context_items": ITEMS
        + [{"kind": "fact", "text": "Valve losses were audited.", "sources": ["audit.pdf::S2::p. 3"]}],
        "file_summaries": [{"filename": "memo.docx", "summary": "Board memo on the 2020 budget."}],
        "open_gaps": ["No evidence yet on “maintenance cost”."] * 3 + [f"Gap {n} is open." for n in range(20)],
        "search_stats": {"nodes": 3, "queries": 9, "results": 24},
    }
    inputs.update(overrides)
    return inputs


def paragraphs(report: dict):
    return [p for section in report["sections"] for p in section["paragraphs"]]


def test_report_cites_only_given_numbers_and_sources():
    odd = {"node": "1.3", "question": "Odd?", "text": "Odd citations here.", "citations": [0, -1, "7", True, 9, 9]}
    inputs = report_inputs(findings=[*REPORT_FINDINGS, odd])
    out = ask("REPORT", inputs, REPORT_RESULTS)
    given_numbers = {n for f in REPORT_FINDINGS for n in f["citations"]}
    given_refs = {ref_key(ref) for item in inputs["context_items"] for ref in item["sources"]}
    assert {"text": "Odd citations here.", "citations": [9]} in paragraphs(out)
    cited = {n for p in paragraphs(out) for n in p.get("citations", [])}
    sourced = {ref for p in paragraphs(out) for ref in p.get("sources", [])}
    assert cited == given_numbers
    assert sourced <= given_refs
    assert "audit.pdf::S2" in sourced  # the "::p. 3" hint is dropped, the SourceRef kept
    assert out["title"] == QUESTION


def test_report_leads_with_the_questions_findings_then_the_users_files_and_no_file_list():
    out = ask("REPORT", report_inputs(), REPORT_RESULTS)
    headings = [s["heading"] for s in out["sections"]]
    assert headings == [
        "Did the valve programme reduce water losses?",
        "What did the valve programme cost?",
        "From your files",
    ]
    losses, cost, files = out["sections"]
    assert {"text": "Losses fell.", "citations": [3]} in losses["paragraphs"]
    assert cost["paragraphs"] == [{"text": "It cost 2.1 M€.", "citations": [5, 9]}]
    # Relevant items only, each with its own SourceRefs; "Staff training" shares nothing with the question.
    assert {"text": ITEMS[0]["text"], "sources": ["memo.docx::S3"]} in files["paragraphs"]
    assert all(p["text"] != ITEMS[2]["text"] for p in files["paragraphs"])
    assert all("Board memo on the 2020 budget" not in p["text"] for p in paragraphs(out)), "no file list"


def test_a_sentence_found_again_by_a_sub_question_is_told_once_under_it():
    shared = "Losses fell by 18 percent after the valves were replaced."
    findings = [
        {"node": "1", "question": "Did it pay off?", "text": shared, "citations": [3]},
        {"node": "1", "question": "Did it pay off?", "text": "Only the root found this.", "citations": [3]},
        {"node": "1.1", "question": "Did losses fall?", "text": shared, "citations": [3]},
    ]
    out = ask("REPORT", report_inputs(findings=findings, context_items=[], file_summaries=[]), REPORT_RESULTS)
    by_heading = {s["heading"]: [p["text"] for p in s["paragraphs"]] for s in out["sections"]}
    # The sub-question first; what only the split question's own search found comes after, under a heading
    # that does not repeat the report's title.
    assert list(by_heading) == ["Did losses fall?", "Further findings"]
    assert by_heading["Did losses fall?"] == [shared]
    assert by_heading["Further findings"] == ["Only the root found this."]


def test_a_sentence_two_sibling_parts_found_is_told_once_under_the_part_it_answers():
    shared = "Repairs of the Harbour Road main cost 1.2 million euros."
    findings = [
        {"node": "1.1", "question": "Where did the mains burst?", "text": shared, "citations": [3]},
        {
            "node": "1.1",
            "question": "Where did the mains burst?",
            "text": "A main burst on Harbour Road.",
            "citations": [3],
        },
        {"node": "1.2", "question": "What did the repairs cost?", "text": shared, "citations": [3]},
    ]
    out = ask("REPORT", report_inputs(findings=findings, context_items=[], file_summaries=[]), REPORT_RESULTS)
    by_heading = {s["heading"]: [p["text"] for p in s["paragraphs"]] for s in out["sections"]}
    assert by_heading == {
        "Where did the mains burst?": ["A main burst on Harbour Road."],
        "What did the repairs cost?": [shared],
    }


def test_a_sentence_that_lacks_what_a_part_asks_for_is_told_under_a_part_it_can_answer():
    """A "how long" part asks for a duration: an action item its search found too, and nearer it by terms
    ("outage", "checkout"), belongs under the part on what is being done."""
    lasted = "The checkout outage lasted 47 minutes."
    action = "Every checkout migration now runs against a copy of production data."
    findings = [
        {"node": "1.1", "question": "How long did the checkout outage last?", "text": lasted, "citations": [3]},
        {"node": "1.1", "question": "How long did the checkout outage last?", "text": action, "citations": [3]},
        {"node": "1.2", "question": "What are we doing about outages?", "text": action, "citations": [3]},
    ]
    out = ask("REPORT", report_inputs(findings=findings, context_items=[], file_summaries=[]), REPORT_RESULTS)
    by_heading = {s["heading"]: [p["text"] for p in s["paragraphs"]] for s in out["sections"]}
    assert by_heading == {
        "How long did the checkout outage last?": [lasted],
        "What are we doing about outages?": [action],
    }


def test_a_sentence_is_told_under_the_users_question_not_our_narrowing_of_it():
    shared = "Configuration changes now need a second reviewer."
    findings = [
        {"node": "1.1", "question": "What caused the outage?", "text": "A setting lowered the pool.", "citations": [3]},
        {"node": "1.2", "question": "What are we changing?", "text": shared, "citations": [3]},
        {"node": "1.2.1", "question": "What is known about changing?", "text": shared, "citations": [3]},
        {"node": "1.2.1", "question": "What is known about changing?", "text": "Alerts are new.", "citations": [3]},
    ]
    out = ask("REPORT", report_inputs(findings=findings, context_items=[], file_summaries=[]), REPORT_RESULTS)
    by_heading = {s["heading"]: [p["text"] for p in s["paragraphs"]] for s in out["sections"]}
    assert by_heading == {
        "What caused the outage?": ["A setting lowered the pool."],
        "What are we changing?": [shared],
        "What is known about changing?": ["Alerts are new."],  # what only the narrowing found
    }


@pytest.mark.parametrize(
    ("question", "weaker", "answer"),
    [
        (  # by terms and meaning
            "Did the valve programme reduce water losses?",
            "The valves are checked by an external contractor.",
            "Water losses fell by 18 percent after the valves were replaced.",
        ),
        (  # by holding what the question asks for: a sum of money, not more of its words
            "What did the valve programme cost?",
            "The valve programme replaced valves under a valve programme plan.",
            "It cost 1.2 million euros.",
        ),
    ],
)
def test_a_section_leads_with_the_sentence_that_answers_its_question(question, weaker, answer):
    findings = [{"node": "1.1", "question": question, "text": text, "citations": [3]} for text in (weaker, answer)]
    inputs = report_inputs(question=question, findings=findings, context_items=[], file_summaries=[])
    out = ask("REPORT", inputs, REPORT_RESULTS)
    assert [p["text"] for p in out["sections"][0]["paragraphs"]] == [answer, weaker]
    assert out["summary"].startswith(answer)


def test_the_summary_answers_each_part_of_a_split_question():
    """The whole question's best three sentences were all on losses (more of them, more citations); each
    part now gives its best answer, and the summary stops there."""
    losses, cost = "Did the valve programme reduce water losses?", "What did the valve programme cost?"
    findings = [
        {
            "node": "1",
            "question": QUESTION,
            "text": "Water losses in the valve district fell sharply.",
            "citations": [3, 5],
        },
        {
            "node": "1.1",
            "question": losses,
            "text": "Water losses fell from 24 % to 19 % after the valve programme.",
            "citations": [3, 5],
        },
        {
            "node": "1.1",
            "question": losses,
            "text": "Night-time water losses of the valve district fell too.",
            "citations": [3, 5],
        },
        {"node": "1.2", "question": cost, "text": "It cost 2.1 M€.", "citations": [5]},
    ]
    out = ask("REPORT", report_inputs(findings=findings, context_items=[], file_summaries=[]), REPORT_RESULTS)
    assert out["summary"] == f"{findings[1]['text']} {findings[3]['text']}", "one answer a part, and no more"
    assert [s["heading"] for s in out["sections"]] == [losses, cost, "Further findings"]


def test_each_part_of_a_list_is_summarised_by_its_own_nodes_answer():
    """A lab's "What does a new lab member need to know about safety, waste and booking equipment?": the
    summary's three sentences were all on safety, which shares the most words with the frame every part has
    ("a new lab member need to know about"); each part now gives its own node's best answer."""
    question = "What does a new lab member need to know about safety, waste and booking equipment?"
    frame = "What does a new lab member need to know about"
    safety = "New lab members complete the safety course and a lab induction before their first experiment."
    waste = "Sharps go into the yellow bin under the fume hood."
    booking = "The confocal microscope is booked through the facility calendar in slots of at most 4 hours."
    findings = [
        {"node": "1.1", "question": f"{frame} safety?", "text": safety, "citations": [1]},
        {"node": "1.1", "question": f"{frame} safety?", "text": "A new lab member wears a lab coat.", "citations": [1]},
        {"node": "1.2", "question": f"{frame} waste?", "text": waste, "citations": [2]},
        {"node": "1.3", "question": f"{frame} booking equipment?", "text": booking, "citations": [3]},
    ]
    # The whole question's own finding that says only the frame's words goes after the parts' sections.
    findings.insert(
        0, {"node": "1", "question": question, "text": "A new lab member needs to know this page.", "citations": [4]}
    )
    inputs = report_inputs(question=question, findings=findings, context_items=[], file_summaries=[])
    out = ask("REPORT", inputs, REPORT_RESULTS)
    assert out["summary"] == f"{safety} {waste} {booking}", out["summary"]
    assert [s["heading"] for s in out["sections"]][-1] == "Further findings"


def test_a_summary_sentence_that_refers_back_is_told_with_the_one_before_it():
    """The summary quoted "He proposed hiring a contractor …" alone, from a finding that says who he is."""
    question = "Should we upgrade the pumps, and what would the upgrade cost?"
    decided = "The council agreed to upgrade the pumps in 2027."
    cost = "Sam estimated the upgrade at 26 engineering weeks. He proposed hiring a contractor for 40,000 euros."
    findings = [
        {"node": "1.1", "question": "Should we upgrade the pumps?", "text": decided, "citations": [3]},
        {"node": "1.2", "question": "What would the upgrade cost?", "text": cost, "citations": [5]},
    ]
    out = ask("REPORT", report_inputs(question=question, findings=findings, context_items=[]), REPORT_RESULTS)
    assert out["summary"] == f"{decided} {cost}"


def test_report_summary_and_open_questions():
    out = ask("REPORT", report_inputs(), REPORT_RESULTS)
    assert out["summary"].startswith("Water losses fell from 24 % to 19 % after the valve programme.")
    assert out["open_questions"][0] == "No evidence yet on “maintenance cost”."
    assert out["open_questions"].count("No evidence yet on “maintenance cost”.") == 1
    assert len(out["open_questions"]) == 15


def test_report_with_nothing_found_still_has_a_section():
    inputs = report_inputs(findings=[], context_items=[], file_summaries=[], open_gaps=[])
    out = ask("REPORT", inputs)
    assert out["sections"] == [
        {
            "heading": "What was searched",
            "paragraphs": [
                {
                    "text": "The search covered 3 research nodes, 9 queries and 24 results, "
                    "and produced no finding that answers the question."
                }
            ],
        }
    ]
    assert out["summary"].startswith("Nothing was found")
    assert out["open_questions"] == []


def test_report_without_items_has_no_files_section():
    out = ask("REPORT", report_inputs(context_items=[], file_summaries=[]), REPORT_RESULTS)
    headings = [s["heading"] for s in out["sections"]]
    assert "From your files" not in headings and "Files in this context" not in headings
    assert not any(p.get("sources") for p in paragraphs(out))


def test_report_keeps_within_the_section_limit():
    findings = [
        {
            "node": f"1.{n}",
            "question": f"What happened in district {n}?",
            "text": f"District {n} saw change.",
            "citations": [n],
        }
        for n in range(1, 31)
    ]
    out = ask("REPORT", report_inputs(findings=findings))
    assert len(out["sections"]) == 20
    assert out["sections"][-2]["heading"] == "Further findings"
    assert {n for p in paragraphs(out) for n in p.get("citations", [])} == set(range(1, 31))


# --- determinism --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "inputs", "results"),
    [
        ("NODE_QUERIES", {"question": QUESTION, "max_queries": 6}, ()),
        ("NODE_FINDINGS", {"question": QUESTION}, RESULTS),
        ("NODE_SUFFICIENCY", {"question": QUESTION, "findings": REPORT_FINDINGS, "context_items": ITEMS}, ()),
        (
            "NODE_DECOMPOSE",
            {"question": QUESTION, "gaps": ["No data on costs"], "context_items": ITEMS, "max_children": 3},
            (),
        ),
        ("CONTEXT_SPLIT", {"children": CHILDREN, "parent_items": ITEMS}, ()),
        ("REPORT", report_inputs(), REPORT_RESULTS),
    ],
)
def test_same_prompt_same_answer(task, inputs, results):
    prompt = prompt_for(task, inputs, results)
    first = OfflineProvider().complete(LLMRequest(task=task.lower(), system="", prompt=prompt)).text
    second = OfflineProvider().complete(LLMRequest(task=task.lower(), system="", prompt=prompt)).text
    assert first == second
    answer(prompt, task)  # and it is schema-valid


def test_a_gap_that_already_names_the_subject_is_not_given_it_twice():
    out = ask(
        "NODE_DECOMPOSE",
        {
            "question": "How did maintenance staffing change?",
            "gaps": ["No evidence yet on “maintenance staffing change”."],
            "context_items": [],
            "max_children": 3,
        },
    )
    # "change" is the question's verb ("how did maintenance staffing *change*"): the child asks about its subject.
    assert [c["question"] for c in out["children"]] == ["What is known about maintenance staffing?"]


# --- what the offline report says (issue 12, item 9) ---------------------------------

RISK_QUESTION = "What risks threaten the valve programme?"
RISK_RESULTS = [
    (
        1,
        "risks.md § Risks",
        "Risks\n\nCorrosion\n\nCorrosion of the new valves could shorten their service life to 15 years.\n\n"
        "Supply Chain Delays And Costs\n\nDelays in valve deliveries may postpone the second phase by six months.",
    ),
    (
        2,
        "valves.md § Valve programme",
        "Valve programme\n\nThe valve programme replaced 42 gate valves in the valve district. "
        "The valve programme cost 1.2 million euros.",
    ),
    (3, "staff.md § Staffing", "Costs and maintenance\n\nStaff shortages threaten the inspection schedule."),
    (4, "minutes.md", "The valve programme board met in May. Valve programme staff visited 3 sites."),
]


def test_findings_are_statements_never_headings_or_labels():
    """Regression: headings ("Costs and maintenance", "Supply Chain Delays And Costs") and one-word
    lines ("Corrosion") became findings."""
    texts = [f["text"] for f in ask("NODE_FINDINGS", {"question": RISK_QUESTION}, RISK_RESULTS)["findings"]]
    assert texts, "the results do answer the question"
    for heading in ("Risks", "Corrosion", "Supply Chain Delays And Costs", "Costs and maintenance", "Valve programme"):
        assert heading not in texts
    assert all(text.endswith(".") for text in texts), texts
    assert is_statement("Losses fell.")
    assert is_statement("a line of prose that lost its full stop but runs on for more than twelve words in all")
    for not_one in ("Corrosion", "Costs and maintenance", "Did losses fall?", ""):
        assert not is_statement(not_one), not_one
    # A byline says who holds a role, in names alone: "Author: Lena Ortiz." was no statement, so no digest fact.
    assert is_statement("Author: Lena Ortiz.") and is_statement("Reviewers: Priya Nair, Tom Becker and Sam Kowalski")
    for not_one in ("Tags: Infrastructure.", "Status: Accepted", "See Also: the Git Book."):
        assert not is_statement(not_one), not_one


def test_a_title_that_reads_as_a_label_and_its_date_is_no_finding():
    """A call's transcript opens with its title, "Retro call: invoice export outage of 18 November": a label and
    a date, as a plan's milestone is, it was a finding of "What went wrong with exports in November?"."""
    transcript = (
        "Retro call: invoice export outage of 18 November\n"
        "Recorded 20 November 2026. Attendees: Priya Nair, Tom Becker.\n\n"
        "Tom Becker: The export workers ran out of memory on an invoice with 40,000 line items."
    )
    question = "What went wrong with exports in November?"
    texts = [
        f["text"] for f in ask("NODE_FINDINGS", {"question": question}, [(1, "retro.txt", transcript)])["findings"]
    ]
    assert texts and "Retro call: invoice export outage of 18 November" not in texts, texts
    assert any("ran out of memory" in text for text in texts)


def test_a_tables_row_is_a_finding_for_the_question_it_answers():
    """A CSV's rows ("month: 2024-03; …; missed: 93", as its spans hold them) state their values: they
    were never findings, so a report on "how many were missed" quoted the policy, never the table."""
    rows = (
        "month: 2024-01; booked: 820; attended: 738; missed: 82\n"
        "month: 2024-03; booked: 805; attended: 712; missed: 93\n"
    )
    results = [
        (1, "appointments.csv, rows 2-3", rows),
        (2, "policy.md", "Appointments are booked by phone or online. Same-day slots open at 8am."),
    ]
    findings = ask("NODE_FINDINGS", {"question": "How many appointments were missed in March 2024?"}, results)
    march = "month: 2024-03; booked: 805; attended: 712; missed: 93"
    assert findings["findings"][0] == {"text": march, "citations": [1]}
    wide = "id, created, customer, priority, subject, description, status, hours, agent, channel, region, product"
    for header in ("month, booked, attended, missed", wide):
        assert not is_statement(header), "a header names columns, it states nothing"


def test_a_milestone_with_its_date_is_a_finding_for_when():
    """A plan's timeline ("- Every school equipped: 30 June 2027") was no statement: it has no full stop."""
    timeline = (
        "## Timeline\n\n- Tender published: 3 November 2026\n- Every school equipped: 30 June 2027\n"
        "\nAll schools keep their old laptops until then."
    )
    findings = ask("NODE_FINDINGS", {"question": "When will every school be equipped?"}, [(1, "plan.md", timeline)])
    assert findings["findings"][0] == {"text": "Every school equipped: 30 June 2027", "citations": [1]}
    for not_one in ("Chapter 3: Methods", "Step 2: Install the package"):  # a heading holds no value
        assert not is_statement(not_one), not_one


def test_findings_lead_with_the_statement_that_best_answers_by_bm25():
    """A term few results share ("threaten") weighs more than terms they all repeat ("valve programme"):
    counting shared terms put "The valve programme replaced 42 gate valves …" first."""
    findings = ask("NODE_FINDINGS", {"question": RISK_QUESTION}, RISK_RESULTS)["findings"]
    assert findings[0] == {"text": "Staff shortages threaten the inspection schedule.", "citations": [3]}


def test_a_finding_that_refers_back_is_quoted_with_the_statement_before_it():
    results = [
        (
            1,
            "scan.html § FieldPad",
            "FieldPad\n\nFieldPad sells field forms to surveyors. Its roadmap promises offline notes for 2027.",
        ),
        (2, "plan.md § Plan", "Offline notes ship in release 4.2 of our app, planned for April 2027."),
    ]
    texts = [
        f["text"]
        for f in ask("NODE_FINDINGS", {"question": "When will FieldPad offer offline notes?"}, results)["findings"]
    ]
    assert "FieldPad sells field forms to surveyors. Its roadmap promises offline notes for 2027." in texts
    assert "Its roadmap promises offline notes for 2027." not in texts
    assert "FieldPad sells field forms to surveyors." not in texts, "told once, with the statement that refers to it"


def test_the_report_leads_with_the_best_answer_and_tells_each_sentence_once():
    """Regression: a heading stood as a paragraph, an item repeated a finding word for word, and two
    items with one text were both shown. A sentence that is both keeps the finding's citation and
    the item's SourceRef."""
    threat = "Staff shortages threaten the inspection schedule."
    findings = [
        {"node": "1", "question": RISK_QUESTION, "text": "Costs and maintenance", "citations": [3]},
        {
            "node": "1",
            "question": RISK_QUESTION,
            "text": "The valve programme replaced 42 gate valves in the valve district.",
            "citations": [2],
        },
        {"node": "1", "question": RISK_QUESTION, "text": threat, "citations": [3]},
    ]
    corrosion = "Corrosion of the new valves could shorten their service life to 15 years."
    items = [
        {"kind": "fact", "text": "Corrosion", "sources": ["risks.md::S1"]},
        {"kind": "uncertainty", "text": corrosion, "sources": ["risks.md::S2"]},
        {"kind": "fact", "text": corrosion, "sources": ["risks.md::S3"]},
        {"kind": "fact", "text": threat, "sources": ["staff.md::S2"]},
        # As in any run, most of what the files say is about the programme itself.
        {"kind": "fact", "text": "The valve programme cost 1.2 million euros.", "sources": ["valves.md::S2"]},
        {"kind": "fact", "text": "The valve programme board met in May.", "sources": ["minutes.md::S1"]},
    ]
    out = ask(
        "REPORT",
        report_inputs(question=RISK_QUESTION, findings=findings, context_items=items, file_summaries=[]),
        RISK_RESULTS,
    )
    told = [p["text"] for p in paragraphs(out)]
    assert "Costs and maintenance" not in told and "Corrosion" not in told
    keys = [" ".join(t.lower().split()) for t in told]
    assert len(keys) == len(set(keys)), told
    assert {"text": corrosion, "sources": ["risks.md::S2", "risks.md::S3"]} in paragraphs(out)
    assert {"text": threat, "citations": [3], "sources": ["staff.md::S2"]} in paragraphs(out), "told once, citing both"
    assert out["summary"].startswith(threat), out["summary"]


def test_a_context_item_that_says_a_finding_under_a_label_is_not_told_again():
    """A release note's item came twice in a report: as a finding from the page, and under "From your files" as
    its digest's fact, which puts the release before it."""
    retry = "The checkout service now retries a failed card authorisation once, after 300 ms."
    question = "How does the checkout service handle a failed card authorisation?"
    findings = [{"node": "1", "question": question, "text": retry, "citations": [3]}]
    items = [
        {"kind": "fact", "text": f"2026.11 (released 12 November 2026): {retry}", "sources": ["notes.html::S3"]},
        {
            "kind": "fact",
            "text": "A failed card authorisation is logged by the checkout service.",
            "sources": ["a.md::S2"],
        },
    ]
    inputs = report_inputs(question=question, findings=findings, context_items=items, file_summaries=[])
    told = [p["text"] for p in paragraphs(ask("REPORT", inputs, REPORT_RESULTS))]
    assert sum("now retries a failed card" in text for text in told) == 1, told
    assert "A failed card authorisation is logged by the checkout service." in told, told
    # … nor one that a finding tells with the sentence after it, which refers back to it.
    failed = "The freezer in 2.14 failed on Saturday night."
    findings = [
        {"node": "1", "question": question, "text": f"{failed} Its temperature reached -41 °C.", "citations": [3]}
    ]
    items = [{"kind": "fact", "text": failed, "sources": ["email.txt::S1"]}]
    inputs = report_inputs(question="What went wrong with the freezer?", findings=findings, context_items=items)
    told = [p["text"] for p in paragraphs(ask("REPORT", inputs, REPORT_RESULTS))]
    assert sum(failed in text for text in told) == 1, told


@pytest.mark.parametrize(
    ("question", "gaps", "children"),
    [
        (
            RISK_QUESTION,
            ["No evidence yet on “risks threaten”."],
            ["What is known about risks for the valve programme?"],
        ),
        (
            "Why did complaints fall after the repair?",
            ["No evidence yet on “complaints fall”.", "No evidence yet on “repair”."],
            ["What is known about complaints?", "What is known about repair for complaints?"],
        ),
        (
            "What water losses occurred in 2022?",
            ["No evidence yet on “water losses occurred”."],
            ["What is known about water losses?"],
        ),
        (
            "Which suppliers delivered the valves late?",
            ["No evidence yet on “suppliers delivered”.", "No evidence yet on “late”."],
            ["What is known about suppliers for the valves?", "What is known about the valves?"],
        ),
        (
            "Is the budget sufficient for the second phase?",
            ["No evidence yet on “budget sufficient”.", "No evidence yet on “second phase”."],
            ["What is known about the budget?", "What is known about second phase for the budget?"],
        ),
        (
            "What caused the losses in district 3?",
            ["No evidence yet on “caused”."],
            ["What is known about the losses?"],
        ),
        (
            "How much did the valve programme cost?",
            ["No evidence yet on “cost”."],
            ["What is known about cost for the valve programme?"],  # a verb that is also a noun stays
        ),
    ],
)
def test_sub_questions_are_well_formed(question, gaps, children):
    """Regression: the question's verb was asked about as a thing ("What is known about risks threaten?")."""
    out = ask("NODE_DECOMPOSE", {"question": question, "gaps": gaps, "context_items": [], "max_children": 4})
    assert [c["question"] for c in out["children"]] == children


def test_a_narrowed_sub_questions_frame_is_no_gap_of_its_own():
    from research_app.runs.offline.questions import NARROWED_FRAME

    question = f"{NARROWED_FRAME}maintenance staffing?"
    findings = [{"text": "The workshop kept its maintenance staffing at 12 technicians in 2022.", "citations": [1]}]
    answered = ask("NODE_SUFFICIENCY", {"question": question, "findings": findings, "context_items": []})
    assert answered["gaps"] == [] and answered["is_sufficient"], answered
    unanswered = ask("NODE_SUFFICIENCY", {"question": question, "findings": [], "context_items": []})
    assert unanswered["gaps"] == ["No evidence yet on “maintenance staffing”."], unanswered["gaps"]
