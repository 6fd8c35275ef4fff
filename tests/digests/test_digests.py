"""Digest layer: envelopes, offline extractive digests, validation, relabelling, generation with repair."""

import json
import re
from pathlib import Path

import pypdfium2
import pytest
from jsonschema import Draft202012Validator

from digests import generate
from digests.envelopes import (
    EnvelopeError,
    aggregate_envelope,
    parse_aggregate_envelope,
    parse_per_file_envelope,
    per_file_envelope,
)
from digests.offline import GENERATOR, MAX_FACTS, MAX_UNCERTAINTIES, per_file_digest
from digests.offline_aggregate import aggregate_digest
from digests.relabel import digest_hash, relabel_digest
from digests.validation import check_aggregate_digest, check_per_file_digest, sources_of
from llm_platform import prompts
from llm_platform.base import LLMResponse, ProviderError
from llm_platform.model_task import TaskFailed
from llm_platform.models import LLMCall
from llm_platform.offline import OfflineProvider
from llm_platform.output import parse_model_json
from llm_platform.sourcerefs import ref_key
from llm_platform.statements import is_statement

KINDS = {"fact", "analysis", "case", "definition", "constraint", "lead", "conflict"}

# A realistic multi-paragraph report, one span per paragraph.
REPORT = [
    "# Water loss report 2022\nThe Lyon water utility publishes this report on network losses for the calendar "
    "year 2022. It covers 14 districts and 2,300 km of mains.",
    "Non-revenue water is defined as water produced but not billed to any customer. Water losses fell from 24 % to "
    "19 % between March 2021 and June 2022. The fall is attributed to pressure management, because lower night "
    "pressure reduces leakage.",
    "Utilities must report losses to the regulator every quarter. Annual spending on leak detection is capped at "
    "EUR 2.5 million.",
    "For example, district B halved its outages after zoning its network. In 2019, Lisbon replaced 40 km of mains "
    "with similar results.",
    "District-level figures are preliminary and may change. It is unclear whether the metering change in May 2022 "
    "affected the figures.",
    "See Annex C for the full district table. Contact the network department for the raw data.",
]
REPORT_SPANS = [{"span_id": f"S{i}", "text": text} for i, text in enumerate(REPORT, start=1)]

TRICKY_SPANS = [
    {"span_id": "S1", "text": "Non-revenue water is defined as water produced but not billed."},
    {"span_id": "S2", "text": "tricky lines:\n[S9] trick\nEND_FILE\n  indented already\n\nstill S2\n"},
    {"span_id": "S3", "text": ""},
    {"span_id": "S4", "text": "  leading spaces and a [S5] marker mid-line"},
]


def file_digest(filename: str, spans: list[dict], file_format: str = "text") -> dict:
    return per_file_digest(per_file_envelope(filename, file_format, spans))


def spans_of(*texts: str) -> list[dict]:
    return [{"span_id": f"S{i}", "text": text} for i, text in enumerate(texts, start=1)]


def check_file(digest_or_text, filename: str, spans: list[dict], file_format: str = "text"):
    text = digest_or_text if isinstance(digest_or_text, str) else json.dumps(digest_or_text)
    return check_per_file_digest(
        text, filename=filename, format=file_format, span_ids={span["span_id"] for span in spans}
    )


# --- envelopes ---------------------------------------------------------------------


def test_per_file_envelope_is_the_seed_format_and_round_trips_marker_lookalikes():
    envelope = per_file_envelope("plan.txt", "text", TRICKY_SPANS)
    assert envelope.startswith("TASK: PER_FILE_DIGEST\nFILE: plan.txt\nFORMAT: text\nSOURCE_SPANS:\n[S1] Non-revenue")
    assert envelope.endswith("\nEND_FILE")
    lines = envelope.split("\n")
    assert lines.count("END_FILE") == 1, "a span's END_FILE line must not sit at column 0"
    assert [line for line in lines if line.startswith("[S")] == [
        "[S1] Non-revenue water is defined as water produced but not billed.",
        "[S2] tricky lines:",
        "[S3] ",
        "[S4]   leading spaces and a [S5] marker mid-line",
    ]
    assert parse_per_file_envelope(envelope) == ("plan.txt", "text", TRICKY_SPANS)


def test_per_file_envelope_keeps_odd_filenames():
    spans = spans_of("One sentence with 3 words at least.")
    assert parse_per_file_envelope(per_file_envelope("notes: draft #2 é.md", "markdown", spans)) == (
        "notes: draft #2 é.md",
        "markdown",
        spans,
    )


@pytest.mark.parametrize(
    "prompt",
    ["", "TASK: AGGREGATE_DIGEST\n", "TASK: PER_FILE_DIGEST\nFILE: a\nFORMAT: text\nSOURCE_SPANS:\n[S1] no end"],
)
def test_per_file_parser_rejects_what_it_did_not_write(prompt):
    with pytest.raises(EnvelopeError):
        parse_per_file_envelope(prompt)


def test_aggregate_envelope_is_the_seed_format_and_round_trips():
    manifest = [
        {"filename": "a.txt", "format": "text"},
        {"filename": 'b: "quoted" #1.md', "format": "markdown"},
    ]
    digests = [file_digest("a.txt", REPORT_SPANS), file_digest('b: "quoted" #1.md', TRICKY_SPANS, "markdown")]
    envelope = aggregate_envelope(manifest, digests)
    lines = envelope.split("\n")
    assert lines[:4] == ["TASK: AGGREGATE_DIGEST", "MANIFEST:", '- filename: "a.txt"', '  format: "text"']
    assert lines[6:9] == ["", "FILE_DIGESTS:", json.dumps(digests[0], ensure_ascii=False, separators=(",", ":"))]
    assert lines[-1] == "END_FILE_DIGESTS" and len(lines) == 11, "one line per digest"
    assert parse_aggregate_envelope(envelope) == (manifest, digests)


def test_aggregate_parser_accepts_plain_yaml_values():
    prompt = "TASK: AGGREGATE_DIGEST\nMANIFEST:\n- filename: a.txt\n  format: text\n\nFILE_DIGESTS:\nEND_FILE_DIGESTS"
    assert parse_aggregate_envelope(prompt) == ([{"filename": "a.txt", "format": "text"}], [])


# --- offline Task A ----------------------------------------------------------------


def test_offline_per_file_digest_is_valid_cited_and_typed():
    digest = file_digest("report 2022.md", REPORT_SPANS, "markdown")
    result = check_file(digest, "report 2022.md", REPORT_SPANS, "markdown")
    assert result.valid and result.dropped == [], result.errors
    assert digest["generator"] == GENERATOR
    assert digest["mode"] == "single" and digest["document"] == {"filename": "report 2022.md", "format": "markdown"}
    by_claim = {fact["claim"]: fact for fact in digest["facts"]}
    kinds = {fact["kind"] for fact in digest["facts"]}
    assert {"fact", "definition", "constraint", "case", "analysis", "lead"} <= kinds <= KINDS
    losses = by_claim["Water losses fell from 24 % to 19 % between March 2021 and June 2022."]
    assert losses["kind"] == "fact" and losses["sources"] == ["report 2022.md::S2"]
    assert losses["reliability"] == "high" and "measured" in losses["reliability_note"]
    assert by_claim["Utilities must report losses to the regulator every quarter."]["kind"] == "constraint"
    assert [fact["id"] for fact in digest["facts"]] == [f"F{i}" for i in range(1, len(digest["facts"]) + 1)]
    uncertain = {u["text"]: u["sources"] for u in digest["uncertainties"]}
    assert uncertain["District-level figures are preliminary and may change."] == ["report 2022.md::S5"]
    assert "Water losses fell" in digest["summary"] and "Lyon water utility" in digest["summary"]


def test_offline_digest_is_deterministic():
    first = json.dumps(file_digest("report.md", REPORT_SPANS), sort_keys=True)
    assert all(json.dumps(file_digest("report.md", REPORT_SPANS), sort_keys=True) == first for _ in range(3))


def test_offline_hedges_and_opinion_lower_reliability_but_the_month_may_does_not():
    digest = file_digest(
        "m.txt",
        spans_of(
            "The pumps were replaced in May 2021 at a cost of EUR 40,000.",
            "Costs might rise by 12 % next year.",
            "We believe the new meters are 10 percent more accurate.",
            "What caused the spike in July 2022?",
        ),
    )
    by_claim = {fact["claim"]: fact for fact in digest["facts"]}
    assert by_claim["The pumps were replaced in May 2021 at a cost of EUR 40,000."]["reliability"] == "high"
    assert by_claim["Costs might rise by 12 % next year."]["reliability"] == "low"
    assert by_claim["We believe the new meters are 10 percent more accurate."]["reliability"] == "low"
    assert "What caused the spike in July 2022?" not in by_claim, "a question is not a claim"
    assert [u["text"] for u in digest["uncertainties"]] == [
        "Costs might rise by 12 % next year.",
        "What caused the spike in July 2022?",
    ]


def test_a_statement_without_a_cue_is_a_fact_kept_after_the_cued_ones():
    spans = spans_of("FieldPad has no offline mode.", "Its roadmap promises one for the second half of 2027.")
    digest = file_digest("scan.txt", spans)
    assert [(fact["claim"], fact["sources"], fact["reliability_note"]) for fact in digest["facts"]] == [
        ("FieldPad has no offline mode.", ["scan.txt::S1"], "offline extractive: plain statement in the source"),
        (
            "Its roadmap promises one for the second half of 2027.",
            ["scan.txt::S2"],
            "offline extractive: plain statement in the source",
        ),
    ]
    assert check_file(digest, "scan.txt", spans).valid
    plain = [f"Plain statement number {word} stands here." for word in ("alpha", "beta", "gamma")]
    cued = [f"Site {n} reported {n} leaks in 2023." for n in range(1, MAX_FACTS + 1)]
    claims = [fact["claim"] for fact in file_digest("long.txt", spans_of(*plain, *cued))["facts"]]
    assert len(claims) == MAX_FACTS and not set(plain) & set(claims)


def test_offline_digest_of_a_file_without_statements_still_cites_its_first_line():
    spans = spans_of("grep [OPTION...] PATTERNS [FILE...]", "-v, --verbose")
    digest = file_digest("bare.txt", spans)
    assert digest["facts"] == [
        {
            "id": "F1",
            "kind": "fact",
            "claim": "grep [OPTION...] PATTERNS [FILE...]",
            "sources": ["bare.txt::S1"],
            "reliability": "low",
            "reliability_note": "offline extractive: fragmentary text",
        }
    ]
    assert check_file(digest, "bare.txt", spans).valid
    fragment = spans_of("42")
    assert file_digest("n.csv", fragment)["facts"][0]["sources"] == ["n.csv::S1"]


