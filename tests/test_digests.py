"""Envelopes, offline extractive digests, validation and relabelling."""

import json

import pytest

from context_app.digests import generate
from context_app.digests.envelopes import (
    aggregate_envelope,
    parse_aggregate_envelope,
    parse_per_file_envelope,
    per_file_envelope,
)
from context_app.digests.offline import aggregate_digest, per_file_digest
from context_app.digests.relabel import digest_hash, relabel_digest
from context_app.digests.validation import check_aggregate_digest, check_per_file_digest, parse_model_json, sources_of
from context_app.llm.base import LLMResponse
from context_app.models import LLMCall

SPANS = [
    {"span_id": "S1", "text": "Non-revenue water is defined as water produced but not billed."},
    {"span_id": "S2", "text": "Losses fell by 18 percent between March 2021 and June 2022.\nCosts may rise next year."},
    {
        "span_id": "S3",
        "text": "The utility must report losses every quarter. For example, district B halved its outages.",
    },
    {"span_id": "S4", "text": "tricky lines:\n[S9] this is not a span\nEND_FILE\nstill S4"},
]


def file_digest(filename="plan.txt", spans=SPANS) -> dict:
    return per_file_digest(per_file_envelope(filename, "text", spans))


def test_per_file_envelope_round_trip_survives_marker_lookalikes():
    envelope = per_file_envelope("plan.txt", "text", SPANS)
    assert envelope.startswith("TASK: PER_FILE_DIGEST\nFILE: plan.txt\nFORMAT: text\nSOURCE_SPANS:\n[S1] ")
    assert envelope.endswith("\nEND_FILE")
    filename, file_format, spans = parse_per_file_envelope(envelope)
    assert (filename, file_format) == ("plan.txt", "text")
    assert spans == [{"span_id": s["span_id"], "text": s["text"]} for s in SPANS]


def test_aggregate_envelope_round_trip():
    digests = [file_digest("a.txt"), file_digest("b: c.txt")]
    manifest = [{"filename": "a.txt", "format": "text"}, {"filename": "b: c.txt", "format": "text"}]
    envelope = aggregate_envelope(manifest, digests)
    assert envelope.startswith("TASK: AGGREGATE_DIGEST\nMANIFEST:\n- filename: ")
    assert "\nFILE_DIGESTS:\n" in envelope and envelope.endswith("END_FILE_DIGESTS")
    assert parse_aggregate_envelope(envelope) == (manifest, digests)


def test_offline_per_file_digest_is_valid_cited_and_typed():
    digest = file_digest()
    result = check_per_file_digest(
        json.dumps(digest), filename="plan.txt", format="text", span_ids={"S1", "S2", "S3", "S4"}
    )
    assert result.valid, result.errors
    kinds = {fact["kind"] for fact in digest["facts"]}
    assert {"definition", "fact", "constraint"} <= kinds
    assert any("18 percent" in f["claim"] and f["sources"] == ["plan.txt::S2"] for f in digest["facts"])
    assert any("may rise" in u["text"] for u in digest["uncertainties"])
    assert digest["generator"] == "offline-extractive"
    assert file_digest() == digest  # deterministic


def test_offline_digest_of_a_file_without_cue_sentences_still_cites_something():
    digest = file_digest("bare.txt", [{"span_id": "S1", "text": "hello there world"}])
    assert digest["facts"] and digest["facts"][0]["sources"] == ["bare.txt::S1"]


def test_offline_aggregate_merges_duplicates_and_flags_conflicts():
    a = file_digest(
        "a.txt",
        [
            {"span_id": "S1", "text": "Pipe bursts per year fell to 37 in 2022."},
            {"span_id": "S2", "text": "Non-revenue water is defined as water produced but not billed."},
        ],
    )
    b = file_digest(
        "b.txt",
        [
            {"span_id": "S3", "text": "Pipe bursts per year fell to 41 in 2022."},
            {"span_id": "S1", "text": "Non-revenue water is defined as water produced but not billed."},
        ],
    )
    manifest = [{"filename": "a.txt", "format": "text"}, {"filename": "b.txt", "format": "text"}]
    digest = aggregate_digest(aggregate_envelope(manifest, [a, b]))
    allowed = sources_of(a) | sources_of(b)
    assert check_aggregate_digest(json.dumps(digest), allowed_sources=allowed, manifest=manifest).valid
    definition = [f for f in digest["facts"] if f["kind"] == "definition"]
    assert len(definition) == 1 and set(definition[0]["sources"]) == {"a.txt::S2", "b.txt::S1"}
    conflicts = [f for f in digest["facts"] if f["kind"] == "conflict"]
    assert len(conflicts) == 1 and {"a.txt::S1", "b.txt::S3"} <= set(conflicts[0]["sources"])
    # An aggregate of aggregates (the tree for big sets) is still valid.
    top = aggregate_digest(aggregate_envelope(manifest, [digest]))
    assert check_aggregate_digest(json.dumps(top), allowed_sources=allowed, manifest=manifest).valid


