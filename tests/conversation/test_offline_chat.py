"""The offline provider's CHAT_TURN: answer from the session's artifacts, or ask for the context it lacks.

Prompts are built the way the conversation service builds them: an IR envelope
whose evidence chunks are the session's artifacts, each titled with its key in
brackets (`note_source("[digest:aggregate] Aggregate digest", text)`), and the
task text with its INPUT_JSON, rendered to text.
"""

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conversation_app.artifacts import report_text
from conversation_app.offline.candidates import source_refs
from conversation_app.offline.message import message_terms
from conversation_app.offline.turn import GREETING
from conversation_app.turn_text import is_bare_follow_up
from llm_platform import embeddings
from llm_platform.answer_types import case_figures, holds_figures
from llm_platform.base import LLMRequest
from llm_platform.ir import build_envelope, fit_to_budget, note_source, render_text
from llm_platform.offline import OfflineProvider
from llm_platform.task_envelope import evidence_chunks, task_text
from llm_platform.terms import base_term, initialism_terms, noun_verbs, question_terms, unit_names

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "prompts" / "schemas" / "chat_turn.schema.json"

RUN = "0b7f3c2e-5d1a-4c8e-9f00-1234567890ab"
SUPPLY = "6a1d9e44-2b3c-4d5e-8f90-abcdefabcdef"
AGGREGATE = (
    "[fact] The pilot ran from March 2021 to June 2022. (a.txt::S1, b.pdf::S3)\n"
    "[fact] Water losses fell from 24 % to 19 % after the valve programme. (report.pdf::S4)\n"
    "[uncertainty] Night-time losses may be underestimated. (report.pdf::S9)"
)
REPORT = "The valve programme cost 2.1 M€ in total. The weather was mild that year."
DIGEST = note_source("[digest:aggregate] Aggregate digest", AGGREGATE)
REPORT_CHUNK = note_source(f"[report:{RUN}] Report: What did the valve programme cost?", REPORT)
SESSION = [DIGEST, REPORT_CHUNK]


@cache
def validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))


def prompt_for(message: str, sources=SESSION, *, history=(), supplied=(), may_request=True, limit=None) -> str:
    inputs = {"message": message, "history": list(history), "supplied": list(supplied), "may_request": may_request}
    envelope = build_envelope(task_text("CHAT_TURN", "Answer the message from the evidence.", inputs), sources)
    if limit is not None:
        envelope = fit_to_budget(envelope, limit)
    return render_text(envelope)


def complete(prompt: str) -> dict:
    response = OfflineProvider().complete(LLMRequest(task="chat_turn", system="", prompt=prompt))
    output = json.loads(response.text)
    errors = [error.message for error in validator().iter_errors(output)]
    assert errors == [], f"CHAT_TURN output does not match its schema: {errors}"
    # Exactly one outcome: an answer and no needs, or no answer and 1..5 needs.
    assert bool(output["answer"]) != bool(output["needs"])
    return output


def chat(message: str, sources=SESSION, **kwargs) -> dict:
    return complete(prompt_for(message, sources, **kwargs))


# --- answers -----------------------------------------------------------------------


def test_an_answer_from_a_digest_cites_its_sourcerefs_without_the_kind_marker():
    output = chat("When was the pilot?")
    # The fact's SourceRefs inside its end, as a passage's sentence has them.
    assert output["answer"].startswith("The pilot ran from March 2021 to June 2022 (a.txt::S1, b.pdf::S3).")
    assert "[fact]" not in output["answer"]
    assert output["citations"] == ["a.txt::S1", "b.pdf::S3"]
    assert output["needs"] == []


def test_an_answer_from_a_report_cites_the_report_key():
    output = chat("How much did the valve programme cost?")
    assert output["answer"].startswith("The valve programme cost 2.1 M€ in total.")
    assert output["citations"][0] == f"report:{RUN}"
    assert "The weather was mild that year." not in output["answer"]  # shares no term with the message


def test_a_reports_paragraphs_are_quoted_one_sentence_at_a_time():
    # Each paragraph of a report cites its sources; the answer quotes the sentence that answers, with them.
    report = {
        "summary": "The outage lasted 3 hours and 40 minutes, from 09:12 to 12:52 UTC.",
        "sections": [
            {
                "paragraphs": [
                    {
                        "text": "The outage lasted 3 hours and 40 minutes, from 09:12 to 12:52 UTC.",
                        "sources": ["pm.md::S2"],
                    },
                    {"text": "About 18,400 orders failed during the outage.", "sources": ["pm.md::S2"]},
                    {
                        "text": "Checkout recovered after the cache was warmed. It took an hour.",
                        "sources": ["pm.md::S3"],
                    },
                ]
            }
        ],
    }
    sources = [note_source(f"[report:{RUN}] Report: The outage", report_text(report))]

    output = chat("How long did the outage last?", sources)

    assert output["answer"] == "The outage lasted 3 hours and 40 minutes, from 09:12 to 12:52 UTC (pm.md::S2)."
    assert output["citations"] == ["pm.md::S2"]  # the file's span the report stands on, which opens in one click


def test_a_report_sentence_found_by_search_is_quoted_with_the_span_its_citation_opens():
    """A report's findings cite search results ([2]), not SourceRefs: the chat quoted them citing the report, and
    its reply opened no span. A result of the session's own file opens its span while its version is current;
    one since replaced, or another session's file, leaves the report's key."""
    report = {
        "summary": "The checkout outage lasted 47 minutes.",
        "sections": [
            {
                "paragraphs": [
                    {"text": "The checkout outage was caused by a pool size change.", "citations": [2], "sources": []}
                ]
            }
        ],
        "references": [
            {"n": 1, "sourceref": "pm.pdf::S2", "version": "v-old", "source_url": "/api/sources/v-old/S2"},
            {"n": 2, "sourceref": "pm.pdf::S4", "version": "v-now", "source_url": "/api/sources/v-now/S4"},
        ],
    }

    def asked(report, replaced=frozenset()):
        sources = [note_source(f"[report:{RUN}] Report: The outage", report_text(report, replaced))]
        return chat("What caused the checkout outage?", sources)["citations"]

    assert asked(report) == ["pm.pdf::S4"]
    assert asked(report, {"v-now"}) == [f"report:{RUN}"]
    report["references"][1]["from_library"] = True
    assert asked(report) == [f"report:{RUN}"]


def test_an_answer_quotes_only_the_sentences_that_answer_best_first():
    facts = "\n".join(
        [
            "[fact] Valve losses decreased in Lyon. (x.txt::S1)",
            "[fact] Valve programme losses decreased sharply in Lyon in 2020. (x.txt::S2)",
            "[fact] Lyon valves were replaced. (x.txt::S3)",
            "[fact] Losses in Lyon were measured weekly. (x.txt::S4)",
            "[fact] The Lyon valve programme losses decreased. (x.txt::S5)",
        ]
    )
    output = chat(
        "Did valve programme losses decrease in Lyon?", [note_source("[digest:x.txt] Digest of x.txt", facts)]
    )
    # S2 and S5 hold every term; S1 lacks the rarest ("programme"), S3 and S4 more: an answer is concise.
    assert output["citations"] == ["x.txt::S2", "x.txt::S5"]
    assert output["answer"] == (
        "Valve programme losses decreased sharply in Lyon in 2020 (x.txt::S2). "
        "The Lyon valve programme losses decreased (x.txt::S5)."
    )


def test_a_second_sentence_that_answers_less_well_is_not_glued_on():
    facts = "\n".join(
        [
            "[fact] Valve programme losses decreased sharply in Lyon in 2020. (x.txt::S2)",
            "[fact] Valve losses decreased in Lyon. (x.txt::S1)",
        ]
    )
    output = chat(
        "Did valve programme losses decrease in Lyon?", [note_source("[digest:x.txt] Digest of x.txt", facts)]
    )
    # S1 holds enough of the terms to answer on its own, but not the rarest ("programme"): the answer is S2's.
    assert output["citations"] == ["x.txt::S2"]


def test_a_long_sentence_is_cut_at_a_word_boundary():
    long = "Valve losses " + " ".join(["declined"] * 200) + "."
    output = chat("What did valve losses do?", [note_source(f"[report:{RUN}] Report", long)])
    assert len(output["answer"]) <= 500
    assert output["answer"].endswith("declined…")


# --- requests ----------------------------------------------------------------------