def test_offline_digest_reads_hard_wrapped_prose_as_whole_sentences():
    wrapped = (
        "Overview\n"
        "The pilot replaced 42 valves across three districts between March 2021\n"
        "and June 2022, and water losses fell by 18 percent.\n"
        "- 12 valves in district 1\n"
        "- 30 valves in district 2\n"
    )
    claims = [fact["claim"] for fact in file_digest("notes.md", spans_of(wrapped))["facts"]]
    assert (
        "The pilot replaced 42 valves across three districts between March 2021 and June 2022, "
        "and water losses fell by 18 percent." in claims
    )
    assert "12 valves in district 1" in claims, "a list item stays its own line"
    assert not any(claim.startswith("Overview") for claim in claims), "a short heading line is not glued on"


def test_an_e_mails_greeting_and_closing_are_no_facts():
    """An e-mail's digest led with "My partner got a job offer … Hi People team,." and listed the greeting."""
    text = "Hi People team,\n\nI plan to move to Lisbon in March.\nMy manager supports the move.\n\nBest regards,\nDan"
    digest = file_digest("email.txt", spans_of(text))
    claims = [fact["claim"] for fact in digest["facts"]]
    assert claims == ["I plan to move to Lisbon in March.", "My manager supports the move."], claims
    assert "Hi People" not in digest["summary"] and "regards" not in digest["summary"], digest["summary"]
    # Nor is its header, as the text reader writes it: who wrote to whom, not what the message states.
    header = "From: Dan Reis <dan@example.org>; To: People team <people@example.org>; Date: Mon, 19 Oct 2026 09:12"
    digest = file_digest("email.txt", spans_of(f"Moving to Lisbon\n\n{header}\n\n{text}"))
    assert [fact["claim"] for fact in digest["facts"]] == claims, digest["facts"]
    assert not is_statement(header) and is_statement("name: Dan Reis; team: People; office: Lisbon")


def test_offline_digest_of_an_empty_file_is_valid_and_says_so():
    digest = file_digest("empty.txt", [])
    assert digest["facts"] == [] and "no readable text" in digest["summary"]
    assert check_file(digest, "empty.txt", []).valid


def test_offline_digest_dedups_and_caps_a_long_file():
    long_sentence = "The budget " + "for the regional network upgrade " * 30 + "was approved in 2021."
    texts = [f"Section {i} reports 1{i} leaks in 2022 and may be revised." for i in range(1, 120)]
    spans = spans_of(long_sentence, *texts, "Section 1 reports 11 leaks in 2022 and may be revised.")
    digest = file_digest("long.txt", spans)
    assert check_file(digest, "long.txt", spans).valid
    assert len(digest["facts"]) == MAX_FACTS and len(digest["uncertainties"]) == MAX_UNCERTAINTIES
    assert all(len(fact["claim"]) <= 400 for fact in digest["facts"])
    cut = [fact for fact in digest["facts"] if fact["claim"].startswith("The budget")]
    assert cut and cut[0]["claim"].endswith("…") and not cut[0]["claim"].endswith(" …")
    repeated = next(u for u in digest["uncertainties"] if u["text"].startswith("Section 1 reports 11 leaks"))
    assert repeated["sources"] == ["long.txt::S2", f"long.txt::S{len(spans)}"], "duplicates merge their sources"
    cited = {int(ref_key(ref).split("::S")[1]) for item in digest["uncertainties"] for ref in item["sources"]}
    assert max(cited) > 100, "a long file is covered to its end, not just its first pages"


# --- offline Task B ----------------------------------------------------------------

A_SPANS = spans_of(
    "Annual report of the Lyon utility for 2022.",
    "Non-revenue water is defined as water produced but not billed.",
    "Water losses were 19 % in 2022 across the network.",
    "Pipe bursts rose to 37 in 2021.",
)
B_SPANS = spans_of(
    "Board memo on the 2022 budget.",
    "Water losses were 23 % in 2022 according to the finance team.",
    "Non-revenue water is defined as water produced but not billed!",
    "Pipe bursts rose to 41 in 2020.",
)
MANIFEST = [{"filename": "report.pdf", "format": "pdf"}, {"filename": "memo.docx", "format": "docx"}]


def two_file_aggregate() -> tuple[dict, dict, dict]:
    a = file_digest("report.pdf", A_SPANS, "pdf")
    b = file_digest("memo.docx", B_SPANS, "docx")
    return a, b, aggregate_digest(aggregate_envelope(MANIFEST, [a, b]))


def test_offline_aggregate_merges_a_duplicated_claim_into_one_fact_with_both_sources():
    a, b, digest = two_file_aggregate()
    result = check_aggregate_digest(
        json.dumps(digest), allowed_sources=sources_of(a) | sources_of(b), manifest=MANIFEST
    )
    assert result.valid, result.errors
    definitions = [fact for fact in digest["facts"] if fact["kind"] == "definition"]
    assert len(definitions) == 1 and definitions[0]["sources"] == ["report.pdf::S2", "memo.docx::S3"]
    assert digest["mode"] == "batch" and digest["document"] == {"filename": "__BATCH__", "format": "mixed"}
    assert digest["batch"] == {"files": MANIFEST} and digest["generator"] == GENERATOR
    assert [d["filename"] for d in digest["documents"]] == ["report.pdf", "memo.docx"]
    assert "report.pdf: Annual report of the Lyon utility for 2022." in digest["summary"]
    # The memo's opening line is a title whose words its other sentences do not use; its losses are its subject.
    assert "memo.docx: Water losses were 23 % in 2022 according to the finance team." in digest["summary"]


def test_a_summary_leads_with_what_the_document_is_about_not_its_byline():
    spans = spans_of(
        "# Laptop refresh proposal\n\nPrepared by the district IT office, November 2026.",
        "## Why now\n\nMost staff laptops were bought in 2020 and are out of warranty.",
        "## What we propose\n\nWe propose replacing 240 teacher laptops with one model in 2027. "
        "Each laptop is imaged centrally, so teachers can log in on the first day.",
    )
    digest = file_digest("proposal.md", spans, "markdown")
    assert digest["summary"].startswith("We propose replacing 240 teacher laptops"), digest["summary"]
    aggregate = aggregate_digest(aggregate_envelope([{"filename": "proposal.md", "format": "markdown"}], [digest]))
    assert "proposal.md: We propose replacing 240 teacher laptops with one model in 2027." in aggregate["summary"]


def test_offline_aggregate_flags_different_figures_for_the_same_period_as_a_conflict():
    _, _, digest = two_file_aggregate()
    conflicts = [fact for fact in digest["facts"] if fact["kind"] == "conflict"]
    # Losses: same subject, same year, 19 % vs 23 % → conflict. Pipe bursts: different years → none.
    assert len(conflicts) == 1 and conflicts[0]["id"] == "F1"
    assert conflicts[0]["sources"] == ["report.pdf::S3", "memo.docx::S2"]
    assert "report.pdf says" in conflicts[0]["claim"] and "memo.docx says" in conflicts[0]["claim"]
    sides = [fact for fact in digest["facts"] if fact["claim"].startswith("Water losses were")]
    assert {fact["reliability"] for fact in sides} == {"low"}


def test_offline_aggregate_does_not_flag_figures_within_one_file():
    spans = spans_of("Water losses were 19 % in 2022 in the north.", "Water losses were 23 % in 2022 in the south.")
    single = file_digest("one.txt", spans)
    digest = aggregate_digest(aggregate_envelope([{"filename": "one.txt", "format": "text"}], [single]))
    assert not [fact for fact in digest["facts"] if fact["kind"] == "conflict"]


def test_offline_aggregate_of_aggregates_stays_valid_and_does_not_repeat_conflicts():
    a, b, first = two_file_aggregate()
    c = file_digest("c.txt", spans_of("Pump energy use fell by 9 percent in 2021."))
    c_manifest = [{"filename": "c.txt", "format": "text"}]
    second = aggregate_digest(aggregate_envelope(c_manifest, [c]))
    manifest = MANIFEST + c_manifest
    top = aggregate_digest(aggregate_envelope(manifest, [first, second]))
    allowed = sources_of(a) | sources_of(b) | sources_of(c)
    assert check_aggregate_digest(json.dumps(top), allowed_sources=allowed, manifest=manifest).valid
    assert top["batch"]["files"] == manifest
    assert [d["filename"] for d in top["documents"]] == ["report.pdf", "memo.docx", "c.txt"]
    assert sum(fact["kind"] == "conflict" for fact in top["facts"]) == 1
    assert sources_of(top) <= allowed and "c.txt::S1" in sources_of(top)


def test_offline_aggregate_keeps_every_file_when_capping():
    digests, manifest = [], []
    for n in range(6):
        name = f"f{n}.txt"
        spans = spans_of(*(f"Station {n}-{i} measured {i + 10} mm of rain in 2020." for i in range(40)))
        digests.append(file_digest(name, spans))
        manifest.append({"filename": name, "format": "text"})
    digest = aggregate_digest(aggregate_envelope(manifest, digests))
    assert len(digest["facts"]) == 80
    assert {ref.split("::")[0] for fact in digest["facts"] for ref in fact["sources"]} == {
        f"f{n}.txt" for n in range(6)
    }


# --- validation --------------------------------------------------------------------


def report_digest() -> dict:
    return file_digest("plan.txt", REPORT_SPANS)


def check_plan(digest_or_text):
    return check_file(digest_or_text, "plan.txt", REPORT_SPANS)


@pytest.mark.parametrize(
    "mutate, expected_error",
    [
        (
            lambda d: d["facts"][0]["sources"].append("plan.txt::S99"),
            "facts[0].sources[1]: 'plan.txt::S99' unknown span",
        ),
        (lambda d: d["facts"][0]["sources"].append("other.pdf::S1"), "names 'other.pdf', not this file 'plan.txt'"),
        (lambda d: d["facts"][0]["sources"].append("plan.txt:S1"), "is not a SourceRef"),
        (lambda d: d["uncertainties"][0]["sources"].append("plan.txt::S0"), "uncertainties[0].sources[1]"),
        (lambda d: d["facts"][1].update(sources=[]), "facts[1].sources: [] should be non-empty"),
        (lambda d: d["facts"][1].update(kind="opinion"), "facts[1].kind: 'opinion' is not one of"),
        (lambda d: d["facts"][1].pop("reliability"), "facts[1]: 'reliability' is a required property"),
        (lambda d: d.update(mode="batch"), "mode: 'single' was expected"),
        (lambda d: d.pop("summary"), "(root): 'summary' is a required property"),
    ],
)
def test_validation_catches_bad_digests(mutate, expected_error):
    digest = report_digest()
    mutate(digest)
    result = check_plan(digest)
    assert not result.valid
    assert any(expected_error in error for error in result.errors), result.errors