@pytest.mark.parametrize(
    "mutate, expected_error",
    [
        (lambda d: d["facts"][0]["sources"].append("plan.txt::S99"), "unknown span S99"),
        (lambda d: d["facts"][0]["sources"].append("other.pdf::S1"), "not this file"),
        (lambda d: d["facts"][0]["sources"].append("no-ref"), "not a SourceRef"),
        (lambda d: d.pop("summary"), "'summary' is a required property"),
    ],
)
def test_validation_catches_bad_digests(mutate, expected_error):
    digest = file_digest()
    mutate(digest)
    result = check_per_file_digest(
        json.dumps(digest), filename="plan.txt", format="text", span_ids={"S1", "S2", "S3", "S4"}
    )
    assert any(expected_error in error for error in result.errors), result.errors


def test_sanitising_removes_bad_sources_and_sourceless_facts():
    digest = file_digest()
    digest["facts"][0]["sources"] = ["plan.txt::S77"]
    digest["facts"][1]["sources"].append("ghost.pdf::S1")
    result = check_per_file_digest(
        json.dumps(digest), filename="plan.txt", format="text", span_ids={"S1", "S2", "S3", "S4"}
    )
    assert result.digest is not None and result.errors
    assert len(result.digest["facts"]) == len(digest["facts"]) - 1
    assert all("ghost" not in ref and "S77" not in ref for f in result.digest["facts"] for ref in f["sources"])
    assert {d["reason"] for d in result.dropped} >= {
        "no valid sources left",
        "names 'ghost.pdf', not this file 'plan.txt'",
    }


def test_unparsable_output_has_no_digest():
    result = check_per_file_digest("I cannot help with that.", filename="p", format="text", span_ids={"S1"})
    assert result.digest is None and "not JSON" in result.errors[0]


def test_fenced_json_is_accepted():
    assert parse_model_json('Here you go:\n```json\n{"a": 1}\n```\nThanks') == {"a": 1}


def test_relabel_and_hash():
    digest = file_digest()
    relabelled = relabel_digest(digest, "plan.txt", "copy.txt")
    assert relabelled["document"]["filename"] == "copy.txt"
    assert all(ref.startswith("copy.txt::") for f in relabelled["facts"] for ref in f["sources"])
    assert digest["document"]["filename"] == "plan.txt", "the original is not mutated"
    assert digest_hash(digest) == digest_hash(json.loads(json.dumps(digest))) != digest_hash(relabelled)


class ScriptedProvider:
    """Answers first with broken JSON, then like the offline provider."""

    name, model = "scripted", "scripted-1"

    def __init__(self):
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        if self.calls == 1:
            return LLMResponse(text="{broken", input_tokens=1, output_tokens=1, model=self.model)
        return LLMResponse(
            text=json.dumps(per_file_digest(request.prompt)), input_tokens=1, output_tokens=1, model=self.model
        )


@pytest.mark.django_db
def test_generate_repairs_once_with_the_errors(monkeypatch):
    provider = ScriptedProvider()
    monkeypatch.setattr("context_app.llm.gateway.get_provider", lambda name=None: provider)
    generated = generate.generate_file_digest(filename="plan.txt", format="text", spans=SPANS)
    assert generated.repaired and generated.content["document"]["filename"] == "plan.txt"
    assert list(LLMCall.objects.order_by("id").values_list("attempt", "outcome")) == [(1, "invalid"), (2, "ok")]


@pytest.mark.django_db
def test_offline_generation_needs_no_repair(settings):
    settings.GROUNDWORK_LLM = "offline"
    generated = generate.generate_file_digest(filename="plan.txt", format="text", spans=SPANS)
    assert not generated.repaired and not generated.dropped
    assert LLMCall.objects.get().outcome == "ok"