def test_a_question_the_session_does_not_cover_becomes_a_request_for_a_note():
    output = chat("Who audits the tunnel ventilation?")
    assert output["answer"] == ""
    assert output["citations"] == []
    assert len(output["needs"]) == 1
    need = output["needs"][0]
    assert need["kind"] == "note"
    assert "“audits”" in need["description"] and "“tunnel ventilation”" in need["description"]
    assert "anchor" not in need  # no artifact shares a term with the question


def test_a_request_says_what_the_session_mentions_without_answering():
    """All but one word of the question are in the session: naming that word alone ("Context on “new”") said
    little; the request says what the session does mention, and that none of it answers."""
    need = chat("Who inspected the new valve programme?")["needs"][0]
    assert need["description"].startswith(
        "This session's files, digests and reports mention “valve programme”, but none answers this"
    ), need["description"]
    assert "and none mentions “inspected”, “new”." in need["description"]
    # A time said relative to now is no subject the session lacks.
    assert chat("Who inspected the valves this week?")["needs"][0]["description"].endswith(
        "none mentions “inspected”. Paste a note or attach a document."
    )


def test_a_request_counts_the_words_of_a_passages_headings_as_mentioned():
    review = passage("vendors.pdf::S1", "Vendor review: PagerDuty", "The annual contract costs 14,400 euros.")
    need = chat("Which vendor replaced the pagers?", [*SESSION, review])["needs"][0]
    assert "mention “vendor”" in need["description"], need["description"]
    assert "none mentions “replaced”, “pagers”." in need["description"]


def test_a_request_names_the_document_the_message_mentions():
    output = chat("What does budget.xlsx say about tunnel ventilation?")
    assert [need["kind"] for need in output["needs"]] == ["note", "file"]
    assert output["needs"][1]["description"] == "The document the question refers to: “budget.xlsx”."
    generic = chat("What does the attached spreadsheet say about tunnel ventilation?")
    assert [need["kind"] for need in generic["needs"]] == ["note", "file"]
    assert "spreadsheet" in generic["needs"][1]["description"]
    # "spreadsheet", "attached" and "say" are not topic words: only the topic is asked for.
    assert "“tunnel ventilation”" in generic["needs"][0]["description"]
    assert "spreadsheet" not in generic["needs"][0]["description"]
    # A document the session holds and the prompt carries whole was read: asked for the topic only.
    held = [
        *SESSION,
        note_source("[digest:budget.xlsx] Digest of budget.xlsx", "[fact] Rent is 4 k€. (budget.xlsx::S1)"),
    ]
    assert [n["kind"] for n in chat("What does budget.xlsx say about tunnel ventilation?", held)["needs"]] == ["note"]


def test_a_sentence_answers_only_with_what_the_question_asks_for():
    minutes = note_source(
        "[digest:minutes.txt] Digest of minutes.txt",
        "\n".join(
            [
                "[fact] Board meeting, 12 May 2023. (minutes.txt::S1)",
                "[fact] Training the night crew on the new valve settings took about three weeks. (minutes.txt::S2)",
                "[fact] The board asked the director to prepare a proposal for smart meters in district 5."
                " (minutes.txt::S3)",
                "[fact] Repairs cost 48,000 euros. (minutes.txt::S4)",
                "[fact] Maria Lopez has led the night crew since January 2022. (minutes.txt::S5)",
                "[fact] About 61 percent of households in district 3 reported fewer interruptions. (minutes.txt::S6)",
                "[fact] A burst left 230 households in district 3 without water. (minutes.txt::S7)",
            ]
        ),
    )
    sources = [*SESSION, minutes]
    # The terms are there, and so is what is asked for: a duration, an amount, a name, a date.
    assert chat("How long was the training of the night crew?", sources)["citations"] == ["minutes.txt::S2"]
    assert chat("How much did the repairs cost?", sources)["citations"] == ["minutes.txt::S4"]
    assert chat("Who has led the night crew since 2022?", sources)["citations"] == ["minutes.txt::S5"]
    assert chat("When was the board meeting?", sources)["citations"] == ["minutes.txt::S1"]
    assert chat("How many households were without water?", sources)["citations"] == ["minutes.txt::S7"]
    # Near misses: the terms are there, what is asked for is not (no name, no cost, no count for district 5).
    assert chat("Who chaired the board meeting in May?", sources)["answer"] == ""
    assert chat("How much will the smart meters cost?", sources)["answer"] == ""
    assert chat("How much did training the night crew cost?", sources)["answer"] == ""
    assert chat("How many valves were replaced in district 5?", sources)["answer"] == ""
    assert chat("How many households reported fewer interruptions?", sources)["answer"] == ""  # a share


def test_a_sentence_about_another_name_does_not_answer_for_the_one_asked():
    pilot = note_source(
        "[digest:pilot.pdf] Digest of pilot.pdf",
        "\n".join(
            [
                "[fact] The Lenovo ThinkPad ran out of battery before the last lesson on four days of fifty."
                " (pilot.pdf::S1)",
                "[fact] The HP ProBook lasted through the whole school day. (pilot.pdf::S2)",
            ]
        ),
    )
    sources = [*SESSION, pilot]
    assert chat("How long did the Lenovo battery last in the pilot?", sources)["citations"] == ["pilot.pdf::S1"]
    # The Lenovo's sentence holds a duration and the terms, but it is not about the HP.
    assert chat("How long did the HP battery last in the pilot?", sources)["answer"] == ""


def test_a_name_written_with_a_hyphen_and_a_figure_is_held_by_the_sentence_that_names_it():
    preprint = note_source(
        "[digest:preprint.pdf] Digest of preprint.pdf",
        "\n".join(
            [
                "[fact] The melting temperature of KX-7 was 68.4 °C in 20 mM phosphate buffer. (preprint.pdf::S1)",
                "[fact] The wild type's melting temperature was 62.3 °C in 20 mM phosphate buffer. (preprint.pdf::S2)",
            ]
        ),
    )
    sources = [*SESSION, preprint]
    output = chat("What is the melting temperature of KX-7 in 20 mM phosphate?", sources)
    assert output["citations"] == ["preprint.pdf::S1"], output
    # The name still decides: the sentence about KX-7 does not answer for another variant.
    assert chat("What is the melting temperature of KX-9 in 20 mM phosphate?", sources)["answer"] == ""


def test_a_year_the_passage_is_dated_by_is_held_by_its_sentences():
    """ "What percentage of repairs were completed within target in July to September 2026?" was asked back: the
    minutes' sentence says "932 repairs (88.4%) were completed within target" and the year only in the file's
    name and the sentence before."""
    minutes = note_source(
        "[passage:board_minutes_2026-09.txt::S4] board_minutes_2026-09.txt › 4. Repairs performance",
        "Dawn Okafor presented the figures for Quarter 2 of 2026/27.\n\n"
        "932 repairs (88.4%) were completed within target (board_minutes_2026-09.txt::S4).",
    )
    output = chat("How many repairs were completed within target in 2026?", [*SESSION, minutes])
    assert output["citations"] == ["board_minutes_2026-09.txt::S4"] and "88.4%" in output["answer"], output
    # A year the passage is not dated by is still one the sentence must hold.
    undated = note_source(
        "[passage:board_minutes.txt::S4] board_minutes.txt › 4. Repairs performance",
        "932 repairs (88.4%) were completed within target (board_minutes.txt::S4).",
    )
    assert chat("How many repairs were completed within target in 2026?", [*SESSION, undated])["answer"] == ""


def test_ok_and_an_indefinite_pronoun_name_nothing_the_answer_must_say():
    """ "A tenant on the third floor at Tannery Court wants to get a dog. Is that OK?" was asked back: "OK" was read
    as a name (an initialism) that the handbook's sentence had to hold."""
    handbook = note_source(
        "[passage:handbook.docx::S9] handbook.docx › Tenant handbook > 4. Pets",
        "Dogs are not allowed in flats above the ground floor at Tannery Court (handbook.docx::S9).",
    )
    output = chat("A tenant on the third floor at Tannery Court wants to get a dog. Is that OK?", [*SESSION, handbook])
    assert output["citations"] == ["handbook.docx::S9"], output


def test_a_questions_agent_noun_is_said_by_its_verb():
    grant = note_source(
        "[digest:preprint.pdf] Digest of preprint.pdf",
        "[fact] The study was funded by the Northern Bioenergy Council. (preprint.pdf::S7)",
    )
    output = chat("Which funder supported the study?", [*SESSION, grant])
    assert output["citations"] == ["preprint.pdf::S7"], output