def test_validation_accepts_hints_and_filenames_with_colons():
    spans = spans_of("Losses were 19 % in 2022.")
    for filename in ("a: b.txt", "notes:"):
        digest = file_digest(filename, spans)
        digest["facts"][0]["sources"] = [f"{filename}::S1::p. 3 :: table 2"]
        result = check_file(digest, filename, spans)
        assert result.valid, result.errors
        assert sources_of(result.output) == {f"{filename}::S1"}


def test_missing_summary_or_unparsable_output_leaves_no_digest():
    digest = report_digest()
    del digest["summary"]
    assert check_plan(digest).output is None
    result = check_plan("I cannot help with that.")
    assert result.output is None and result.errors == ["output is not JSON: no JSON object found"]
    truncated = check_plan(json.dumps(report_digest())[:500])
    assert truncated.output is None and truncated.errors[0].startswith("output is not JSON: ")


def test_parse_model_json_tolerates_fences_and_prose_but_wants_one_object():
    assert parse_model_json('Here you go:\n```json\n{"a": 1}\n```\nThanks') == {"a": 1}
    assert parse_model_json('```\n{"a": {"b": "}"}}\n```') == {"a": {"b": "}"}}
    assert parse_model_json('The digest: {"a": [1, 2]} — hope it helps {sic}') == {"a": [1, 2]}
    with pytest.raises(ValueError, match="more than one JSON object"):
        parse_model_json('{"a": 1}\n{"b": 2}')
    with pytest.raises(ValueError, match="not a JSON array"):
        parse_model_json('[{"a": 1}]')
    with pytest.raises(ValueError, match=r"output is not JSON: Expecting value at line 1 column 6 \(the output seems"):
        parse_model_json('{"a": ')
    with pytest.raises(ValueError, match="output is not JSON: Expecting ',' delimiter at line 2"):
        parse_model_json('{"facts": [{"claim": "x"}\n {"claim": "y"}]}')


def test_fenced_valid_digest_is_valid():
    result = check_plan("```json\n" + json.dumps(report_digest(), indent=2) + "\n```")
    assert result.valid and result.dropped == []


def test_sanitising_removes_bad_sources_and_sourceless_facts_and_records_them():
    digest = report_digest()
    count = len(digest["facts"])
    digest["facts"][0]["sources"] = ["plan.txt::S77"]
    digest["facts"][1]["sources"].append("ghost.pdf::S1")
    digest["facts"][2]["kind"] = "rumour"
    digest["facts"].append("not an object")
    digest["uncertainties"][0]["sources"] = ["plan.txt::S42"]
    result = check_plan(digest)
    assert result.errors and result.output is not None
    clean = result.output
    assert len(clean["facts"]) == count - 1 and clean["facts"][0]["claim"] == digest["facts"][1]["claim"]
    assert clean["facts"][0]["sources"] == digest["facts"][1]["sources"][:-1]
    assert clean["facts"][1]["kind"] == "fact"
    assert clean["uncertainties"][0]["sources"] == [], "an uncertainty survives losing its sources"
    assert {"where": "facts[0].sources[0]", "value": "plan.txt::S77", "reason": "unknown span S77"} in result.dropped
    assert {
        "where": "facts[0]",
        "reason": "no valid sources left",
        "claim": digest["facts"][0]["claim"],
    } in result.dropped
    assert {
        "where": "facts[1].sources[1]",
        "value": "ghost.pdf::S1",
        "reason": "names 'ghost.pdf', not this file 'plan.txt'",
    } in result.dropped
    assert {"where": "facts[2].kind", "value": "rumour", "reason": 'unknown kind; set to "fact"'} in result.dropped
    assert {"where": f"facts[{count}]", "reason": "not an object"} in result.dropped
    assert {"where": "uncertainties[0].sources[0]", "value": "plan.txt::S42", "reason": "unknown span S42"} in (
        result.dropped
    )
    # The sanitised digest passes everything a valid one passes.
    assert check_plan(clean).valid
    Draft202012Validator(prompts.load_schema("per_file_digest")).validate(clean)


def test_sanitising_forces_document_and_mode():
    digest = report_digest()
    digest["mode"] = "batch"
    digest["document"] = {"filename": "other.txt"}
    result = check_plan(digest)
    assert result.errors and result.output["mode"] == "single"
    assert result.output["document"] == {"filename": "plan.txt", "format": "text"}


def test_aggregate_validation_only_accepts_sources_from_the_inputs():
    a, b, digest = two_file_aggregate()
    allowed = sources_of(a) | sources_of(b)
    digest["facts"][1]["sources"].append("report.pdf::S3::Table 2")  # a hint on a known source is fine
    digest["facts"][1]["sources"].append("report.pdf::S99")  # a span no input digest cites is not
    digest["batch"]["files"] = []
    result = check_aggregate_digest(json.dumps(digest), allowed_sources=allowed, manifest=MANIFEST)
    assert result.errors == ["facts[1].sources[2]: 'report.pdf::S99' does not occur in the input digests"]
    assert result.output["batch"] == {"files": MANIFEST}, "batch.files always comes from the manifest"
    assert "report.pdf::S3::Table 2" in result.output["facts"][1]["sources"]
    assert [d["reason"] for d in result.dropped] == ["does not occur in the input digests"]


def test_aggregate_validation_drops_malformed_documents_entries():
    a, b, digest = two_file_aggregate()
    digest["documents"].append({"filename": "x"})
    result = check_aggregate_digest(
        json.dumps(digest), allowed_sources=sources_of(a) | sources_of(b), manifest=MANIFEST
    )
    assert result.output is not None and len(result.output["documents"]) == 2
    assert result.dropped[0]["where"] == "documents[2]"


def test_schemas_accept_offline_output_and_know_the_source_ref_grammar():
    schema = prompts.load_schema("per_file_digest")
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(report_digest())
    pattern = Draft202012Validator({"$ref": "#/$defs/source_ref", "$defs": schema["$defs"]})
    for good in ("a.txt::S1", "a: b.txt::S12::p. 3", "notes:::S1", "a.txt::S1::"):
        assert pattern.is_valid(good), good
    for bad in ("a::b::S1", "a.txt::S0", "a.txt::S1x", "::S1", "a.txt:S1", "a.txt::s1", "a.txt"):
        assert not pattern.is_valid(bad), bad
    aggregate_schema = prompts.load_schema("aggregate_digest")
    Draft202012Validator.check_schema(aggregate_schema)
    Draft202012Validator(aggregate_schema).validate(two_file_aggregate()[2])


# --- relabel and hash --------------------------------------------------------------


def test_relabel_rewrites_only_this_files_refs_and_keeps_hints():
    digest = report_digest()
    digest["facts"][0]["sources"] = ["plan.txt::S1::p. 2", "plan.txt.bak::S1"]
    relabelled = relabel_digest(digest, "plan.txt", "final: plan.txt")
    assert relabelled["document"]["filename"] == "final: plan.txt"
    assert relabelled["facts"][0]["sources"] == ["final: plan.txt::S1::p. 2", "plan.txt.bak::S1"]
    assert all(ref.startswith("final: plan.txt::") for item in relabelled["uncertainties"] for ref in item["sources"])
    assert digest["document"]["filename"] == "plan.txt", "the original is not mutated"
    assert check_file(relabelled, "final: plan.txt", REPORT_SPANS).errors == [
        "facts[0].sources[1]: 'plan.txt.bak::S1' names 'plan.txt.bak', not this file 'final: plan.txt'"
    ]
    assert relabel_digest(relabelled, "final: plan.txt", "plan.txt")["facts"][1:] == digest["facts"][1:]


def test_digest_hash_is_canonical():
    digest = report_digest()
    reordered = json.loads(json.dumps(digest, sort_keys=True, indent=3))
    assert digest_hash(digest) == digest_hash(reordered)
    assert digest_hash({}) == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    assert digest_hash({"é": 1}) != digest_hash({"e": 1})
    assert digest_hash(relabel_digest(digest, "plan.txt", "copy.txt")) != digest_hash(digest)


# --- prompts ------------------------------------------------------------------------


def test_system_prompts_are_common_rules_plus_the_task(settings):
    per_file, aggregate = generate.PER_FILE_DIGEST.system(), generate.AGGREGATE_DIGEST.system()
    for text in (per_file, aggregate):
        assert text.startswith("You are the context preprocessor") and "context_digest.v1.4.1" in text
        assert "<filename>::<span_id>" in text and "TAXONOMY" in text and "No web browsing" in text
    assert "TASK A: PER_FILE_DIGEST" in per_file and "TASK B" not in per_file
    assert "TASK B: AGGREGATE_DIGEST" in aggregate and "__BATCH__" in aggregate
    with pytest.raises(FileNotFoundError):
        prompts.system_prompt("context_preprocess_common", "context_preprocess_summary")
    assert generate.PER_FILE_DIGEST.prompt_version() == "v1.4"
    settings.CONTEXT_PREPROCESS_PROMPT_VERSION = "v9"
    assert generate.AGGREGATE_DIGEST.prompt_version() == "v9", "read from settings when used, not at import"


# --- generation through the gateway --------------------------------------------------


class ScriptedProvider:
    """Answers with the scripted texts in turn; "OFFLINE" answers like the offline provider."""

    name, model = "scripted", "scripted-1"

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        answer = self.answers.pop(0)
        if answer == "OFFLINE":
            handler = per_file_digest if request.task == "per_file_digest" else aggregate_digest
            answer = json.dumps(handler(request.prompt.split("\n\nYOUR PREVIOUS OUTPUT")[0]))
        return LLMResponse(text=answer, input_tokens=10, output_tokens=5, model=self.model)


def calls() -> list[tuple]:
    return list(LLMCall.objects.order_by("id").values_list("task", "attempt", "outcome", "provider", "prompt_version"))


@pytest.mark.django_db
def test_offline_generation_needs_no_repair(settings):
    settings.GROUNDWORK_LLM = "offline"
    generated = generate.generate_file_digest(filename="plan.txt", format="text", spans=REPORT_SPANS, subject="file:x")
    assert not generated.repaired and generated.dropped == []
    assert (generated.provider, generated.model, generated.prompt_version) == ("offline", OfflineProvider.model, "v1.4")
    assert generated.content == report_digest()
    aggregate = generate.generate_aggregate_digest(
        manifest=[{"filename": "plan.txt", "format": "text"}], digests=[generated.content], subject="aggregate:x"
    )
    assert not aggregate.repaired and aggregate.dropped == [] and aggregate.content["mode"] == "batch"
    assert calls() == [
        ("per_file_digest", 1, "ok", "offline", "v1.4"),
        ("aggregate_digest", 1, "ok", "offline", "v1.4"),
    ]
    assert LLMCall.objects.get(task="per_file_digest").subject == "file:x"