def test_an_action_noun_in_sion_answers_its_verb():
    """ "What did the team decide about Ferrocast?" was asked back: the minutes say "Decision: …", whose stem
    ("decis") the stemmer does not share with "decide" ("decid")."""
    minutes = note_source(
        "[passage:weekly.md::S4] weekly.md › QA weekly meeting > Decisions",
        "Decision: Ferrocast is moved back to full incoming inspection (weekly.md::S4).",
    )
    assert chat("What did we decide about Ferrocast?", [*SESSION, minutes])["citations"] == ["weekly.md::S4"]
    assert {"decid", "conclud", "divid", "erod"} <= noun_verbs(["decis", "conclus", "divis", "eros"])
    assert not noun_verbs(["bus", "gas", "analysi"]), "short stems, and stems of no noun in -sion"


def test_a_light_verb_names_nothing_the_answer_must_say():
    """ "went" of "went down" is no term a sentence must hold: the rarest of the question's words, never said by
    the files, it outweighed the ones the answer shares (one of them in its passage's heading) and the chat
    asked instead."""
    outage = note_source(
        "[passage:outage.txt::S2] outage.txt › Checkout outage of 17 September",
        "At 14:09 the on-call engineer, Marcus Lee, was paged by the error-rate alert (outage.txt::S2).",
    )
    output = chat("Who was on call when checkout went down?", [*SESSION, outage])
    assert output["citations"] == ["outage.txt::S2"], output
    assert message_terms("How much of the budget goes on sequencing?") == ["budget", "sequenc"]
    # Nor "get" of "What score did Ferrocast get?", "need" of "Which suppliers don't need …?", "make" of "make a call".
    audit = note_source(
        "[passage:audit.docx::S2] audit.docx › Supplier audit report: Ferrocast GmbH > Overall result",
        "Ferrocast scored 68 out of 100 and is rated conditionally approved (audit.docx::S2).",
    )
    output = chat("What score did Ferrocast get in the audit?", [*SESSION, outage, audit])
    assert output["citations"] == ["audit.docx::S2"], output
    assert message_terms("Which suppliers don't need their parts sampled?") == ["supplier", "part", "sampl"]
    assert message_terms("How fast must the board make a call?") == ["fast", "board", "call"]


def test_what_is_to_come_is_dated_by_its_own_sentence_not_by_the_minutes_that_mention_it():
    """A minutes' date dates what happened at the meeting ("When was …?"), not an event it looks ahead to: "When
    is Ferrocast's follow-up audit?" is not answered by the decision that mentions the audit, dated by its
    meeting, but by the sentence that gives the audit's date; without one, the chat asks."""
    minutes = note_source(
        "[passage:weekly.md::S4] weekly.md › QA weekly meeting, 6 October 2026 > Decisions",
        "Decision: Ferrocast is moved back to full incoming inspection until its follow-up audit (weekly.md::S4).",
    )
    audit = note_source(
        "[passage:audit.docx::S2] audit.docx › Supplier audit report > Overall result",
        "A follow-up audit of Ferrocast is due by 31 March 2027 (audit.docx::S2).",
    )
    question = "When is Ferrocast's follow-up audit?"
    assert chat(question, [*SESSION, minutes, audit])["citations"] == ["audit.docx::S2"]
    assert chat(question, [*SESSION, minutes])["answer"] == ""
    # What was decided is dated by its meeting.
    output = chat("When was Ferrocast moved back to full incoming inspection?", [*SESSION, minutes])
    assert output["citations"] == ["weekly.md::S4"] and "6 October 2026" in output["answer"], output
    assert message_terms("Which services are written in Go?") == ["servic", "written", "go"]


def test_a_rare_term_the_session_never_uses_outweighs_common_ones_it_shares():
    # "valve programme" is everywhere, "tunnel ventilation" nowhere: the common terms do not carry it.
    assert chat("What did the valve programme cost?")["answer"] != ""
    assert chat("What did the tunnel ventilation programme cost?")["answer"] == ""
    assert chat("Who is the mayor of Lakeside?")["answer"] == ""


def test_a_request_anchors_a_cut_artifact_that_shares_a_term_but_never_one_carried_whole():
    text = "Ventilation checks ran every night. " + " ".join(f"Shift {n} covered the pumps." for n in range(400))
    sources = [note_source(f"[report:{RUN}] Report: Night work", text)]
    cut = prompt_for("Who audits the tunnel ventilation?", sources, limit=400)
    assert len(evidence_chunks(cut)[0].text) < len(text)  # the budget cut the report
    (need,) = complete(cut)["needs"]  # "ventilation" only: 1 of 3 terms
    assert need["anchor"] == f"report:{RUN}"  # the system attaches the whole report itself
    assert "mention “ventilation”, but none answers this, and none mentions “audits”, “tunnel”" in need["description"]
    # Carried whole, the report was read and says nothing more: anchoring it would only re-attach it,
    # and the request would never reach a person.
    (need,) = chat("Who audits the tunnel ventilation?", sources)["needs"]
    assert "anchor" not in need


def test_a_request_anchors_an_omitted_artifact_by_its_title_and_ignores_its_text():
    filler = " ".join(f"On shift {n}, Ana Ruiz staffs the night roster." for n in range(300))
    staffing = note_source(f"[findings:{RUN}/1.2] Findings of node 1.2: Who staffs the night roster?", filler)
    sources = [DIGEST, staffing]
    prompt = prompt_for("Who staffs the night roster?", sources, limit=600)
    by_title = {chunk.anchor: chunk.text for chunk in evidence_chunks(prompt)}
    assert by_title[staffing.id] == ""  # the budget dropped the findings' text
    output = complete(prompt)
    assert output["answer"] == ""  # "night" alone (the digest's night-time losses) is 1 of 3 terms
    assert output["needs"][0]["anchor"] == f"findings:{RUN}/1.2"
    assert "Ruiz" not in json.dumps(output)
    # With its text, the same findings answer the question.
    assert "Ana Ruiz staffs" in chat("Who staffs the night roster?", sources)["answer"]


# --- supplied context ---------------------------------------------------------------


def test_a_supplied_note_is_used_and_cited_by_its_supply_key_even_at_low_coverage():
    note = "Two technicians check the ventilation every night."
    sources = [*SESSION, note_source(f"[supply:{SUPPLY}] Note from alice", note)]
    supplied = [{"slot": "s1", "kind": "note", "text": note}]
    output = chat("Who audits the tunnel ventilation staffing?", sources, supplied=supplied)
    assert output["needs"] == []
    assert note in output["answer"]
    assert f"supply:{SUPPLY}" in output["citations"]
    # Coverage stays low (only "ventilation" of 4 terms): the answer says so first.
    assert output["answer"].startswith("This session's files and reports say nothing about")
    # Without the supply, the same question is a request.
    assert chat("Who audits the tunnel ventilation staffing?")["answer"] == ""


def test_a_supplied_note_sharing_no_term_is_still_used():
    note = "Alice: the contractor handles that under the 2021 agreement."
    sources = [*SESSION, note_source(f"[supply:{SUPPLY}] Note from alice", note)]
    output = chat("Who audits the tunnels?", sources, supplied=[{"slot": "s1", "kind": "note", "text": note}])
    assert note in output["answer"]
    assert output["citations"] == [f"supply:{SUPPLY}"]


def test_a_supplied_note_is_the_answer_and_only_sentences_that_answer_join_it():
    """The salary a person gave was quoted with "Staff: Grace Mwangi (Executive Director)" and an insurance
    action glued after it: they shared "executive" or "director" with the question and answered nothing."""
    note = "Grace Mwangi, our executive director, earns $92,000 a year."
    minutes = passage(
        "minutes.docx::S1",
        "Board minutes",
        "Staff: Grace Mwangi (Executive Director).",
        "Luis Ortega will renew the directors and officers insurance by 30 November.",
    )
    sources = [*SESSION, minutes, note_source(f"[supply:{SUPPLY}] Note from ruth", note)]
    supplied = [{"slot": "s1", "kind": "note", "text": note}]
    output = chat("What is the executive director's salary?", sources, supplied=supplied)
    assert output["answer"] == note, output
    assert output["citations"] == [f"supply:{SUPPLY}"]


def test_context_the_system_supplied_is_used_only_where_it_bears_on_the_question():
    auto = [{"slot": "s1", "kind": "auto", "text": "The weather was mild that year."}]
    output = chat("Who audits the tunnels?", [DIGEST], supplied=auto)
    assert output["answer"] == "This session's files, digests and reports say nothing about “audits”, “tunnels”."


def test_title_only_chunks_are_not_evidence():
    # The conversation service renders an artifact without text as its title: that is not an answer.
    placeholder = note_source(f"[report:{RUN}] Report: Who audits the tunnels?", "Report: Who audits the tunnels?")
    output = chat("Who audits the tunnels?", [DIGEST, placeholder])
    assert output["answer"] == ""
    assert "anchor" not in output["needs"][0]  # the session holds no more of it to attach


def test_all_slots_skipped_on_a_forced_turn_answers_saying_what_is_not_covered():
    skipped = [{"slot": "s1", "kind": "skip", "text": ""}]
    output = chat("Who audits the valve contractors?", supplied=skipped, may_request=False)
    assert output["answer"].startswith(
        "This session's files and reports say nothing about “audits”, “contractors”; the closest they hold:"
    )
    assert "Water losses fell from 24 % to 19 % after the valve programme (report.pdf::S4)." in output["answer"]
    assert output["citations"][0] == "report.pdf::S4"
    nothing = chat("Who audits the tunnels?", supplied=skipped, may_request=False)
    assert nothing == {
        "answer": "This session's files, digests and reports say nothing about “audits”, “tunnels”.",
        "citations": [],
        "needs": [],
    }


def test_a_turn_whose_request_was_skipped_is_not_asked_again():
    skipped = [{"slot": "s1", "kind": "skip", "text": ""}]
    assert chat("Who audits the tunnels?")["answer"] == ""
    assert chat("Who audits the tunnels?", supplied=skipped)["answer"].startswith("This session's files")


def test_a_forced_turn_answers_without_asking():
    output = chat("Who audits the tunnels?", may_request=False)
    assert output["needs"] == [] and "“tunnels”" in output["answer"]
    # Its closest sentences are no answer even when they hold most of its words: it says which one none holds.
    # ("How many PhD students graduated last year?" came back as "This page is for new PhD students …".)
    output = chat("How much were the valve programme losses in Lyon?", may_request=False)
    assert output["answer"].startswith("This session's files and reports say nothing about “Lyon”;"), output


# --- small talk and follow-ups --------------------------------------------------------


def test_a_greeting_is_answered_with_what_the_assistant_does():
    for message in ("hi", "Thanks a lot!", "ok, great"):
        output = chat(message)
        assert output == {"answer": GREETING, "citations": [], "needs": []}
    assert "files, digests and reports" in GREETING and "ask" in GREETING


def test_a_bare_follow_up_borrows_the_previous_user_message():
    history = [
        {"role": "user", "content": "What were the water losses?"},
        {"role": "assistant", "content": "Water losses fell from 24 % to 19 %."},
    ]
    output = chat("And at night?", history=history)
    assert "Night-time losses may be underestimated (report.pdf::S9)." in output["answer"]
    assert "Water losses fell" in output["answer"]  # "water", "losses" come from the previous question
    assert output["citations"] == ["report.pdf::S4", "report.pdf::S9"]
    assert "Water losses fell" not in chat("And at night?")["answer"]
    # "2023" is nowhere in the session: asked for, alone or with the previous question (a figure the
    # question names must be in the sentence that answers it).
    assert chat("And in 2023?")["answer"] == ""
    assert chat("And in 2023?", history=history)["answer"] == ""


def test_a_whole_question_of_one_term_borrows_nothing_from_the_one_before():
    """ "Who is doing the roof?" after "How long does the facade take?" asked about "facade take": one term
    made it a follow-up. A question with a verb of its own and no pronoun pointing back stands alone."""
    history = [{"role": "user", "content": "How long did the valve programme take?"}]
    output = chat("When was the pilot?", history=history)
    assert output["answer"].startswith("The pilot ran from March 2021 to June 2022 (a.txt::S1, b.pdf::S3).")
    assert "valve" not in output["answer"]
    assert is_bare_follow_up("And in 2023?", 0) and is_bare_follow_up("What about the roof?", 1)
    assert is_bare_follow_up("How much did it cost?", 1)  # "it" points back
    assert not is_bare_follow_up("Who is doing the roof?", 1)
    assert not is_bare_follow_up("Who is on call this week?", 1)  # "this week" is now, not the question before
    assert is_bare_follow_up("Who paid for this?", 1)
    assert not is_bare_follow_up("And the roof, who is doing it?", 2)  # two terms: a question whole


# --- contract --------------------------------------------------------------------------


def test_sourcerefs_are_read_with_spaces_in_names_and_without_hints():
    assert source_refs("Losses fell. (Q3 report.pdf::S4::p2, memo.docx::S1)") == ["Q3 report.pdf::S4", "memo.docx::S1"]
    assert source_refs("As plan.md::S7 says.") == ["plan.md::S7"]
    assert source_refs("No refs here (see below).") == []


def test_the_same_prompt_gives_the_same_json_in_any_process():
    prompts = [prompt_for("When did the pilot run?"), prompt_for("Who audits the tunnel ventilation programme?")]
    here = [OfflineProvider().complete(LLMRequest(task="chat_turn", system="", prompt=p)).text for p in prompts]
    assert here == [OfflineProvider().complete(LLMRequest(task="chat_turn", system="", prompt=p)).text for p in prompts]
    script = (
        "import json, os, sys\n"
        "import django\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tests.settings')\n"
        "django.setup()\n"
        "from conversation_app.offline.turn import chat_turn\n"
        "print(json.dumps([json.dumps(chat_turn(p), ensure_ascii=False) for p in json.load(sys.stdin)]))"
    )
    for seed in ("1", "2"):  # another string hash order must not change a word
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(prompts),
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(done.stdout) == here


def test_the_system_prompt_examples_match_the_schema():
    text = (ROOT / "prompts" / "chat_turn.system.txt").read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    examples = [decoder.raw_decode(text, i)[0] for i in range(len(text)) if text.startswith('{"answer"', i)]
    assert [bool(example["answer"]) for example in examples] == [True, False]  # one of each outcome
    for example in examples:
        assert [error.message for error in validator().iter_errors(example)] == []
        assert bool(example["answer"]) != bool(example["needs"])


def test_a_sentence_held_by_several_artifacts_is_told_once():
    line = "The programme cost 1.2 million euros. (valves.md::S2)"
    inputs = {"message": "How much did the programme cost?", "history": [], "supplied": [], "may_request": True}
    prompt = render_text(
        build_envelope(
            task_text("CHAT_TURN", "Answer.", inputs),
            [
                note_source("[digest:aggregate] Aggregate digest", f"[fact] {line}"),
                note_source("[digest:valves.md] Digest of valves.md", f"[fact] {line}\n[fact] Other things happened."),
                note_source("[report:r1] Report", "The programme cost 1.2 million euros."),
            ],
        )
    )
    answer = json.loads(OfflineProvider().complete(LLMRequest(task="chat_turn", system="", prompt=prompt)).text)
    assert answer["answer"].count("1.2 million euros") == 1, answer


# --- how the sentences of a passage hang together ------------------------------------


def passage(ref: str, heading: str, *lines: str | tuple[str, ...]):
    """A library passage as conversation_app.artifacts.question_passages gives it: a sentence a line, cited, a
    blank line where the file's line ends (a tuple of sentences is one line of the file)."""
    name = ref.split("::")[0]

    def cited(s: str) -> str:
        return f"{s[:-1]} ({ref}){s[-1]}" if s[-1] in ".:?" else f"{s} ({ref})."

    said = ["\n".join(map(cited, line)) if isinstance(line, tuple) else cited(line) for line in lines]
    return note_source(f"[passage:{ref}] {name} › {heading}", "\n\n".join(said))


@pytest.fixture
def local_embeddings(settings, db):
    """The embedded default's meaning (the local model) for one test; the provider is reset after it."""
    settings.GROUNDWORK_EMBEDDINGS = "local"
    embeddings.reset_provider()
    yield
    embeddings.reset_provider()