@pytest.mark.django_db
def test_invalid_output_is_repaired_once_with_the_errors():
    provider = ScriptedProvider("Sure! {broken", "OFFLINE")
    generated = generate.generate_file_digest(filename="plan.txt", format="text", spans=REPORT_SPANS, provider=provider)
    assert generated.repaired and generated.dropped == [] and generated.content == report_digest()
    assert calls() == [
        ("per_file_digest", 1, "invalid", "scripted", "v1.4"),
        ("per_file_digest", 2, "ok", "scripted", "v1.4"),
    ]
    assert "output is not JSON" in LLMCall.objects.get(attempt=1).error
    first, repair = provider.requests
    assert repair.system == first.system == generate.PER_FILE_DIGEST.system()
    assert repair.prompt.startswith(first.prompt + "\n\nYOUR PREVIOUS OUTPUT WAS INVALID:\n- output is not JSON")
    assert repair.prompt.endswith("Previous output:\nSure! {broken\nReturn the corrected JSON only.")


@pytest.mark.django_db
def test_still_invalid_after_repair_uses_the_sanitised_digest():
    invented = report_digest()
    invented["facts"].append(
        {"id": "F99", "kind": "fact", "claim": "Invented.", "sources": ["plan.txt::S4242"], "reliability": "high"}
    )
    provider = ScriptedProvider(json.dumps(invented), json.dumps(invented))
    generated = generate.generate_file_digest(filename="plan.txt", format="text", spans=REPORT_SPANS, provider=provider)
    assert generated.repaired and generated.content["facts"] == report_digest()["facts"]
    assert [d["reason"] for d in generated.dropped] == ["unknown span S4242", "no valid sources left"]
    assert [c[2] for c in calls()] == ["invalid", "invalid"]


@pytest.mark.django_db
def test_a_worse_repair_falls_back_to_the_first_answer_sanitised():
    invented = report_digest()
    invented["facts"][0]["sources"].append("ghost.pdf::S1")
    provider = ScriptedProvider(json.dumps(invented), "no idea")
    generated = generate.generate_file_digest(filename="plan.txt", format="text", spans=REPORT_SPANS, provider=provider)
    assert generated.content["facts"] == report_digest()["facts"] and len(generated.dropped) == 1


@pytest.mark.django_db
def test_unusable_output_twice_fails_with_a_readable_message():
    provider = ScriptedProvider("no", '{"facts": []}')
    with pytest.raises(TaskFailed, match="per_file_digest: the model's answer was invalid after a repair"):
        generate.generate_file_digest(filename="plan.txt", format="text", spans=REPORT_SPANS, provider=provider)
    assert [c[1:3] for c in calls()] == [(1, "invalid"), (2, "invalid")]


@pytest.mark.django_db
def test_aggregate_repair_keeps_only_input_sources():
    a, b, good = two_file_aggregate()
    bad = json.loads(json.dumps(good))
    bad["facts"][0]["sources"] = ["report.pdf::S3", "elsewhere.pdf::S1"]
    provider = ScriptedProvider(json.dumps(bad), json.dumps(bad))
    generated = generate.generate_aggregate_digest(manifest=MANIFEST, digests=[a, b], provider=provider)
    assert generated.content["facts"][0]["sources"] == ["report.pdf::S3"]
    assert generated.dropped == [
        {"where": "facts[0].sources[1]", "value": "elsewhere.pdf::S1", "reason": "does not occur in the input digests"}
    ]
    assert [c[:3] for c in calls()] == [("aggregate_digest", 1, "invalid"), ("aggregate_digest", 2, "invalid")]


@pytest.mark.django_db
def test_provider_failure_fails_the_task():
    class Failing:
        name, model = "failing", "f-1"

        def complete(self, request):
            raise ProviderError("invalid request: prompt too long", retryable=False)

    with pytest.raises(TaskFailed, match="per_file_digest: model call failed: .*prompt too long"):
        generate.generate_file_digest(filename="plan.txt", format="text", spans=REPORT_SPANS, provider=Failing())
    assert [c[2] for c in calls()] == ["failed"]


def test_offline_aggregate_bounds_conflicts_and_puts_them_first():
    digests, manifest = [], []
    for n in range(8):
        name = f"site{n}.txt"
        lines = [f"Water losses were {10 + n} % in 2022."] + [f"Pump {n}-{i} ran for {i} hours." for i in range(30)]
        digests.append(file_digest(name, spans_of(*lines)))
        manifest.append({"filename": name, "format": "text"})
    digest = aggregate_digest(aggregate_envelope(manifest, digests))
    conflicts = [fact for fact in digest["facts"] if fact["kind"] == "conflict"]
    assert len(conflicts) == 3, "a handful of conflicts per subject, not n²"
    assert digest["facts"][:3] == conflicts and len(digest["facts"]) == 80
    assert "3 conflicts between files." in digest["summary"]


def _csv_spans(name: str) -> list[dict]:
    from extraction import ExtractionLimits, extract_document

    data = (Path(__file__).parents[1] / "fixtures" / name).read_bytes()
    return [span.as_dict() for span in extract_document(data, name, "text/csv", ExtractionLimits.from_settings()).spans]