@pytest.mark.usefixtures("local_embeddings")
def test_a_sentence_is_close_in_meaning_when_read_under_its_heading():
    """A sentence often leaves unsaid what its section is about ("The on-call engineer … paged the database
    team" under "Checkout outage › What went well"): read under its heading, it answers a question on that
    subject (alone, its cosine with the question is far below ANSWER_SIMILARITY)."""
    sentence = "The on-call engineer, Priya Nair, paged the database team within six minutes."
    under_its_subject = passage("postmortem.md::S4", "Checkout outage of 12 March > What went well", sentence)
    answer = chat("Who was on call during the checkout outage?", [*SESSION, under_its_subject])
    assert answer["citations"] == ["postmortem.md::S4"] and "Priya Nair" in answer["answer"], answer


def test_a_sentence_keeps_the_subject_of_its_paragraph():
    storms = passage(
        "log.md::S3",
        "Events",
        "A storm on Pier Lane on 3 March 2024 cut power to 80 homes.",
        "The fault was a flooded substation.",
        "Repairs cost 12,000 euros and took two days.",
    )
    other = passage("log.md::S5", "Budget", "The new van cost 30,000 euros, paid from the fleet budget.")
    answer = chat("How much did the Pier Lane repairs cost?", [*SESSION, storms, other])
    assert answer["citations"] == ["log.md::S3"] and "12,000 euros" in answer["answer"]


@pytest.mark.usefixtures("local_embeddings")
def test_what_to_do_when_it_happens_is_said_with_the_sentence_that_names_it():
    """ "What should I do if the oxygen alarm goes off?" was answered with the alarm's level alone: "If it sounds,
    leave the room …" names the monitor only by "it", so it held none of the question's words."""
    cryogens = passage(
        "handbook.pdf::S7",
        "Cryogens",
        ("The oxygen monitor in 2.16 alarms at 19.5 percent.", "If it sounds, leave the room and call security."),
    )
    answer = chat("What should I do if the oxygen alarm goes off?", [*SESSION, cryogens])
    assert answer["answer"].endswith("If it sounds, leave the room and call security (handbook.pdf::S7)."), answer
    assert answer["answer"].startswith("The oxygen monitor in 2.16 alarms"), "the pronoun's thing is said first"


def test_a_month_asked_by_name_finds_the_row_of_its_iso_date():
    rows = [
        f"month: 2024-{m:02d}; booked: {b}; missed: {x}" for m, b, x in ((1, 1210, 118), (2, 1180, 79), (3, 1250, 70))
    ]
    table = note_source(
        "[passage:appointments.csv::S2] appointments.csv › CSV rows 2–4",
        "\n".join(f"{r} (appointments.csv::S2)" for r in rows),
    )
    answer = chat("How many appointments were missed in March 2024?", [*SESSION, table])
    assert answer["citations"] == ["appointments.csv::S2"] and "missed: 70" in answer["answer"], answer


def test_under_a_question_heading_the_answer_is_what_follows_it_never_the_question():
    faq = passage(
        "faq.html::S3",
        "Frequently asked questions > Can I bring someone with me?",
        "Can I bring someone with me?",
        "Yes.",
        "One companion may join you in the consultation room.",
    )
    late = passage(
        "faq.html::S4",
        "Frequently asked questions > What if I am late?",
        "If you arrive more than 10 minutes late, we may ask you to rebook.",
    )
    answer = chat("Can I bring someone with me to my appointment?", [*SESSION, faq, late])
    assert answer["citations"] == ["faq.html::S3"], answer
    assert "One companion may join you" in answer["answer"] and "?" not in answer["answer"], answer


def test_an_instruction_says_the_command_it_introduces():
    tool = passage(
        "tool.md::S2",
        "Archives",
        "The pack tool supports creating compressed archives of a folder.",
        "To create an archive, choose a folder and run the pack tool with its path:",
        "pack --out backup.zip ./photos",
    )
    answer = chat("How do I create an archive with the pack tool?", [*SESSION, tool])
    assert "To create an archive" in answer["answer"] and "pack --out backup.zip" in answer["answer"]


def test_a_sentence_that_takes_up_a_noun_of_the_one_before_is_said_with_it():
    guide = passage(
        "guide.md::S4",
        "Exports",
        "The export command writes a summary of the stored readings to the screen.",
        "Teams usually save this summary in a shared spreadsheet at the end of each week.",
    )
    answer = chat("How do teams keep the stored readings summary in a shared spreadsheet?", [*SESSION, guide])
    assert answer["answer"].startswith("The export command writes a summary")
    assert answer["citations"] == ["guide.md::S4"]


def test_a_why_question_reads_the_claim_before_the_reason():
    guide = passage(
        "style.md::S7",
        "Habits",
        "It is wise to lock the pump room at night.",
        "This is because nobody can change the settings unseen.",
    )
    answer = chat("Why is it wise to lock the pump room?", [*SESSION, guide])
    assert "nobody can change the settings" in answer["answer"]


def test_a_question_with_did_matches_a_verb_the_file_tells_in_the_past():
    ledger = passage(
        "ledger.md::S2",
        "Spending",
        "Fuel prices rose by 9 percent over the winter.",
        "The depot spent 4,000 euros on new tyres.",
    )
    sources = [*SESSION, ledger]
    # "did … rise" is "rose", "did … spend" is "spent": the stemmer alone joins neither.
    assert chat("By how much did fuel prices rise?", sources)["citations"] == ["ledger.md::S2"]
    assert "9 percent" in chat("By how much did fuel prices rise?", sources)["answer"]
    assert "4,000 euros" in chat("How much did the depot spend on tyres?", sources)["answer"]
    # "do" puts the verb in its base form as "did" does.
    assert chat("By how much do fuel prices rise?", sources)["citations"] == ["ledger.md::S2"]


def test_by_how_much_asks_for_a_change_which_a_share_gives():
    survey = passage("survey.md::S3", "Results", "Complaints dropped by 12 percent after the new rota.")
    answer = chat("By how much did complaints drop after the new rota?", [*SESSION, survey])
    assert answer["citations"] == ["survey.md::S3"]
    # The same terms with no share, amount or count: nothing says by how much.
    vague = passage("survey.md::S4", "Results", "Complaints dropped after the new rota.")
    assert chat("By how much did complaints drop after the new rota?", [*SESSION, vague])["answer"] == ""


def test_of_two_sentences_with_the_question_terms_the_one_that_says_them_as_asked_leads():
    """Both sentences hold "count", "match" (the first in its option's name) and "line"; only the second says
    them as the question does ("counts matching lines"). The first, about another option, led the answer."""
    manual = passage(
        "grep.pdf::S3",
        "General Output Control",
        "With the -v, --invert-match option (see above), count non-matching lines.",
        "-c, --count: Suppress normal output; instead print a count of matching lines for each input file.",
    )
    answer = chat("Which grep option counts matching lines?", [*SESSION, manual])
    assert answer["answer"].startswith("-c, --count: Suppress normal output")


def test_the_number_word_one_is_no_term_a_sentence_answers_with():
    """ "pull one file out" and "one of the --create options" share "one" as they share "the": a sentence
    that holds it, "tar" and "archive" was quoted as the answer to how to get a file out of an archive."""
    manual = passage(
        "tar.pdf::S24",
        "Return value",
        "GNU tar saves many files together into a single tape or disk archive.",
        "A tar archive can be compressed with gzip.",
        "If tar was given one of the --create or --update options, this exit code means that some files "
        "were changed while being archived.",
    )
    answer = chat("How do I pull one file out of a tar archive?", [*SESSION, manual])
    assert answer["answer"] == "" and answer["needs"]


def test_a_faqs_question_in_its_text_heads_the_answer_below_it_not_the_entries_after():
    """A donor FAQ in HTML: its questions are paragraphs of one span, not headings. "Are donations tax
    deductible?" was answered with the entry on monthly gifts, which had the first entry's "tax-deductible" in its
    context, while the answer under that question held only "deductible"."""
    faq = passage(
        "faq.html::S2",
        "Questions donors ask",
        "Is my gift tax-deductible?",
        "Yes.",
        "We are a public charity, so gifts are deductible to the extent the law allows.",
        "Can I give monthly?",
        "Yes, monthly gifts can be set up on the donate page and cancelled at any time.",
    )
    answer = chat("Are donations tax deductible?", [*SESSION, faq])
    assert "so gifts are deductible" in answer["answer"] and "monthly" not in answer["answer"], answer


def test_a_request_in_an_emails_paragraph_heads_nothing():
    """A client's e-mail: "Could you … tell us the effect on the handover date by 27 November? The board has set
    aside up to EUR 40,000 for it." made the board's budget the answer to "When is handover planned?". A question
    with a sentence after it on its line is a request, not an FAQ's entry."""
    email = passage(
        "change.txt::S1",
        "change.txt",
        "Subject: Change request for the reading room",
        (
            "Could you price this change and tell us the effect on the handover date by 27 November?",
            "The board has set aside up to EUR 40,000 for it.",
        ),
    )
    answer = chat("When is handover planned?", [*SESSION, email])
    assert "40,000" not in answer["answer"], answer


def test_a_time_said_relative_to_the_question_is_no_term_a_sentence_must_share():
    """ "next year's budget" is the FY27 budget in the minutes: "next" and "year" made the next board meeting the
    answer to "Did the board approve next year's budget?"."""
    minutes = passage(
        "minutes.docx::S4",
        "Board minutes > Motions",
        "Motion to approve the FY27 operating budget of $1,040,000.",
        "The next board meeting is on 20 January 2027 in the library.",
    )
    answer = chat("Did the board approve next year's budget?", [*SESSION, minutes])
    assert answer["answer"].startswith("Motion to approve the FY27 operating budget"), answer
    assert chat("When is the next board meeting?", [*SESSION, minutes])["answer"].startswith("The next board")
    # A day is no such time: "next day" is a service the rate card names.
    rates = passage(
        "rates.csv::S2",
        "rates.csv",
        "carrier: Fastline; service: Economy; zone: 1; price_per_pallet_gbp: 38.5",
        "carrier: Fastline; service: Next day; zone: 1; price_per_pallet_gbp: 52.0",
    )
    answer = chat("How much does Fastline charge for next day to zone 1?", [*SESSION, rates])
    assert answer["answer"].startswith("carrier: Fastline; service: Next day"), answer


@pytest.mark.usefixtures("local_embeddings")
def test_a_sentence_close_in_meaning_answers_in_other_words_unless_the_files_use_the_missing_word():
    """A grant summary says the council "announces decisions", never that we "hear back": "When will we hear
    back from the council?" was asked back, the sentence holding too few of its terms. Meaning answers for it.
    A near miss stays asked back: the night crew's sentence is close to "… the day crew?", but "day" is a word
    the files use, for another thing."""
    summary = passage(
        "grant_summary.docx::S3",
        "Grant renewal > Timeline",
        "The full proposal is due on 15 January 2027.",
        "The council announces decisions in June 2027.",
    )
    answer = chat("When will we hear back from the council?", [*SESSION, summary])
    assert answer["citations"] == ["grant_summary.docx::S3"], answer
    assert answer["answer"].startswith("The council announces decisions in June 2027"), answer
    memo = passage(
        "ops_memo.md::S2",
        "Operations memo > Staffing",
        "The night crew has five operators and one electrician.",
        "Day shifts start at seven in the morning.",
    )
    assert chat("How many operators work on the day crew?", [*SESSION, memo])["answer"] == ""


@pytest.mark.usefixtures("local_embeddings")
def test_each_clause_of_a_sentence_joined_by_semicolons_is_weighed_in_meaning():
    """The treasurer's note said two things in one sentence; the clause that answers was too diluted by the
    other (cosine under ANSWER_SIMILARITY) for the question it answers word for word."""
    notes = passage(
        "treasurer_notes.txt::S1",
        "Treasurer's notes",
        "I recommend we ask Harbor Foundation for the first instalment as soon as the agreement is countersigned; "
        "until then November payroll depends on the line of credit with Eastport Savings Bank, which charges 8.25% "
        "interest.",
    )
    answer = chat("What interest rate does the line of credit charge?", [*SESSION, notes])
    assert answer["citations"] == ["treasurer_notes.txt::S1"] and "8.25% interest" in answer["answer"], answer


@pytest.mark.usefixtures("local_embeddings")
def test_each_clause_of_a_sentence_joined_by_a_comma_and_and_is_weighed_in_meaning():
    """A support retro said two things in one sentence: "What was our CSAT in November?" was asked back, the
    sentence's second clause keeping its cosine under ANSWER_SIMILARITY."""
    retro = passage(
        "retro_2026-11-20.md::S2",
        "Support retro, 20 November 2026 > What went well",
        "CSAT for November so far is 3.6 out of 5, and every urgent phone ticket got a human within 45 minutes.",
        "The new chat macros cut the average first response on chat from 2 hours to 70 minutes.",
    )
    answer = chat("What was our CSAT in November?", [*SESSION, retro])
    assert answer["citations"] == ["retro_2026-11-20.md::S2"] and "3.6 out of 5" in answer["answer"], answer


@pytest.mark.usefixtures("local_embeddings")
def test_which_option_asks_for_a_command_line_option_only_where_the_files_spell_them():
    """ "Which option …" asked for an option spelled "-c" or "--count", which a team's design document holds none
    of: its recommendation was never quoted. Where a manual's options are in the passages, it still asks for one."""
    proposal = passage(
        "search-proposal.docx::S4",
        "Search proposal > Recommendation",
        "For invoice search we recommend the first option, a PostgreSQL trigram index.",
    )
    answer = chat("Which option is recommended for invoice search?", [*SESSION, proposal])
    assert answer["citations"] == ["search-proposal.docx::S4"] and "trigram index" in answer["answer"], answer
    manual = passage(
        "grep.1.md::S5",
        "grep(1) > OPTIONS",
        "The search option we recommend for counting is described below.",
        "-c, --count: Suppress normal output; instead print a count of matching lines.",
    )
    answer = chat("Which grep option counts matching lines?", [*SESSION, manual])
    assert answer["answer"].startswith("-c, --count"), answer


@pytest.mark.usefixtures("local_embeddings")
def test_a_sentence_that_an_answer_already_quotes_within_a_record_is_not_said_again():
    """An API description's record (a digest fact) and its description's own sentence (a passage) both answered
    "When do PDF exports expire?": the answer said the sentence twice, once inside the record."""
    record = (
        "paths./invoices/{id}/export.post: summary Export an invoice as PDF, description Starts an asynchronous "
        "export. Poll the returned job URL; exports expire after 7 days."
    )
    digest = note_source("[digest:aggregate] Aggregate digest", f"[fact] {record} (api.json::S4)")
    said = passage("api.json::S4", "paths", (record,))  # a record's sentences, as the file's JSON says them
    answer = chat("When do PDF exports expire?", [digest, said])
    assert answer["answer"].count("expire after 7 days") == 1, answer


@pytest.mark.usefixtures("local_embeddings")
def test_a_when_question_is_answered_by_the_date_of_the_section_a_statement_stands_under():
    """A changelog dates its changes by the release heading above them: "When was the rate limit raised?" was
    asked back, the sentence holding no date. The answer gives the heading's date before the sentence."""
    release = passage(
        "CHANGELOG.md::S8", "Changelog > [2.3.0] - 2026-09-30 > Changed", "The rate limit was raised to 600 a minute."
    )
    other = passage("CHANGELOG.md::S3", "Changelog > Unreleased > Added", "Cursor pagination on GET /invoices.")
    answer = chat("When was the rate limit raised?", [*SESSION, release, other])
    assert answer["answer"].startswith("[2.3.0] - 2026-09-30: The rate limit was raised to 600"), answer
    assert answer["citations"] == ["CHANGELOG.md::S8"]
    assert chat("When was cursor pagination added?", [*SESSION, release, other])["answer"] == "", "no date above it"


@pytest.mark.usefixtures("local_embeddings")
def test_a_sentence_holds_the_figures_of_its_heading_and_an_attendee_is_one_who_attended():
    """Minutes of two meetings, a heading each: "Who attended the meeting on 26 October?" was asked back, its
    "26" being in the heading, not in "Attendees: …", and "attended" no term of "attendees"."""
    first = passage("minutes.docx::S2", "Meetings > Meeting of 12 October 2026", "Attendees: Priya Nair, Tom Becker.")
    second = passage(
        "minutes.docx::S3", "Meetings > Meeting of 26 October 2026", "Attendees: Priya Nair, Sam Kowalski."
    )
    answer = chat("Who attended the meeting on 26 October?", [*SESSION, first, second])
    assert answer["citations"] == ["minutes.docx::S3"] and "Sam Kowalski" in answer["answer"], answer