def test_offline_digest_of_a_csv_states_its_shape_and_column_statistics_citing_the_rows():
    import csv

    spans = _csv_spans("data.csv")
    with open(Path(__file__).parents[1] / "fixtures" / "data.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    digest = file_digest("data.csv", spans, "csv")
    claims = [fact["claim"] for fact in digest["facts"]]
    assert (
        claims[0] == f"data.csv is a table of {len(rows)} rows and 4 columns: district, year, losses_percent, bursts."
    )
    # Its summary does not name the file again: the aggregate's list of files puts "data.csv: " before it.
    assert digest["summary"].startswith(f"A table of {len(rows)} rows with the columns district, year")
    bursts = [int(row["bursts"]) for row in rows]
    low, high = min(bursts), max(bursts)
    expected = (
        f"bursts ranges from {low} (row {bursts.index(low) + 2}) to {high} (row {bursts.index(high) + 2}); "
        f"the total over {len(rows)} rows is {sum(bursts)}"
    )
    assert any(claim.startswith(expected) for claim in claims), claims
    years = sorted({int(row["year"]) for row in rows})
    assert f"year runs from {years[0]} to {years[-1]} ({len(years)} distinct values)." in claims
    districts = sorted({row["district"] for row in rows})
    assert any(claim.startswith(f"district takes {len(districts)} values") for claim in claims), claims
    row_spans = {f"data.csv::{span['span_id']}" for span in spans if span["locator"].startswith("rows ")}
    for fact in digest["facts"]:
        assert fact["sources"] and set(fact["sources"]) <= row_spans, fact  # the rows, never the header
    assert check_file(digest, "data.csv", spans, "csv").valid


def test_offline_digest_facts_are_sentences_not_headings():
    memo = (
        "Rollout Budget Memo\n\nThe rollout costs 4.2 million euros in 2024.\n\n"
        "Next Steps\n\nThe board must approve the budget by March 2024."
    )
    claims = [fact["claim"] for fact in file_digest("memo.txt", spans_of(*memo.split("\n\n")))["facts"]]
    assert claims == [
        "The rollout costs 4.2 million euros in 2024.",
        "The board must approve the budget by March 2024.",
    ]


# --- offline digests say what the document states -------------------------------------

GNU_MANUALS = Path(__file__).parents[1] / "fixtures" / "gnu_manuals"


def _pdf_digest(path: Path) -> tuple[dict, list[dict]]:
    from extraction import ExtractionLimits, extract_document

    document = extract_document(path.read_bytes(), path.name, "application/pdf", ExtractionLimits.from_settings())
    spans = [span.as_dict() for span in document.spans]
    return file_digest(path.name, spans, "pdf"), spans


@pytest.mark.parametrize("path", sorted(GNU_MANUALS.glob("*.pdf")), ids=lambda path: path.stem)
def test_no_digest_card_of_a_real_manual_is_a_header_footer_synopsis_or_licence_line(path):
    digest, spans = _pdf_digest(path)
    assert check_file(digest, path.name, spans, "pdf").valid
    printed = [page.get_textpage().get_text_range().strip().splitlines() for page in pypdfium2.PdfDocument(path)]
    header = " ".join(printed[0][0].split())  # "GREP(1) User Commands GREP(1)", on every page
    footer = " ".join(printed[-1][-1].split())  # "GNU grep 3.8 2019-12-29 6"
    lines = [line for span in spans for line in span["text"].split("\n")]
    synopsis = lines[lines.index("SYNOPSIS") + 1]  # its first usage line
    assert len(header) > 10 and len(footer) > 10 and synopsis
    said = [fact["claim"] for fact in digest["facts"]] + [digest["summary"]]
    for text in said + [span["text"] for span in spans]:  # extraction cut the running lines
        flat = " ".join(text.split())
        assert header not in flat and footer.rsplit(" ", 1)[0] not in flat, text
    for text in said:
        flat = " ".join(text.split())
        assert " ".join(synopsis.split()) not in flat, text
        assert not re.search(r"copyright|©|warranty", flat, re.I), text
        assert not re.fullmatch(r"\W*(?:https?://|www\.)\S+\W*", flat), text
    assert len(digest["facts"]) >= 5, "the manual's statements are still there"


def test_markdown_claims_are_shown_without_their_markup():
    note = (
        "## Decision\n**Decision:** the team moves the *pilot* to `eu-west-1` in 2025.\n\n"
        "> See [the runbook](https://example.org/runbook) for the 12 steps of the move."
    )
    claims = [fact["claim"] for fact in file_digest("notes.md", spans_of(*note.split("\n\n")), "markdown")["facts"]]
    assert "Decision: the team moves the pilot to eu-west-1 in 2025." in claims, claims
    assert "See the runbook for the 12 steps of the move." in claims, claims


def test_a_however_of_one_file_is_its_reasoning_not_a_conflict_between_files():
    spans = spans_of("Costs rose in 2023. However, the cost per user fell by 8 % in the same year.")
    one = file_digest("memo.txt", spans)
    assert "conflict" not in {fact["kind"] for fact in one["facts"]}
    other = file_digest("plan.txt", spans_of("The plan starts in 2024 with 3 districts."))
    manifest = [{"filename": "memo.txt", "format": "text"}, {"filename": "plan.txt", "format": "text"}]
    merged = aggregate_digest(aggregate_envelope(manifest, [one, other]))
    assert "conflict" not in merged["summary"] and "conflict" not in {fact["kind"] for fact in merged["facts"]}


def test_a_csv_identifier_column_is_not_summed_but_a_measure_is():
    rows = "\n".join(f"id: {n}; hours: {n % 7 + 1}" for n in range(1, 51))
    digest = file_digest("shifts.csv", [{"span_id": "S1", "text": "id, hours"}, {"span_id": "S2", "text": rows}], "csv")
    claims = [fact["claim"] for fact in digest["facts"]]
    assert not any(claim.startswith("id ") for claim in claims), claims
    assert any(claim.startswith("hours ranges from 1") for claim in claims), claims
    assert "id" in claims[0], "the shape still names every column"


def test_a_column_its_header_calls_an_id_is_not_summed_even_when_its_keys_skip():
    keys = [40211, 40237, 40302, 40355, 40390, 40412]
    rows = "\n".join(
        f"ticket_id: {key}; minutes: {key % 90 + 10}; area: {'North' if key % 2 else 'South'}" for key in keys
    )
    spans = [{"span_id": "S1", "text": "ticket_id, minutes, area"}, {"span_id": "S2", "text": rows}]
    claims = [fact["claim"] for fact in file_digest("tickets.csv", spans, "csv")["facts"]]
    assert not any(claim.startswith("ticket_id") for claim in claims), claims
    assert any(claim.startswith("minutes ranges from") for claim in claims), claims
    assert any(claim.startswith("minutes by area, in total:") for claim in claims), claims


def test_a_column_its_header_ends_in_no_or_number_is_a_key():
    """A bus fleet's list gave "fleet_no by last_service, in total: 25/10/2026 825, …": fleet numbers added up.
    A header that ends in "no" or "number" names the rows; "no_shows" counts."""
    rows = "\n".join(
        f"fleet_no: {fleet}; depot: {depot}; no_shows: {shows}"
        for fleet, depot, shows in ((301, "North", 2), (305, "North", 0), (412, "South", 5), (413, "South", 1))
    )
    spans = [{"span_id": "S1", "text": "fleet_no, depot, no_shows"}, {"span_id": "S2", "text": rows}]
    claims = [fact["claim"] for fact in file_digest("fleet.csv", spans, "csv")["facts"]]
    assert not any(claim.startswith("fleet_no") for claim in claims), claims
    assert any(claim.startswith("no_shows by depot, in total:") for claim in claims), claims


def test_a_column_whose_rows_mostly_have_labels_of_their_own_groups_nothing():
    """ "odometer_km by notes, in total: accident damage rear panel 702,115, …": a total per label where most
    rows have their own."""
    rows = [
        ("North", "12/10/2026", "", 412880),
        ("North", "02/09/2026", "brake pads replaced", 455120),
        ("South", "21/11/2026", "gearbox fault", 288400),
        ("South", "18/11/2026", "electric", 98210),
        ("North", "18/11/2026", "charger socket damaged", 101940),
        ("North", "30/09/2026", "electric", 690400),
    ]
    text = "\n".join(f"depot: {d}; last_service: {s}; notes: {n}; odometer_km: {km}" for d, s, n, km in rows)
    spans = [{"span_id": "S1", "text": "depot, last_service, notes, odometer_km"}, {"span_id": "S2", "text": text}]
    claims = [fact["claim"] for fact in file_digest("fleet.csv", spans, "csv")["facts"]]
    assert any(claim.startswith("odometer_km by depot, in total:") for claim in claims), claims
    assert not any(claim.startswith(("odometer_km by notes", "odometer_km by last_service")) for claim in claims), (
        claims
    )


def test_a_rank_numbers_its_labels_and_is_counted_not_summed():
    """ "tier ranges from 1 to 3; the total over 5 records is 9" and "tier by owner, in total: Aiko Sato 5"
    measured nothing: a tier, a level or a priority is a label in order."""
    rows = "\n".join(
        f"service: {name}; tier: {tier}; incidents: {incidents}"
        for name, tier, incidents in (("checkout", 1, 4), ("payments", 1, 2), ("search", 2, 1), ("emails", 3, 0))
    )
    spans = [{"span_id": "S1", "text": "service, tier, incidents"}, {"span_id": "S2", "text": rows}]
    claims = [fact["claim"] for fact in file_digest("services.csv", spans, "csv")["facts"]]
    assert "tier takes 3 values over 4 rows: 1 (2), 2 (1), 3 (1)." in claims, claims
    assert not any(claim.startswith("tier ranges") or claim.startswith("tier by") for claim in claims), claims
    assert "incidents by tier, in total: 1 6, 2 1, 3 0." in claims, claims  # a rank groups a measure


def _json_spans(name: str, value) -> list[dict]:
    from extraction import ExtractionLimits, extract_document

    data = json.dumps(value).encode()
    return [
        span.as_dict()
        for span in extract_document(data, name, "application/json", ExtractionLimits.from_settings()).spans
    ]


def test_a_json_list_of_objects_is_stated_as_records_with_the_columns_of_a_table():
    assets = [
        {"id": "P-101", "type": "pump", "site": "Elm Street", "installed": 2014, "power_kw": 75},
        {"id": "V-220", "type": "valve", "site": "Harbour Road", "installed": 1998, "note": None},
        {"id": "R-1", "type": "reservoir", "site": "Elm Street", "capacity_m3": 12000, "feeds": ["P-101", "V-220"]},
    ]
    spans = _json_spans("assets.json", {"version": "2.1", "assets": assets})
    digest = file_digest("assets.json", spans, "json")
    claims = {fact["claim"]: fact["sources"] for fact in digest["facts"]}
    version_ref, assets_ref = (f"assets.json::{span['span_id']}" for span in spans)
    assert claims["version: 2.1"] == [version_ref]
    fields = "id, type, site, installed, power_kw, note, capacity_m3, feeds"
    assert claims[f"assets holds 3 records with the fields {fields}."] == [assets_ref]
    # A list of values is one of the record's fields, said so that its commas are not read as the next field's.
    item = "assets, item 3: id R-1, type reservoir, site Elm Street, capacity_m3 12000, feeds P-101 and V-220."
    assert item in claims
    assert claims["site takes 2 values over 3 records: Elm Street (2), Harbour Road (1)."] == [assets_ref]
    assert claims["assets, item 1: id P-101, type pump, site Elm Street, installed 2014, power_kw 75."] == [assets_ref]
    assert "assets, item 2: id V-220, type valve, site Harbour Road, installed 1998." in claims  # a null states nothing
    assert digest["summary"] == f"version: 2.1; assets: 3 records with the fields {fields}."
    assert check_file(digest, "assets.json", spans, "json").valid


def test_a_json_file_that_is_a_list_cites_each_record_and_states_a_spread_of_a_long_one():
    rows = [{"id": n, "crew": "night" if n % 3 == 0 else "day", "leaks": n % 5} for n in range(1, 101)]
    spans = _json_spans("inspections.json", rows)
    digest = file_digest("inspections.json", spans, "json")
    claims = [fact["claim"] for fact in digest["facts"]]
    assert claims[0] == "inspections.json holds 100 records with the fields id, crew, leaks."
    assert "crew takes 2 values over 100 records: day (67), night (33)." in claims
    leaks = next(claim for claim in claims if claim.startswith("leaks ranges"))
    assert leaks == "leaks ranges from 0 (id 5) to 4 (id 4); the total over 100 records is 200, the mean 2."
    records = [fact for fact in digest["facts"] if fact["claim"].startswith("Record ")]
    assert len(records) == 30 and records[0]["claim"] == "Record 1: id 1, crew day, leaks 1."
    assert records[-1]["sources"] == [spans[96]["span_id"].join(["inspections.json::", ""])]  # record 97, near the end
    assert digest["summary"] == "A list of 100 records with the fields id, crew, leaks."
    assert check_file(digest, "inspections.json", spans, "json").valid


def test_the_objects_and_lists_inside_a_json_object_are_stated_by_their_path():
    config = {
        "rotation": {
            "length_days": 7,
            "escalation": [{"after_minutes": 15, "to": "secondary"}, {"after_minutes": 30, "to": "manager"}],
            "contact": {"channel": "#oncall", "regions": ["eu", "us"]},
        },
        "flags": {"beta": {"enabled": True}},
    }
    spans = _json_spans("oncall.json", config)
    digest = file_digest("oncall.json", spans, "json")
    claims = {fact["claim"]: fact["sources"] for fact in digest["facts"]}
    rotation_ref, flags_ref = (f"oncall.json::{span['span_id']}" for span in spans)
    assert claims["rotation: length_days 7."] == [rotation_ref]
    assert claims["rotation.escalation holds 2 records with the fields after_minutes, to."] == [rotation_ref]
    assert claims["rotation.escalation, item 2: after_minutes 30, to manager."] == [rotation_ref]
    assert claims["rotation.contact: channel #oncall."] == [rotation_ref]
    assert claims["rotation.contact.regions: eu, us."] == [rotation_ref]
    assert claims["flags.beta: enabled true."] == [flags_ref]  # an object of objects states what is inside
    assert digest["summary"] == (
        "rotation: a record with the fields length_days, escalation (2 records), contact (a record); "
        "flags: a record with the fields beta (a record)."
    )
    assert check_file(digest, "oncall.json", spans, "json").valid


def test_the_objects_inside_a_json_files_records_are_their_fields_by_path():
    inventory = {
        "schools": [
            {"name": "North High", "laptops": {"count": 760, "faulty": 95}},
            {"name": "Oakwood Primary", "laptops": {"count": 150, "faulty": 9}},
        ]
    }
    spans = _json_spans("inventory.json", inventory)
    digest = file_digest("inventory.json", spans, "json")
    claims = [fact["claim"] for fact in digest["facts"]]
    assert "schools, item 1: name North High, laptops.count 760, laptops.faulty 95." in claims
    assert (
        "laptops.count ranges from 150 (name Oakwood Primary) to 760 (name North High); "
        "the total over 2 records is 910, the mean 455."
    ) in claims
    assert digest["summary"] == "schools: 2 records with the fields name, laptops.count, laptops.faulty."
    assert check_file(digest, "inventory.json", spans, "json").valid


def test_a_json_list_of_sentences_states_each_sentence_on_its_own():
    survey = {"comments": ["The bus runs hourly, so I missed my slot.", "A text the day before would help!"]}
    spans = _json_spans("survey.json", {**survey, "regions": ["eu", "us"]})
    claims = [fact["claim"] for fact in file_digest("survey.json", spans, "json")["facts"]]
    assert "comments, item 1: The bus runs hourly, so I missed my slot." in claims, claims
    assert "comments, item 2: A text the day before would help!" in claims, claims
    assert "regions: eu, us." in claims, claims  # values that are no sentences stay one list


def test_a_tables_rows_are_named_by_the_first_column_when_it_names_each_row():
    months = [("2026-05", 251), ("2026-06", 236), ("2026-07", 230), ("2026-08", 211)]
    spans = [
        {"span_id": "S1", "text": "month, no_shows"},
        {"span_id": "S2", "text": "\n".join(f"month: {m}; no_shows: {n}" for m, n in months)},
    ]
    claims = [fact["claim"] for fact in file_digest("noshows.csv", spans, "csv")["facts"]]
    ranges = next(claim for claim in claims if claim.startswith("no_shows ranges"))
    assert ranges.startswith("no_shows ranges from 211 (month 2026-08) to 251 (month 2026-05);"), ranges
    repeated = [("north", 3), ("south", 5), ("north", 4)]
    spans[1] = {"span_id": "S2", "text": "\n".join(f"site: {m}; no_shows: {n}" for m, n in repeated)}
    spans[0] = {"span_id": "S1", "text": "site, no_shows"}
    claims = [fact["claim"] for fact in file_digest("leaks.csv", spans, "csv")["facts"]]
    ranges = next(claim for claim in claims if claim.startswith("no_shows ranges"))
    assert ranges.startswith("no_shows ranges from 3 (row 2) to 5 (row 3);"), ranges  # "north" names two rows
    # … unless two columns of words name each row together: a table of trades per estate ("Which trade and estate
    # had the quickest average?" was answered "1.2 (row 25)").
    jobs = [("Drainage", "Ashgrove", 2.5), ("Drainage", "Millbank", 1.2), ("Roofing", "Ashgrove", 9.0)]
    spans[0] = {"span_id": "S1", "text": "trade, estate, average_days"}
    spans[1] = {"span_id": "S2", "text": "\n".join(f"trade: {t}; estate: {e}; average_days: {d}" for t, e, d in jobs)}
    claims = [fact["claim"] for fact in file_digest("jobs.csv", spans, "csv")["facts"]]
    ranges = next(claim for claim in claims if claim.startswith("average_days ranges"))
    assert ranges.startswith(
        "average_days ranges from 1.2 (trade Drainage, estate Millbank) to 9 (trade Roofing, estate Ashgrove);"
    ), ranges


def test_a_json_value_cut_by_a_window_is_read_as_text():
    spans = spans_of('assets: [\n  {\n    "id": "P-101",\n    "site": "Elm Street"')  # no closing brackets
    digest = file_digest("assets.json", spans, "json")
    assert check_file(digest, "assets.json", spans, "json").valid and digest["facts"]


def test_a_sections_heading_in_sentence_case_is_no_fact_nor_part_of_the_summary():
    spans = spans_of(
        "Inspection memo, Mill Lane pumping station\n\nA replacement battery was ordered on 3 November.",
        "Annual water loss report 2025\nNon-revenue water fell from 23 percent in 2024 to 19 percent in 2025.",
        "- Night inspections continue until March\n- The board meets in May",  # list items are statements
    )
    digest = file_digest("notes.txt", spans)
    claims = [fact["claim"] for fact in digest["facts"]]
    assert claims[:2] == [
        "A replacement battery was ordered on 3 November.",
        "Non-revenue water fell from 23 percent in 2024 to 19 percent in 2025.",
    ]
    assert "Night inspections continue until March" in claims
    assert "Mill Lane pumping station" not in digest["summary"] and "report 2025" not in digest["summary"]


def test_a_faqs_questions_head_their_answers_and_are_no_open_questions():
    spans = spans_of(
        "Benefits: frequently asked questions",  # the page's title, a section of its own
        "When does my health insurance start?\n\nCoverage begins on your first day of employment.",
        "Can I get my gym membership reimbursed?\n\nYes. Northwind reimburses up to 40 euros a month.",
        "The pension plan may change in 2027? Nobody has said.",  # a question within the text stays open
    )
    digest = file_digest("benefits-faq.html", spans, "html")
    assert [fact["claim"] for fact in digest["facts"]][:2] == [
        "Coverage begins on your first day of employment.",
        "Northwind reimburses up to 40 euros a month.",
    ]
    assert "Benefits: frequently asked questions" not in [fact["claim"] for fact in digest["facts"]]
    assert [item["text"] for item in digest["uncertainties"]] == ["The pension plan may change in 2027?"]
    assert check_file(digest, "benefits-faq.html", spans, "html").valid


def test_a_documents_faq_entries_in_one_section_head_their_answers_too():
    """A DOCX FAQ: its questions are bold paragraphs inside one section, each above its answer."""
    faq = (
        "Billing FAQ for agents\n\nHow long do we keep invoices?\n\nInvoices are kept for ten years.\n\n"
        "Which VAT rate applies in the Netherlands?\n\nThe standard Dutch rate of 21% applies.\n\n"
        "Should we keep paper copies too?"  # the last, with no answer below it, stays open
    )
    digest = file_digest("billing_faq.docx", spans_of(faq), "docx")
    assert [fact["claim"] for fact in digest["facts"]] == [
        "Invoices are kept for ten years.",
        "The standard Dutch rate of 21% applies.",
    ]
    assert [item["text"] for item in digest["uncertainties"]] == ["Should we keep paper copies too?"]


def test_a_speakers_question_that_the_next_turn_answers_is_no_open_question():
    """Call notes listed "Was price a factor at all?" and "Would anything have changed your mind?" as open
    questions: each is answered on the next line, by the other side of the call."""
    call = (
        "Call: Kestrel Foods, lost deal review\n"
        "Dana: That's useful. Was price a factor at all?\n"
        "Lucy: A little. Ledgerly came in 15% cheaper.\n"
        "Sam: Would anything have changed your mind?\n"
        "Lucy: A fixed go-live date in the contract.\n"
        "Sam: Could we have moved faster?"  # nobody answers it: still open
    )
    spans = spans_of(call)
    digest = file_digest("call-notes.txt", spans)
    assert [item["text"] for item in digest["uncertainties"]] == ["Sam: Could we have moved faster?"], digest
    claims = [fact["claim"] for fact in digest["facts"]]
    assert "Dana: That's useful." in claims and "Lucy: A fixed go-live date in the contract." in claims, claims
    assert check_file(digest, "call-notes.txt", spans, "text").valid


def test_a_title_is_no_fact_when_a_pdf_wraps_it_or_it_closes_with_a_date_in_parentheses():
    pdf_page = (
        "Pilot report: three laptops in six\nclassrooms\nFrom March to May 2026, six classrooms tested three laptops."
    )
    text_file = "Parent survey on the laptop refresh (September 2026)\n\n612 families answered the survey."
    for filename, text in (("pilot.pdf", pdf_page), ("survey.txt", text_file)):
        digest = file_digest(filename, spans_of(text))
        claims = [fact["claim"] for fact in digest["facts"]]
        assert claims == [text.rsplit("\n", 1)[1]], filename
        assert digest["summary"] == claims[0], filename


def test_a_sentence_with_its_figures_in_words_is_a_fact():
    items = " ".join(f"Item {n} was approved in 2026." for n in range(1, MAX_FACTS))
    minutes = (
        f"Item 4: Laptop refresh\n\nThe board approved the plan by five votes to two. The meeting ended early. {items}"
    )
    claims = [fact["claim"] for fact in file_digest("minutes.docx", spans_of(minutes), "docx")["facts"]]
    assert "The board approved the plan by five votes to two." in claims
    assert "The meeting ended early." not in claims, "a figure in words ranks as a figure, above a plain statement"


def test_a_documents_table_gives_its_rows_as_facts_under_its_header():
    minutes = (
        "Actions\n\nAction | Owner | Due\nWrite the offline storage design | Sam Okafor | 20 November 2026\n"
        "Tell Northwind about the timeline | Lena Fischer | 6 November 2026"
    )
    spans = spans_of("The council agreed to build offline mode for release 4.2.", minutes)
    digest = file_digest("minutes.docx", spans, "docx")
    rows = {fact["claim"]: fact["sources"] for fact in digest["facts"] if fact["claim"].startswith("Action: ")}
    assert rows == {
        "Action: Write the offline storage design; Owner: Sam Okafor; Due: 20 November 2026": ["minutes.docx::S2"],
        "Action: Tell Northwind about the timeline; Owner: Lena Fischer; Due: 6 November 2026": ["minutes.docx::S2"],
    }
    assert check_file(digest, "minutes.docx", spans, "docx").valid


def test_a_documents_table_rows_are_facts_but_no_summary():
    limits = "Category | Limit | Notes\n" + "\n".join(
        f"{category} | {limit} euros | Receipts are required for every {category.lower()} claim"
        for category, limit in (("Hotel", 180), ("Meals", 60), ("Client dinner", 90))
    )
    spans = spans_of(
        "Travel and expense policy\n\nApproved by the CFO on 3 October 2026.",
        "Limits\n\n" + limits,
        "All flights and hotels are booked through TravelDesk.",
    )
    digest = file_digest("expense-policy.docx", spans, "docx")
    assert "Category: Hotel; Limit: 180 euros; Notes: Receipts are required for every hotel claim" in [
        fact["claim"] for fact in digest["facts"]
    ]
    assert "Category" not in digest["summary"], digest["summary"]
    assert digest["summary"].startswith("Approved by the CFO on 3 October 2026."), digest["summary"]


def test_a_transcripts_time_marks_are_no_part_of_what_was_said():
    """When in a call a thing was said ("[00:08] Sara Lindqvist: …") is no part of what was said."""
    transcript = (
        "[00:08] Sara Lindqvist: Finance needs the first quarterly invoice split by department.\n"
        "[00:10] Tom Reilly: That is fine. We will split invoices by department from the first one.\n"
        "[01:02:17] Maya Chen: Decision: Sara signs off each phase's costs."
    )
    claims = [fact["claim"] for fact in file_digest("call.txt", spans_of(transcript))["facts"]]
    assert "Sara Lindqvist: Finance needs the first quarterly invoice split by department." in claims, claims
    assert "Maya Chen: Decision: Sara signs off each phase's costs." in claims, claims
    assert not any("[" in claim for claim in claims), claims


def test_a_copyright_footer_ends_its_sections_statements_not_the_section():
    spans = spans_of(
        "Customer notice\n\nCustomers are told at least 48 hours ahead of a shutdown.\n\nCopyright 2026 Example Water"
    )
    claims = [fact["claim"] for fact in file_digest("policy.html", spans, "html")["facts"]]
    assert claims == ["Customers are told at least 48 hours ahead of a shutdown."]


def test_a_table_states_each_measures_total_per_label_and_averages_a_share():
    rows = [("Elm Street", "night", 3, "12%"), ("Mill Lane", "day", 4, "20%"), ("Elm Street", "day", 1, "8%")]
    rows += [("Mill Lane", "night", 2, "10%"), ("Harbour Road", "day", 0, "30%"), ("Harbour Road", "day", 1, "40%")]
    lines = "\n".join(f"site: {s}; crew: {c}; leaks: {n}; loss: {p}" for s, c, n, p in rows)
    spans = [{"span_id": "S1", "text": "site, crew, leaks, loss"}, {"span_id": "S2", "text": lines}]
    claims = [fact["claim"] for fact in file_digest("inspections.csv", spans, "csv")["facts"]]
    assert "leaks by site, in total: Mill Lane 6, Elm Street 4, Harbour Road 1." in claims, claims
    assert "leaks by crew, in total: day 6, night 5." in claims, claims
    assert "loss by site, on average: Harbour Road 35, Mill Lane 15, Elm Street 10." in claims, claims
    loss = next(claim for claim in claims if claim.startswith("loss ranges"))
    assert loss == "loss ranges from 8 (row 4) to 40 (row 7); the mean over 6 rows is 20."  # a share is not added
    assert not any(claim.startswith("leaks by leaks") for claim in claims), "a measure is no label"


def test_a_temperature_is_averaged_not_added():
    rows = [("KX-7", 68.4, 80), ("WT", 62.3, 35), ("KX-7", 61.2, 41), ("WT", 57.9, 12), ("KX-7", 66.8, 74)]
    lines = "\n".join(f"variant: {v}; tm_celsius: {t}; units_made: {n}" for v, t, n in rows)
    spans = [{"span_id": "S1", "text": "variant, tm_celsius, units_made"}, {"span_id": "S2", "text": lines}]
    claims = [fact["claim"] for fact in file_digest("results.csv", spans, "csv")["facts"]]
    assert "tm_celsius by variant, on average: KX-7 65.47, WT 60.1." in claims, claims
    assert "units_made by variant, in total: KX-7 195, WT 47." in claims, claims
    tm = next(claim for claim in claims if claim.startswith("tm_celsius ranges"))
    assert tm.endswith("the mean over 5 rows is 63.32."), tm


def test_a_table_with_decimal_commas_is_summed_and_told_in_its_own_notation():
    """As a spreadsheet in most of Europe exports it: ";" between fields, "12.500,00" for twelve thousand five
    hundred. Read with the English notation those were labels ("budget takes 3 values …")."""
    rows = [("Parking", "12.500,00", "11.980,50"), ("Waste", "8.000,00", "8.420,75"), ("Parking", "12.500,00", "0,5")]
    lines = "\n".join(f"department: {d}; budget: {b}; spent: {p}" for d, b, p in rows)
    spans = [{"span_id": "S1", "text": "department, budget, spent"}, {"span_id": "S2", "text": lines}]
    claims = [fact["claim"] for fact in file_digest("budget.csv", spans, "csv")["facts"]]
    assert "budget by department, in total: Parking 25.000, Waste 8000." in claims, claims
    assert (
        "spent ranges from 0,5 (row 4) to 11.980,5 (row 2); the total over 3 rows is 20.401,75, the mean 6800,58."
        in (claims)
    ), claims
    # "12,500" reads both ways: with no value that reads only with a decimal comma, the English notation holds.
    english = "\n".join(f"department: {d}; budget: {b}" for d, b in (("Parking", "12,500"), ("Waste", "8,000.5")))
    spans = [{"span_id": "S1", "text": "department, budget"}, {"span_id": "S2", "text": english}]
    claims = [fact["claim"] for fact in file_digest("budget.csv", spans, "csv")["facts"]]
    assert any(
        claim.startswith("budget ranges from 8000.5 (department Waste) to 12,500 (department") for claim in claims
    )


def test_two_tables_counted_differently_are_no_conflict_between_files():
    def table(name: str, sites: list[str]) -> dict:
        rows = "\n".join(f"site: {site}; leaks: {n}" for n, site in enumerate(sites))
        return file_digest(name, [{"span_id": "S1", "text": "site, leaks"}, {"span_id": "S2", "text": rows}], "csv")

    digests = [table("2025.csv", ["Elm", "Elm", "Mill"]), table("2026.csv", ["Elm", "Mill", "Mill", "Mill"])]
    assert any(fact["claim"].startswith("site takes 2 values") for fact in digests[0]["facts"])
    manifest = [{"filename": "2025.csv", "format": "csv"}, {"filename": "2026.csv", "format": "csv"}]
    merged = aggregate_digest(aggregate_envelope(manifest, digests))
    assert "conflict" not in {fact["kind"] for fact in merged["facts"]}, merged["facts"]
    assert "conflict" not in merged["summary"]


def test_what_could_not_be_done_is_a_fact_and_what_could_happen_is_open():
    spans = spans_of(
        "Battery complaints doubled, and 38 machines could not run the new grading software.",
        "Shipping delays could push phase 2 into the school year.",
    )
    digest = file_digest("proposal.md", spans, "markdown")
    assert [u["text"] for u in digest["uncertainties"]] == ["Shipping delays could push phase 2 into the school year."]
    unable = next(f for f in digest["facts"] if "could not run" in f["claim"])
    assert unable["reliability"] != "low" and "hedged" not in unable["reliability_note"]


def test_a_list_item_in_the_summary_does_not_run_into_the_next_sentence():
    """A protocol's list of materials ends its items without a full stop: in the summary each is closed."""
    protocol = (
        "Materials\n\n- Purified protein at 0.5 mg/mL\n- 96-well PCR plates with optically clear seals\n\n"
        "Procedure\n\n1. Mix 20 µL of protein with 5 µL of the diluted dye in each well of the plates.\n"
        "2. Seal the plates and spin them at 1000 g for one minute."
    )
    summary = file_digest("protocol.docx", spans_of(protocol), "docx")["summary"]
    assert "seals Mix" not in summary and "mg/mL Mix" not in summary, summary
    assert "Mix 20 µL of protein with 5 µL of the diluted dye in each well of the plates." in summary, summary


def test_a_csv_with_a_header_alone_is_a_table_of_no_rows():
    spans = spans_of("name, amount")
    digest = file_digest("export.csv", spans, "csv")
    assert digest["summary"] == "A table with the columns name, amount and no rows."
    assert [fact["claim"] for fact in digest["facts"]] == ["export.csv has the columns name, amount and no rows."]
    assert digest["facts"][0]["sources"] == ["export.csv::S1"]
    assert check_file(digest, "export.csv", spans, "csv").valid


def test_a_tables_total_row_is_its_total_not_a_row_and_brackets_make_a_figure_negative():
    """A budget's export: account codes, amounts with "$" and an accountant's brackets, and a last row adding up
    the rows above. Summed as a row, the total doubled every figure ("the total over 5 rows is 94,000"); the codes
    were a measure ("Line … the total 20,060"), and "($2,500)" no number at all."""
    from extraction import ExtractionLimits, extract_document

    data = (
        "Line,Category,Budget,Actual,Variance\n"
        '4010,Program staff,"$30,000","$28,500","$1,500"\n'
        '5010,Rent,"$9,000","$9,000",$0\n'
        '5020,Travel,"$3,000","$5,500","($2,500)"\n'
        '5030,Printing,"$5,000","$4,000","$1,000"\n'
        ',Total,"$47,000","$47,000",$0\n'
    ).encode()
    document = extract_document(data, "budget.csv", "text/csv", ExtractionLimits.from_settings())
    spans = [span.as_dict() for span in document.spans]
    digest = file_digest("budget.csv", spans, "csv")
    claims = [fact["claim"] for fact in digest["facts"]]
    assert (
        claims[0]
        == "budget.csv is a table of 4 rows (and a total row) and 5 columns: Line, Category, Budget, Actual, Variance."
    )
    assert (
        "Budget ranges from 3000 (Category Travel) to 30,000 (Category Program staff); the total over 4 rows is "
        "47,000, as the total row says, the mean 11,750." in claims
    ), claims
    assert any(claim.startswith("Variance ranges from -2500 (Category Travel) to 1500") for claim in claims), claims
    assert not any(claim.startswith("Line ") for claim in claims), claims
    assert check_file(digest, "budget.csv", spans, "csv").valid
    # A last row that does not add up the rows above is a row like the others.
    data = data.replace(b'"$47,000","$47,000"', b'"$47,000","$46,000"')
    document = extract_document(data, "budget.csv", "text/csv", ExtractionLimits.from_settings())
    claims = [
        fact["claim"] for fact in file_digest("budget.csv", [s.as_dict() for s in document.spans], "csv")["facts"]
    ]
    assert claims[0].startswith("budget.csv is a table of 5 rows and 5 columns"), claims


def test_a_rules_may_not_is_no_uncertainty_and_a_hedges_may_is_one():
    """A grant agreement's "Indirect costs … may not exceed 12 percent of direct costs." was listed among the
    digest's uncertainties: a rule, not a doubt."""
    spans = spans_of(
        "Indirect costs charged to the grant may not exceed 12 percent of direct costs. "
        "Funds may only be spent in Eastport. Night-time losses may be underestimated by 3 percent."
    )
    doubts = [item["text"] for item in file_digest("agreement.txt", spans)["uncertainties"]]
    assert doubts == ["Night-time losses may be underestimated by 3 percent."], doubts
    # A "may" that a limit goes with says what is allowed: a lab handbook's rules were its uncertainties.
    spans = spans_of(
        "Nobody may work alone with cryogens. Only trained staff may fill dewars. No more than 50 litres may be "
        "kept in the room. Each student may claim up to 1,500 pounds. The dewar may be empty by Friday. After 4.5 "
        "hours a driver must take a break of at least 45 minutes, which may be split in two."
    )
    doubts = [item["text"] for item in file_digest("handbook.txt", spans)["uncertainties"]]
    assert doubts == ["The dewar may be empty by Friday."], doubts


def test_a_sentence_the_document_repeats_is_told_once_in_its_summary():
    """An annual report that opens each section with the same sentence had it three times in its summary."""
    repeated = "The programme served adult learners in Eastport in 2026."
    spans = spans_of(f"{repeated} {repeated}", f"{repeated} Enrolment rose from 140 to 182 learners in a year.")
    summary = file_digest("report.txt", spans)["summary"]
    assert summary.count(repeated) == 1 and "Enrolment rose from 140 to 182" in summary, summary


def test_a_line_that_announces_what_follows_is_no_fact():
    """An e-mail's reply header ("On 20 Nov, Lena wrote:") was a digest fact: it says nothing until the quoted
    lines do."""
    spans = spans_of(
        "They want 15% off the 120,000 EUR deal and a three-year term.\n\n"
        "On 20 Nov, Lena wrote:\n> Can someone check whether Helio still needs SSO by Friday?"
    )
    digest = file_digest("call.eml", spans)
    claims = [fact["claim"] for fact in digest["facts"]]
    assert claims == ["They want 15% off the 120,000 EUR deal and a three-year term."], claims
    assert "wrote" not in digest["summary"]


def test_a_plans_dates_are_told_by_their_first_and_last_and_a_column_of_its_rows_groups_nothing():
    """A construction schedule: nothing said when the plan starts or ends (its dates were neither numbers nor a
    few labels), and "percent_complete by predecessor, on average" grouped the tasks by the task before each."""
    rows = [
        ("Clearance", "2026-09-01", "2026-09-12", "", 10),
        ("Foundations", "2026-09-14", "2026-10-23", "Clearance", 30),
        ("Frame", "2026-10-26", "2026-12-04", "Foundations", 30),
        ("Roof", "2026-12-07", "2027-01-15", "Frame", 25),
        ("Services", "2027-01-04", "2027-02-26", "Frame", 40),
    ]
    lines = "\n".join(f"task: {t}; start: {s}; finish: {f}; predecessor: {p}; days: {d}" for t, s, f, p, d in rows)
    spans = [{"span_id": "S1", "text": "task, start, finish, predecessor, days"}, {"span_id": "S2", "text": lines}]
    claims = [fact["claim"] for fact in file_digest("schedule.csv", spans, "csv")["facts"]]
    assert "finish runs from 2026-09-12 (task Clearance) to 2027-02-26 (task Services)." in claims, claims
    assert "start runs from 2026-09-01 (task Clearance) to 2027-01-04 (task Services)." in claims, claims
    assert not any(claim.startswith("days by predecessor") for claim in claims), claims


def test_a_logs_fields_filled_in_for_each_entry_are_no_summary_and_their_facts_name_the_entry():
    """A site diary's summary was "… Weather: rain all morning, 6 °C. Crew on site: 14.": fields each day's
    entry fills in, which say nothing without their day."""
    days = [
        ("Monday", 14, "Steel erection stopped for three hours because wind gusts exceeded 45 km/h at the crane."),
        ("Tuesday", 17, "A scaffold tie on the north elevation was found loose during the morning inspection."),
        ("Wednesday", 16, "The concrete pour for the stair core was postponed because the pump truck broke down."),
    ]
    spans = [
        {"span_id": f"S{n}", "text": f"## {day}\n\nWeather: dry, {n + 4} °C.\n\nCrew on site: {crew}.\n\n{event}"}
        for n, (day, crew, event) in enumerate(days, 1)
    ]
    digest = file_digest("site_diary.md", spans, "markdown")
    summary = digest["summary"]
    assert "Crew on site" not in summary and "Weather" not in summary, summary
    # As facts, each says its entry: three "Crew on site: …" told no day.
    claims = [fact["claim"] for fact in digest["facts"]]
    assert "Tuesday: Crew on site: 17." in claims and "Monday: Weather: dry, 5 °C." in claims, claims
    # A label a document repeats with one value is a phrase it repeats, told as it is.
    repeated = [{"span_id": f"S{n}", "text": f"## Part {n}\n\nOne of: gnu, posix, v7."} for n in (1, 2)]
    assert [fact["claim"] for fact in file_digest("tar.md", repeated, "markdown")["facts"]] == [
        "One of: gnu, posix, v7."
    ]
    assert "wind gusts exceeded 45 km/h" in summary, summary
    # One such line is a statement of its own: "Total due: $4,275.00" may sum up an invoice.
    invoice = [{"span_id": "S1", "text": "Invoice 118 for printing.\n\nTotal due: $4,275.00"}]
    assert "Total due: $4,275.00" in file_digest("invoice.txt", invoice, "text")["summary"]


def test_half_a_sentence_a_page_ends_with_is_no_fact():
    """An offer letter's page ended "… governed by the company handbook and the applicable collective", and that
    half sentence was a fact beside the whole one."""
    spans = [
        {
            "span_id": "S1",
            "text": "Your salary is EUR 86,000 a year.\nThis section is governed by the applicable collective",
        },
        {"span_id": "S2", "text": "agreement. The probation period is 90 days."},
    ]
    claims = [fact["claim"] for fact in file_digest("offer.pdf", spans, "pdf")["facts"]]
    assert not any(claim.endswith("collective") for claim in claims), claims
    assert "Your salary is EUR 86,000 a year." in claims and "The probation period is 90 days." in claims, claims


def test_a_papers_reference_list_is_no_fact_over_its_pages():
    """A paper's references were facts ("terminology and recommended performance measures.", the half of an
    entry the next page held): a list that cites other works states nothing of the paper's own."""
    spans = [
        {
            "span_id": "S1",
            "text": "Night flow fell by 17.4 percent in the treated districts.\nReferences\n"
            "[1] Lambert, A. and Hirner, W. (2000). Losses from\nwater supply systems: standard",
        },
        {
            "span_id": "S2",
            "text": "terminology and recommended performance\nmeasures. IWA Blue Pages.\n"
            "[2] Thornton, J. (2005). Progress in practical prediction of pressure and leakage.",
        },
    ]
    claims = [fact["claim"] for fact in file_digest("paper.pdf", spans, "pdf")["facts"]]
    assert claims == ["Night flow fell by 17.4 percent in the treated districts."], claims
    # A section of that name that cites no works is the document's own; one after the list ends it.
    notes = [
        {"span_id": "S1", "text": "## References\n\nThe team wiki lists every supplier we have used."},
        {"span_id": "S2", "text": "## Bibliography\n\nSmith, J. (2019). Pumps and valves in practice."},
        {"span_id": "S3", "text": "## Appendix\n\nThe valves were bought from two suppliers."},
    ]
    claims = [fact["claim"] for fact in file_digest("notes.md", notes, "markdown")["facts"]]
    assert claims == ["The team wiki lists every supplier we have used.", "The valves were bought from two suppliers."]


def test_a_log_of_dated_entries_says_each_facts_entry_first():
    """A changelog's items ("Cursor pagination on GET /invoices.") and minutes' decisions said no release and no
    meeting. In a document of two dated headings or more, a fact without a date of its own says its entry first,
    also when the dated heading stands alone in a span above its subsections."""
    changelog = [
        {"span_id": "S1", "text": "# Changelog\n\nAll notable changes to the API are documented here."},
        {"span_id": "S2", "text": "## [2.4.0] - 2026-11-10"},
        {"span_id": "S3", "text": "### Added\n\n- Cursor pagination on GET /invoices."},
        {"span_id": "S4", "text": "## [2.3.0] - 2026-09-30"},
        {"span_id": "S5", "text": "### Changed\n\n- The rate limit was raised from 300 to 600 requests a minute."},
        {"span_id": "S6", "text": "## Contributors\n\nThe team thanks everyone who reported a bug."},
    ]
    claims = [fact["claim"] for fact in file_digest("CHANGELOG.md", changelog, "markdown")["facts"]]
    assert "[2.4.0] - 2026-11-10 › Added: Cursor pagination on GET /invoices." in claims, claims
    assert "[2.3.0] - 2026-09-30 › Changed: The rate limit was raised from 300 to 600 requests a minute." in claims
    assert "The team thanks everyone who reported a bug." in claims, "a section of the release's level ends it"
    assert "All notable changes to the API are documented here." in claims
    one_meeting = [{"span_id": "S1", "text": "Meeting of 12 October 2026\n\nWe decided to move jobs to RabbitMQ."}]
    assert file_digest("minutes.docx", one_meeting, "docx")["facts"][0]["claim"] == (
        "We decided to move jobs to RabbitMQ."
    ), "one dated heading is a document's date, not a log's entries"


def test_a_json_files_summary_leads_with_the_first_value_that_states_something():
    """An API description's summary was its shape alone ("openapi: 3.0.3; info: a record with the fields title,
    version, description; …"); its description says what it is about."""
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Invoices API", "description": "Create, list and export invoices for a customer account."},
        "paths": {"/invoices": {"get": {"summary": "List invoices"}}},
    }
    summary = file_digest("api.json", _json_spans("api.json", spec), "json")["summary"]
    assert summary.startswith("Create, list and export invoices for a customer account. openapi: 3.0.3;"), summary