@pytest.mark.usefixtures("local_embeddings")
def test_an_initialism_and_the_words_it_stands_for_are_one_term():
    """A board deck says "New annual recurring revenue: $151,500 in Q3" and "Target: $220,000 new ARR":
    "How much new ARR did we add in Q3?" was answered with the Q4 target, the only sentence saying "ARR"."""
    deck = passage(
        "board.pdf::S2", "page 2", "New annual recurring revenue: $151,500 in Q3.", "Net revenue retention 112%."
    )
    plan = passage("board.pdf::S4", "page 4 › Q4 plan", "Target: $220,000 new ARR.")
    answer = chat("How much new ARR did we add in Q3?", [*SESSION, deck, plan])
    assert answer["citations"] == ["board.pdf::S2"] and "$151,500" in answer["answer"], answer
    assert initialism_terms("What is the ROI?", "The return on investment was 12%.") == {"roi"}
    assert initialism_terms("What is our annual recurring revenue?", "Target: $220,000 new ARR") == {
        "annual",
        "recur",
        "revenu",
    }
    assert not initialism_terms("How much new ARR?", "An annual report: read it."), "no run across punctuation"


def test_an_initialisms_plural_is_its_singular():
    """ "Which NCRs are still open?" was asked back: the stemmer keeps the "s" of "ncrs" (no vowel before it), so
    no row of the NCR log held the question's term."""
    log = note_source(
        "[passage:ncr_log.csv::S2] ncr_log.csv",
        "ncr_id: NCR-2026-044; supplier: Boltwerk AG; defect: wrong thread pitch; status: open (ncr_log.csv::S2).",
    )
    assert question_terms("Which NCRs are still open?") == ["ncr", "open"]
    assert question_terms("Which KPIs did the AEs miss?") == ["kpi", "ae", "miss"]
    assert chat("Which NCRs are still open?", [*SESSION, log])["citations"] == ["ncr_log.csv::S2"]


@pytest.mark.usefixtures("local_embeddings")
def test_a_question_in_a_call_is_answered_by_the_next_turn_only():
    """Call notes: "Sam: Would anything have changed your mind?" then Lucy's answer, then the action items. The
    action item "Sam to check in with Kestrel Foods again in January" was quoted first for "What would have
    changed Kestrel's mind?": every sentence after the question counted as its answer."""
    call = passage(
        "call-kestrel.txt::S1",
        "Call: Kestrel Foods, lost deal review",
        "Sam: Would anything have changed your mind?",
        ("Lucy: A fixed go-live date in the contract.", "Ledgerly offered one, with a penalty if they missed it."),
        "We'll take that back to the implementation team.",
        "Sam to check in with Kestrel Foods again in January, after their audit.",
    )
    answer = chat("What would have changed Kestrel's mind?", [*SESSION, call])
    assert answer["answer"].startswith("Lucy: A fixed go-live date in the contract"), answer
    assert "January" not in answer["answer"], answer


def test_a_passage_line_is_one_sentence_as_its_file_gave_it():
    """A playbook's '**"It's too expensive."** Show the close-time calculator …' is one sentence in the passage
    (its bold lead says what follows is about); cut again without the bold, the reply lost the objection."""
    playbook = passage(
        "playbook.md::S5",
        "Sales playbook > Handling objections",
        '"It\'s too expensive." Show the close-time calculator: a team that closes faster saves more.',
    )
    answer = chat("What do we show when they say it's too expensive?", [*SESSION, playbook])
    assert answer["answer"].startswith('"It\'s too expensive." Show the close-time calculator'), answer


def test_a_sources_name_holds_no_figure_of_its_sentence():
    """ "Target: $220,000 new ARR (board-update-q3.pdf::S4)" held the "3" of "in Q3" by its file's name."""
    plan = passage("board-update-q3.pdf::S4", "page 4", "Target: $220,000 in new bookings.")
    assert chat("What were the new bookings in Q3?", [*SESSION, plan])["answer"] == ""
    assert question_terms("What do I say when they say we're too expensive?") == ["say", "expens"]


@pytest.mark.usefixtures("local_embeddings")
def test_a_figure_the_sentence_writes_counts_among_the_terms_it_holds():
    """ "Do we take £50 notes?" was asked back: "We do not accept £50 notes" holds none of its words but its
    figure. A year only dates what is asked ("By how much did the water price rise in 2023?" stays unanswered by
    a sentence on another thing in 2023)."""
    handbook = passage(
        "handbook.pdf::S4",
        "page 1 › 3. Passengers",
        "Assistance dogs travel free and may not be refused.",
        "We do not accept £50 notes, and drivers are not required to give more than £10 in change.",
        "You can take a break of 45 minutes after 4.5 hours.",
    )
    answer = chat("Do we take £50 notes?", [*SESSION, handbook])
    assert answer["answer"].startswith("We do not accept £50 notes"), answer
    memo = passage(
        "memo.md::S2",
        "Operations memo",
        "A main burst on Harbour Road on 14 February 2023 left 230 households without water.",
    )
    assert chat("By how much did the water price rise in 2023?", [*SESSION, memo])["answer"] == ""
    # The digits of a name are no figure of it: "X3" does not make a single's fare the return asked for.
    fares = passage(
        "fares.html::S2", "Fares and tickets", "Ticket: Airport X3 single; Price: £4.50; Valid: One journey"
    )
    assert chat("How much is a return on the X3?", [*SESSION, fares])["answer"] == ""


@pytest.mark.usefixtures("local_embeddings")
def test_a_yes_no_questions_case_is_held_by_the_rules_figure_of_its_unit():
    """ "Is a bus that is 4 minutes late counted as on time?" was asked back: the rule says "up to 5 minutes"."""
    handbook = passage(
        "handbook.pdf::S4",
        "page 1 › 3. Passengers",
        "Drivers must not leave a timing point early.",
        "A bus up to 5 minutes late at a timing point counts as on time for our punctuality figures.",
        "We do not accept £50 notes.",
    )
    answer = chat("Is a bus that is 4 minutes late counted as on time?", [*SESSION, handbook])
    assert answer["answer"].startswith("A bus up to 5 minutes late"), answer
    # A figure asked of a thing, not of a case, is the thing's: no sentence holds bus 4.
    assert chat("When was bus 4 late?", [*SESSION, handbook])["answer"] == ""
    assert case_figures("Can I take a 20-minute break?") == {"20": "minut"}
    assert case_figures("Do we take £50 notes?") == {} and case_figures("How late was the 4 minutes bus?") == {}


@pytest.mark.usefixtures("local_embeddings")
def test_a_units_symbol_in_a_field_says_its_name():
    """A fleet list's "odometer_km: 702115" answers "How many kilometres has bus 521 done?" (it was asked back:
    "kilometres" no term of the row), and no question about miles."""
    fleet = passage(
        "fleet.csv::S2",
        "",
        "fleet_no: 520; model: Gemini; odometer_km: 690400; status: in service",
        "fleet_no: 521; model: Gemini; odometer_km: 702115; status: off road",
    )
    answer = chat("How many kilometres has bus 521 done?", [*SESSION, fleet])
    assert "702115" in answer["answer"] and "690400" not in answer["answer"], answer
    assert chat("How many miles has bus 521 done?", [*SESSION, fleet])["answer"] == ""
    assert unit_names(["km", "kilometr", "min"]) == {"kilometr"}


def test_a_figure_within_a_range_the_sentence_states_is_held():
    """ "Who approves a 20% discount?" was asked back: "Discounts from 10% to 25% need approval from the sales
    director" does not write "20"."""
    playbook = passage(
        "playbook.md::S6",
        "Sales playbook > Discounts",
        ("Discounts from 10% to 25% need approval from the sales director, Dana Whitfield.",),
        ("Anything above 25% goes to the CFO.",),
    )
    answer = chat("Who approves a 20% discount?", [*SESSION, playbook])
    assert answer["answer"].startswith("Discounts from 10% to 25% need approval"), answer
    assert chat("Who approves a 40% discount?", [*SESSION, playbook])["answer"] == ""
    assert not holds_figures({"10"}, "The deal closed on 2026-07-14."), "a date's parts are no range"
    # A day written with its leading zero is the day asked for: "3 December" of "2026-12-03".
    assert holds_figures({"3"}, "date: 2026-12-03; room: Surgery 2") and not holds_figures({"3"}, "date: 2026-12-13")