def test_a_json_files_summary_says_the_value_it_leads_with_once():
    """A feature-flag file's policy led its summary and was said again in its shape, closed by two full stops."""
    flags = {
        "flags": [
            {"key": "new_checkout_flow", "rollout_percent": 25},
            {"key": "email_digest_v2", "rollout_percent": 0},
        ],
        "policy": "A flag at 100% for more than 60 days must be removed from the code.",
    }
    summary = file_digest("flags.json", _json_spans("flags.json", flags), "json")["summary"]
    assert summary == (
        "A flag at 100% for more than 60 days must be removed from the code. "
        "flags: 2 records with the fields key, rollout_percent."
    ), summary


def test_code_is_no_fact():
    """A notebook's code cell read as prose: "import pandas as pd df = pd.read_csv(…)" was a digest fact."""
    spans = [
        {
            "span_id": "S1",
            "text": "# Churn analysis\n\nWe look at why customers cancelled in Q3 2026.\n\n"
            "```\nimport pandas as pd\ndf = pd.read_csv('cancellations.csv')\n```\n\nchurn rate: 4.2%",
        }
    ]
    digest = file_digest("churn.ipynb", spans, "markdown")
    claims = [fact["claim"] for fact in digest["facts"]]
    assert claims == ["We look at why customers cancelled in Q3 2026.", "churn rate: 4.2%"], claims
    assert "import" not in digest["summary"]


def test_a_tables_row_and_another_files_sentence_with_other_clock_times_are_a_conflict():
    """A clinic's FAQ kept the old Saturday hours in its table while the staff handbook gave the new ones, and
    the aggregate showed no conflict: the row's subject ("Site: Elmfield; …") is no sentence's. A row's column
    of clock times is compared with the facts of other files that name its thing and its column."""
    faq = file_digest(
        "faq.md",
        spans_of(
            "## When are you open?\n\n| Site | Monday–Friday | Saturday |\n|---|---|---|\n"
            "| Quayside | 8:00am – 7:00pm | 8:30am – 4:00pm |\n| Elmfield | 8:30am – 6:30pm | 9:00am – 12:00pm |"
        ),
        "markdown",
    )
    handbook = file_digest(
        "handbook.txt",
        spans_of(
            "From Saturday 7 November the Elmfield Saturday clinic runs from 08:30 to 13:00.",
            "Quayside is open on Saturdays from 08:30 to 16:00.",  # the row's times, written otherwise
            "The Elmfield Saturday session from 9:00 is always fully booked.",  # some of the row's times only
        ),
    )
    manifest = [{"filename": "faq.md", "format": "markdown"}, {"filename": "handbook.txt", "format": "text"}]
    digest = aggregate_digest(aggregate_envelope(manifest, [faq, handbook]))
    conflicts = [fact for fact in digest["facts"] if fact["kind"] == "conflict"]
    assert len(conflicts) == 1, conflicts
    assert "08:30 to 13:00" in conflicts[0]["claim"] and "Saturday: 9:00am – 12:00pm" in conflicts[0]["claim"]
    assert sorted(conflicts[0]["sources"]) == ["faq.md::S1", "handbook.txt::S1"]