def test_a_figure_asked_in_words_is_held_in_digits_and_the_other_way():
    """ "Which gauges are calibrated every six months?" was asked back: "six" was a term no record said, the rarest
    of the question, and the record says "interval_months 6". A figure is a figure however it is written."""
    schedule = note_source(
        "[passage:calibration.json::S3] calibration.json",
        "\n".join(
            [
                "instruments, item 2: id HT-03, type hardness tester, last_calibrated 2025-11-20, interval_months 12 "
                "(calibration.json::S3)",
                "instruments, item 3: id TG-112, type thread gauge set, last_calibrated 2026-06-01, interval_months 6 "
                "(calibration.json::S3)",
            ]
        ),
    )
    output = chat("Which gauges are calibrated every six months?", [*SESSION, schedule])
    assert "TG-112" in output["answer"] and "HT-03" not in output["answer"], output
    assert chat("Which gauges are calibrated every seven months?", [*SESSION, schedule])["answer"] == ""
    assert holds_figures({"6"}, "The gauges are checked every six months.")


def test_a_question_about_a_section_as_a_whole_is_answered_by_its_sentences():
    """ "What are the action items …?" is answered by the section headed "Actions": its items hold none of the
    question's words, and one of them alone is not the list asked for."""
    actions = passage(
        "ops-meeting.txt::S5",
        "Operations meeting, 12 November 2026 > Actions",
        "Grace to agree the temporary car park with the landlord by 18 November.",
        "Tomasz to send Fastline the improvement plan by 20 November.",
        "Marta to brief all supervisors on the alarm code by 16 November.",
    )
    readiness = passage(
        "ops-meeting.txt::S2",
        "Operations meeting, 12 November 2026 > 1. Peak readiness",
        "Grace: The car park is still not agreed.",
        "Decision: Overflow from Leeds goes to Wakefield during peak.",
    )
    answer = chat("What are the action items from the ops meeting?", [*SESSION, readiness, actions])
    assert answer["citations"] == ["ops-meeting.txt::S5"], answer
    assert answer["answer"].index("Grace to agree") < answer["answer"].index("Tomasz") < answer["answer"].index("Marta")
    # Not when the thing asked about is one the files never name: its heading is about something else.
    assert chat("What is the budget for the ops meeting actions?", [*SESSION, readiness, actions])["needs"]
    # Of two sections, the one its heading is about, though a sentence above it says the question's words.
    dates = passage(
        "enrolment.md::S1",
        "Pension and health plan enrolment 2027",
        "Open enrolment starts on 1 December 2026 and ends on 15 January 2027.",
        "Changes take effect from 1 February 2027.",
    )
    steps = passage(
        "enrolment.md::S2",
        "Pension and health plan enrolment 2027 > How to enrol",
        "Log in to the staff portal with your smartcard.",
        "Open the benefits page and choose a health plan.",
        "Submit the form and download the confirmation.",
    )
    answer = chat("How do I enrol?", [*SESSION, dates, steps])
    assert answer["citations"] == ["enrolment.md::S2"] and answer["answer"].startswith("Log in"), answer
    # A question that asks for one kind of answer (a date) is answered by the sentence that holds it.
    answer = chat("When does Tomasz send the improvement plan from the ops meeting actions?", [*SESSION, actions])
    assert "Grace" not in answer["answer"] and "20 November" in answer["answer"], answer


def test_an_amount_asked_of_what_its_heading_names_is_answered_by_the_sentence_that_holds_it():
    """ "How much is the grant worth?" was asked back: "The total award is £2.4 million" says no "grant", which
    only the document's title says. An amount of money asked for is a value of its own: the heading's terms count
    in full for the sentence that holds one."""
    budget = passage(
        "grant_summary.docx::S3",
        "Grant summary: Regeneration Atlas > Budget",
        "The total award is £2.4 million.",
        "Staff costs take the largest share.",
        "Item: Sequencing; Amount (£): 520,000.",
    )
    answer = chat("How much is the grant worth?", [*SESSION, budget])
    assert answer["citations"] == ["grant_summary.docx::S3"] and "£2.4 million" in answer["answer"], answer
    # The heading's other amount says another thing it is about: not glued on.
    assert "520,000" not in answer["answer"], answer
    # Not a date: a sentence under such a heading holds one whatever it says.
    timeline = passage(
        "grant_summary.docx::S4",
        "Grant summary: Regeneration Atlas > Timeline",
        "The first postdoc starts in May 2026.",
    )
    assert chat("When will the grant be renewed?", [*SESSION, timeline])["needs"]


def test_still_says_when_not_what():
    """ "What training do I still have to do?" is about training: the checklist headed "Training checklist"."""
    checklist = passage(
        "onboarding.md::S5",
        "Joining the lab > Training checklist",
        "Done: Read the laboratory safety manual.",
        "To do: Online fire safety course.",
        "To do: COSHH course.",
    )
    answer = chat("What training do I still have to do?", [*SESSION, checklist])
    assert answer["citations"] == ["onboarding.md::S5"] and "COSHH course" in answer["answer"], answer


def test_a_verb_asked_in_its_base_form_is_said_in_any_form():
    """ "Who is allowed to drive a reach truck?" was answered with a near miss's record ("A reach truck
    reversed … a driver was walking behind it"): the rule's "may only be driven by" did not say "drive"."""
    sop = passage(
        "sop.pdf::S4",
        "page 1 > 3. Put-away",
        "Pallets are put away within four hours of receipt.",
        "Reach trucks may only be driven by staff holding a current RTITB licence.",
    )
    log = passage(
        "incidents.json::S3",
        "incidents",
        "incidents, item 1: type Near miss, description A reach truck reversed while a driver was walking behind it.",
    )
    answer = chat("Who is allowed to drive a reach truck?", [*SESSION, sop, log])
    assert answer["answer"].startswith("Reach trucks may only be driven"), answer
    # An irregular verb's past forms read in its base form.
    assert base_term("driven") == "drive" and base_term("wrote") == "write"


def test_a_cause_is_told_by_the_heading_it_stands_under():
    """A postmortem's "Root cause" section says the cause with no "because": "The connection pool change was
    reviewed as a routine tuning change …". For "What caused the checkout outage?" it could not answer: a why
    question's answer had to say a cause word itself."""
    cause = passage(
        "postmortem.pdf::S5",
        "page 1 › Checkout outage of 17 September > Root cause",
        "The checkout pool change was reviewed as a routine tuning change, but nobody multiplied the pool size by "
        "the number of pods.",
    )
    timeline = passage("postmortem.pdf::S3", "page 1 › Timeline", "At 14:44 the checkout change was rolled back.")
    output = chat("What caused the checkout outage?", [*SESSION, timeline, cause])
    assert output["citations"] == ["postmortem.pdf::S5"], output


def test_a_tables_row_answers_alone_and_how_much_is_a_thing_asks_its_price():
    """A price list by weight band: "How much is an open bitch spay …?" was answered with the laparoscopic row
    glued on, which lacks the "open" the first row says: another row. And "How much is … for a cat each month?"
    asks a price, which the list item "Cats: £13.50 a month" gives, not the minutes' "fees are frozen for 2027
    (see item 7)"."""
    fees = passage(
        "price_list.html::S4",
        "Fees and prices > Neutering, dentistry and surgery",
        "Procedure: Dog castration; Up to 10 kg: £285.00; 10–25 kg: £325.00; Over 25 kg: £365.00",
        "Procedure: Bitch spay (open); Up to 10 kg: £365.00; 10–25 kg: £415.00; Over 25 kg: £475.00",
        "Procedure: Bitch spay (laparoscopic); Up to 10 kg: £545.00; 10–25 kg: £595.00; Over 25 kg: £655.00",
    )
    answer = chat("How much is an open bitch spay for a dog over 25 kg?", [*SESSION, fees])
    assert "£475.00" in answer["answer"] and "laparoscopic" not in answer["answer"], answer
    club = passage(
        "client_faq.md::S6",
        "FAQ > How do I pay?",
        "Our Pet Health Club spreads the cost of routine care into monthly Direct Debits:",
        "Dogs: £16.50 a month.",
        "Cats: £13.50 a month.",
    )
    minutes = passage(
        "minutes.txt::S5",
        "Practice meeting > Fees for 2027",
        "Pet Health Club monthly fees are frozen for 2027 to support the membership drive (see item 7).",
    )
    answer = chat("How much is the Pet Health Club for a cat each month?", [*SESSION, minutes, club])
    assert answer["citations"] == ["client_faq.md::S6"] and "£13.50" in answer["answer"], answer
