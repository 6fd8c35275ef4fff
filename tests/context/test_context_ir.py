"""Context IR (SPEC §6, seed 004): anchors, source ids, tokens, the degrade ladder, routing, adapters.

Plain unit tests: no database, no network.
"""

import base64
import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from llm_platform.ir import (
    Anchor,
    ProviderCapabilities,
    anchor_to_sourceref,
    build_envelope,
    capabilities_for,
    chatlog_source,
    envelope_cost,
    estimate_tokens,
    extractive_summary,
    fit_to_budget,
    format_anchor,
    image_source,
    note_source,
    parse_anchor,
    pdf_fallback,
    provider_token_counter,
    render_text,
    route_image,
    route_pdf,
    route_webpage,
    source_from_context_file,
    source_id,
    sourceref_to_anchor,
    sources_from_spans,
    stage_costs,
    to_anthropic,
    to_gemini,
    to_openai,
    to_provider,
)
from llm_platform.ir.budget import SUMMARY_PREFIX
from llm_platform.ir.render import NO_CONTENT_NOTE, OMITTED_MARKER, TRUNCATED_MARKER, render_task

ROOT = Path(__file__).resolve().parents[2]
SID = "src:1a2b3c4d"
PDF_BYTES = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32

# --- anchors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "src:9f3a7b2c",
        "src:9f3a7b2c#p=12",
        "src:1ab2cd3e#sec=H2.3",
        "src:1ab2cd3e#sec=Intro%20>%20Methods",
        "src:1ab2cd3e#s=S4",
        "src:7890abcd#msg=5",
        "src:7890abcd#msg=0",
        "src:3456789a#r=100,200,300,400",
        "src:9f3a7b2c#p=3&s=S12",
        "src:9f3a7b2c#p=3&sec=H1.2&s=S7&msg=2&r=0,0,10,10",
    ],
)
def test_anchor_round_trip_is_exact(text):
    anchor = parse_anchor(text)
    assert format_anchor(anchor) == text
    assert str(anchor) == text
    assert parse_anchor(format_anchor(anchor)) == anchor


def test_anchor_fields_are_parsed():
    anchor = parse_anchor("src:9f3a7b2c#p=3&sec=Intro%20>%20Methods&s=S12")
    assert anchor == Anchor("src:9f3a7b2c", page=3, section="Intro > Methods", span="S12")
    assert parse_anchor("src:3456789a#r=1,2,3,4").region == (1, 2, 3, 4)
    assert parse_anchor("src:7890abcd#msg=5").message == 5
    assert parse_anchor("src:7890abcd").is_whole_source


def test_heading_path_with_special_characters_round_trips():
    anchor = Anchor(SID, section="Results & Discussion #2 — ü")
    text = format_anchor(anchor)
    assert text.count("#") == 1 and "&" not in text and " " not in text
    assert parse_anchor(text) == anchor


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "8 lowercase hex"),
        ("src:123", "8 lowercase hex"),
        ("src:9F3A7B2C", "8 lowercase hex"),
        ("9f3a7b2c#p=1", "8 lowercase hex"),
        ("src:9f3a7b2c#", "empty location"),
        ("src:9f3a7b2c#p=0", "page must be a positive integer"),
        ("src:9f3a7b2c#p=x", "page must be a positive integer"),
        ("src:9f3a7b2c#p=01", "page must be a positive integer"),
        ("src:9f3a7b2c#s=4", "S<n>"),
        ("src:9f3a7b2c#s=S0", "S<n>"),
        ("src:9f3a7b2c#q=1", "unknown location"),
        ("src:9f3a7b2c#p", "key=value"),
        ("src:9f3a7b2c#p=1&p=2", "given twice"),
        ("src:9f3a7b2c#s=S1&p=2", "in the order"),
        ("src:9f3a7b2c#msg=-1", "non-negative"),
        ("src:9f3a7b2c#r=1,2,3", "x,y,w,h"),
        ("src:9f3a7b2c#sec=Intro > Methods", "percent-encoded"),
        ("src:9f3a7b2c#sec=%41", "canonically encoded"),
    ],
)
def test_invalid_anchors_raise_clear_value_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_anchor(text)


def test_anchor_constructor_validates():
    with pytest.raises(ValueError, match="positive integer"):
        Anchor(SID, page=0)
    with pytest.raises(ValueError, match="8 lowercase hex"):
        Anchor("src:nothex00")


def test_sourceref_to_anchor_and_back():
    assert sourceref_to_anchor("report.pdf::S4", SID) == "src:1a2b3c4d#s=S4"
    assert anchor_to_sourceref("src:1a2b3c4d#s=S4", "report.pdf") == "report.pdf::S4"
    assert anchor_to_sourceref("src:1a2b3c4d#p=2&s=S4", {SID: "report.pdf"}) == "report.pdf::S4"
    # Filenames may contain single colons and dots; the last "::" separates the span.
    assert sourceref_to_anchor("notes: v2.md::S10", SID) == "src:1a2b3c4d#s=S10"


@pytest.mark.parametrize("ref", ["report.pdf", "report.pdf::", "::S4", "report.pdf::S0", "report.pdf::4", "a::b::S1"])
def test_bad_sourcerefs_raise(ref):
    with pytest.raises(ValueError, match="SourceRef"):
        sourceref_to_anchor(ref, SID)


def test_anchor_to_sourceref_needs_a_span_and_a_known_file():
    with pytest.raises(ValueError, match="names no span"):
        anchor_to_sourceref("src:1a2b3c4d#p=2", "report.pdf")
    with pytest.raises(ValueError, match="no filename known"):
        anchor_to_sourceref("src:1a2b3c4d#s=S1", {"src:00000000": "x.pdf"})


# --- source ids and sources ----------------------------------------------------


def test_source_id_is_sha256_prefix_and_deterministic():
    assert source_id(b"hello") == "src:" + hashlib.sha256(b"hello").hexdigest()[:8] == "src:2cf24dba"
    assert source_id("hello") == source_id(b"hello")
    assert source_id("hello") != source_id("hello.")
    assert source_id("") == "src:e3b0c442"


def test_source_id_is_stable_across_processes():
    code = "from llm_platform.ir import source_id; print(source_id('Quarterly report — ü'))"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert runs == {source_id("Quarterly report — ü")}


def _spans(count, *, pages=True, sentences=4, repeat=3):
    spans = []
    for i in range(1, count + 1):
        body = " ".join(f"Sentence {j} about topic {i} explains a measurable detail." for j in range(1, sentences + 1))
        text = "\n\n".join([body] * repeat)
        spans.append(
            {
                "span_id": f"S{i}",
                "text": text,
                "locator": f"p. {i}" if pages else "Intro > Part",
                "start": 0,
                "end": len(text),
            }
        )
    return spans


def test_sources_from_spans_builds_anchors_and_content_id():
    spans = _spans(3)
    source = sources_from_spans("report.pdf", "pdf", spans, raw=PDF_BYTES)
    assert source.id == source_id("\n\n".join(s["text"] for s in spans))
    assert source.kind == "pdf" and source.title == "report.pdf" and source.mime == "application/pdf"
    assert [c.anchor for c in source.chunks] == [f"{source.id}#p={i}&s=S{i}" for i in (1, 2, 3)]
    assert source.pages == (1, 2, 3)
    assert base64.b64decode(source.blob.data) == PDF_BYTES and source.blob.byte_size == len(PDF_BYTES)
    # The id is about content: another name, same text -> same id; other text -> other id.
    assert sources_from_spans("renamed.pdf", "pdf", spans).id == source.id
    assert sources_from_spans("report.pdf", "pdf", spans[:2]).id != source.id


def test_heading_locators_give_span_only_anchors():
    source = sources_from_spans("notes.md", "markdown", _spans(2, pages=False))
    assert [c.anchor for c in source.chunks] == [f"{source.id}#s=S1", f"{source.id}#s=S2"]
    assert [c.locator for c in source.chunks] == ["Intro > Part", "Intro > Part"]
    assert source.pages == ()


def test_chatlog_messages_are_anchored_by_index():
    source = chatlog_source("chat", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    assert [c.anchor for c in source.chunks] == [f"{source.id}#msg=0", f"{source.id}#msg=1"]
    assert source.chunks[1].text == "assistant: Hello"


# --- tokens ------------------------------------------------------------------

PROSE = (
    "The quarterly report shows that revenue increased by fifteen percent compared with the previous "
    "quarter, driven mostly by new enterprise customers in Europe and a steady renewal rate. "
)


def test_estimate_tokens_is_calibrated_for_english_prose():
    text = (PROSE * 60)[:10_000]
    assert len(text) == 10_000
    estimate = estimate_tokens(text)
    # Real tokenizers give ~4 chars/token on such prose; the estimate errs ~10% high.
    assert 10_000 / 4 <= estimate <= 10_000 / 3.3
    assert estimate_tokens("") == 0
    assert 1 <= estimate_tokens("a") <= 2  # one word: 1.3 rounded up


def test_estimate_tokens_counts_dense_text_higher():
    csv = "1,2,3,4,5,6,7,8,9,0\n" * 50
    assert estimate_tokens(csv) > len(csv) / 3.6  # numbers and commas are a token each
    cjk = "数据分析报告" * 100
    assert estimate_tokens(cjk) >= 0.8 * len(cjk)


def test_estimate_tokens_is_sub_additive_over_separators():
    a, b = PROSE * 3, "Short tail, 42 items."
    assert estimate_tokens(a + "\n\n" + b) <= estimate_tokens(a) + estimate_tokens(b) + 1


class _CountingProvider:
    def __init__(self, result):
        self.result = result
        self.calls = []

    def count_tokens(self, system, prompt):
        self.calls.append((system, prompt))
        return self.result(prompt) if callable(self.result) else self.result


def test_provider_token_counter_uses_exact_counts_minus_request_overhead():
    provider = _CountingProvider(lambda prompt: 10 + len(prompt))  # 10 = system + framing
    counter = provider_token_counter(provider, system="sys")
    assert counter("hello") == 5
    assert counter("hello") == 5
    assert [p for _s, p in provider.calls].count("hello") == 1  # memoised
    assert all(s == "sys" for s, _p in provider.calls)


@pytest.mark.parametrize("result", [None, "12", True, -3])
def test_provider_token_counter_falls_back_to_estimate(result):
    counter = provider_token_counter(_CountingProvider(result))
    assert counter(PROSE) == estimate_tokens(PROSE)


def test_provider_without_count_tokens_or_failing_uses_estimate():
    assert provider_token_counter(object()) is estimate_tokens

    class Failing:
        def count_tokens(self, system, prompt):
            raise RuntimeError("network down")

    assert provider_token_counter(Failing())(PROSE) == estimate_tokens(PROSE)


# --- envelopes and the degrade ladder ------------------------------------------

TASK = "Summarise what the sources say about revenue, citing anchors."


def _envelope(caps="D1"):
    report = sources_from_spans("report.pdf", "pdf", _spans(6), raw=PDF_BYTES)
    notes = sources_from_spans("notes.md", "markdown", _spans(3, pages=False, sentences=5, repeat=2))
    note = note_source("Reminder", "Check the European numbers. They were revised twice.")
    return build_envelope(TASK, [report, notes, note], capabilities=ProviderCapabilities.of_class(caps))


def _index_text(envelope):
    return render_text(envelope).split("=== CONTENT ===")[0]


def _assert_invariants(original, fitted):
    text = render_text(fitted)
    # The index is never cut: same entries, rendered line for line; only the
    # "attached" tag follows the attachments still included.
    assert fitted.index == original.index
    assert _index_text(fitted).replace(" | attached", "") == _index_text(original).replace(" | attached", "")
    attached = {a.source_id for a in fitted.attachments if a.included}
    for number, entry in enumerate(fitted.index.entries, start=1):
        line = next(ln for ln in text.splitlines() if ln.startswith(f"[{number}] {entry.source_id} |"))
        assert line.endswith(" | attached") == (entry.source_id in attached)
    # The task is never cut: verbatim, last.
    assert text.endswith("=== TASK ===\n" + TASK)
    # Every anchor left refers to a source in the index.
    ids = fitted.index.source_ids
    for chunk in fitted.chunks:
        assert parse_anchor(chunk.anchor).source_id in ids
        assert chunk.source_id in ids
    for attachment in fitted.attachments:
        assert parse_anchor(attachment.anchor).source_id in ids
    # The budget is kept unless the index and task alone exceed it, and the
    # additive cost is an upper bound of estimating the whole rendered text.
    budget = fitted.budget
    assert budget.used == envelope_cost(fitted)
    assert estimate_tokens(text) + sum(a.tokens for a in fitted.attachments if a.included) <= budget.used
    if not budget.over_limit:
        assert budget.used <= budget.limit
    assert all(1 <= cut.stage <= budget.stage for cut in budget.cuts)
    assert [c.stage for c in budget.cuts] == sorted(c.stage for c in budget.cuts)


def test_envelope_ranks_chunks_and_indexes_every_source():
    envelope = _envelope()
    assert [e.kind for e in envelope.index.entries] == ["pdf", "markdown", "note"]
    assert envelope.index.entries[0].pages == (1, 2, 3, 4, 5, 6)
    assert envelope.index.entries[0].spans == ("S1", "S2", "S3", "S4", "S5", "S6")
    assert len(envelope.chunks) == 10
    # Scores reorder the ranking; ties keep source then span order.
    scored = build_envelope(TASK, envelope.sources, scores={envelope.chunks[-1].anchor: 1.0})
    assert scored.chunks[0].anchor == envelope.chunks[-1].anchor
    assert scored.chunks[1].anchor == envelope.chunks[0].anchor


def test_the_same_content_twice_is_one_source_naming_both_titles():
    """Regression: the same section in two files gave two sources with one id, and the envelope refused them."""
    boilerplate = "This report is confidential to the utility."
    first, other, again = (
        note_source("[1] a.md, Confidentiality", boilerplate),
        note_source("[2] pumps.md, Intro", "The pumps used 4 MWh."),
        note_source("[3] b.md, Confidentiality", boilerplate),
    )
    envelope = build_envelope(TASK, [first, other, again, first])
    assert [s.id for s in envelope.sources] == [first.id, other.id]
    assert envelope.sources[0].title == "[1] a.md, Confidentiality; [3] b.md, Confidentiality"
    assert len(envelope.chunks) == 2 and len(envelope.index.entries) == 2
    assert render_text(envelope).count(boilerplate) == 1


def test_two_different_sources_with_one_id_are_refused():
    first = note_source("a", "one text")
    forged = replace(note_source("b", "another text"), id=first.id)
    with pytest.raises(ValueError, match=f"two different sources share the id {first.id}"):
        build_envelope(TASK, [first, forged])


def test_render_format_has_index_chunks_and_task():
    envelope = _envelope()
    text = render_text(envelope)
    report_id = envelope.sources[0].id
    assert text.startswith(
        "=== CONTEXT INDEX ===\n[1] " + report_id + ' | pdf | "report.pdf" | spans S1-S6 | pages 1-6 | attached\n'
    )
    assert f"[CHUNK]\nanchor: {report_id}#p=1&s=S1\nsource_type: pdf\ntitle: report.pdf\nlocator: p. 1\n---\n" in text
    assert text.index("=== CONTEXT INDEX ===") < text.index("=== CONTENT ===") < text.index("=== TASK ===")
    assert "cite using the anchor format" in text


def test_stage_0_when_everything_fits():
    envelope = _envelope()
    costs = stage_costs(envelope)
    fitted = fit_to_budget(envelope, costs[0])
    assert fitted.budget.stage == 0 and fitted.budget.cuts == ()
    assert fitted.chunks == envelope.chunks and fitted.attachments == envelope.attachments
    _assert_invariants(envelope, fitted)


def test_stage_costs_strictly_decrease():
    costs = stage_costs(_envelope())
    assert costs[0] > costs[1] > costs[2] > costs[3] > costs[4] > costs[5] > 0


@pytest.mark.parametrize("stage", [1, 2, 3, 4, 5])
def test_each_stage_boundary(stage):
    """A limit of exactly the previous stage's cost stays there; one token less reaches `stage`."""
    envelope = _envelope()
    costs = stage_costs(envelope)
    just_below = fit_to_budget(envelope, costs[stage - 1] - 1)
    assert just_below.budget.stage == stage
    at_previous = fit_to_budget(envelope, costs[stage - 1])
    assert at_previous.budget.stage == stage - 1
    at_floor = fit_to_budget(envelope, costs[stage])
    assert at_floor.budget.stage == stage
    assert at_floor.budget.used <= costs[stage]
    for fitted in (just_below, at_previous, at_floor):
        _assert_invariants(envelope, fitted)


def test_stage_1_keeps_headers_of_low_ranked_chunks():
    envelope = _envelope()
    fitted = fit_to_budget(envelope, stage_costs(envelope)[1])
    omitted = [c for c in fitted.chunks if c.omitted]
    assert len(omitted) == 5 and [c.anchor for c in omitted] == [c.anchor for c in envelope.chunks[5:]]
    assert all(c.what == "chunk_removed" and c.stage == 1 for c in fitted.budget.cuts)
    assert {c.anchor for c in fitted.budget.cuts} == {c.anchor for c in omitted}
    text = render_text(fitted)
    for chunk in omitted:
        assert f"[CHUNK]\nanchor: {chunk.anchor}\n---\n{OMITTED_MARKER}\n[/CHUNK]" in text
    assert fitted.chunks[:5] == envelope.chunks[:5]


def test_stage_2_extractive_summaries_are_marked():
    envelope = _envelope()
    fitted = fit_to_budget(envelope, stage_costs(envelope)[2])
    summarized = [c for c in fitted.chunks if c.summarized]
    assert len(summarized) == 4  # ranks 2-5; the best chunk stays whole
    assert fitted.chunks[0] == envelope.chunks[0]
    for chunk in summarized:
        assert chunk.text.startswith(SUMMARY_PREFIX + " ")
        assert chunk.text.endswith(f"[see {chunk.anchor} for full content]")
    assert sum(1 for c in fitted.budget.cuts if c.what == "summarized" and c.stage == 2) == 4
    assert all(c.tokens_saved > 0 for c in fitted.budget.cuts)


def test_extractive_summary_takes_first_three_sentences_deterministically():
    text = "One is first. Two is second! Three is third? Four is dropped.\n\nSecond paragraph."
    summary = extractive_summary(text, "src:1a2b3c4d#s=S1")
    assert (
        summary
        == "[extractive summary] One is first. Two is second! Three is third? [see src:1a2b3c4d#s=S1 for full content]"
    )
    assert extractive_summary(text, "src:1a2b3c4d#s=S1") == summary
    long_run_on = "word " * 400
    capped = extractive_summary(long_run_on, SID)
    assert len(capped) < 700 and "word …" in capped


def test_stage_3_keeps_top_chunk_and_drops_attachments():
    envelope = _envelope()
    assert [a.included for a in envelope.attachments] == [True]
    fitted = fit_to_budget(envelope, stage_costs(envelope)[3])
    assert fitted.chunks == (envelope.chunks[0],)
    assert [a.included for a in fitted.attachments] == [False]
    removed = [c for c in fitted.budget.cuts if c.stage == 3]
    assert any(c.what == "attachment_removed" and c.anchor == envelope.attachments[0].anchor for c in removed)
    assert {c.anchor for c in removed if c.what == "chunk_removed"} == {c.anchor for c in envelope.chunks[1:]}


def test_stage_4_truncates_at_boundaries_never_mid_word():
    envelope = _envelope()
    costs = stage_costs(envelope)
    original = envelope.chunks[0].text
    seen = set()
    for limit in range(costs[4], costs[3]):
        fitted = fit_to_budget(envelope, limit)
        assert fitted.budget.stage == 4
        (chunk,) = fitted.chunks
        assert chunk.truncated and original.startswith(chunk.text) and chunk.text != original
        next_char = original[len(chunk.text)]
        assert next_char.isspace(), f"cut mid-word at {chunk.text[-10:]!r}"
        assert fitted.budget.cuts[-1].what == "chunk_truncated" and fitted.budget.cuts[-1].stage == 4
        assert render_text(fitted).count(TRUNCATED_MARKER) == 1
        seen.add(chunk.text)
    # Sentence boundaries are preferred: with room for a sentence, the cut ends one.
    roomy = fit_to_budget(envelope, costs[3] - 1).chunks[0]
    assert roomy.text.endswith(".")
    assert len(seen) > 3


def test_stage_5_keeps_index_and_task_only():
    envelope = _envelope()
    costs = stage_costs(envelope)
    fitted = fit_to_budget(envelope, costs[5])
    assert fitted.budget.stage == 5 and fitted.chunks == ()
    assert not any(a.included for a in fitted.attachments)
    text = render_text(fitted)
    assert NO_CONTENT_NOTE in text and "[CHUNK]" not in text
    _assert_invariants(envelope, fitted)


def test_below_the_floor_still_keeps_index_and_task():
    envelope = _envelope()
    fitted = fit_to_budget(envelope, 10)
    assert fitted.budget.stage == 5 and fitted.budget.over_limit
    assert fitted.budget.used == stage_costs(envelope)[5]
    _assert_invariants(envelope, fitted)


def test_fit_to_budget_is_deterministic():
    costs = stage_costs(_envelope())
    for limit in sorted(set(costs.values())) + [costs[2] - 37, costs[4] + 3]:
        first, second = fit_to_budget(_envelope(), limit), fit_to_budget(_envelope(), limit)
        assert first == second
        assert json.dumps(first.to_dict(), sort_keys=True) == json.dumps(second.to_dict(), sort_keys=True)
        assert render_text(first) == render_text(second)


def test_fit_to_budget_rejects_bad_limits():
    with pytest.raises(ValueError, match="non-negative integer"):
        fit_to_budget(_envelope(), -1)


def test_envelope_to_dict_is_json_without_binary_data():
    data = _envelope().to_dict()
    assert set(data) == {"version", "task", "index", "chunks", "attachments", "budget"}
    assert data["version"] == "1.0" and data["task"] == TASK
    assert "data" not in data["attachments"][0]
    json.dumps(data)


# --- modality ----------------------------------------------------------------


def test_capability_classes_and_routes():
    t0, v1, d1 = (ProviderCapabilities.of_class(c) for c in ("T0", "V1", "D1"))
    assert (t0.capability_class, v1.capability_class, d1.capability_class) == ("T0", "V1", "D1")
    assert (route_pdf(t0), route_pdf(v1), route_pdf(d1)) == ("text", "images", "native")
    assert (route_image(t0), route_image(v1), route_image(d1)) == ("text_description", "image", "image")
    assert (route_webpage(t0), route_webpage(v1), route_webpage(d1)) == ("text", "text+screenshot", "text+screenshot")
    assert capabilities_for("anthropic").capability_class == "D1"
    assert capabilities_for("openai").capability_class == "V1"
    assert capabilities_for("offline").capability_class == "T0"
    assert capabilities_for("unknown-vendor").capability_class == "T0"
    with pytest.raises(ValueError, match="capability class"):
        ProviderCapabilities.of_class("X9")


def test_pdf_fallback_ladder_needs_its_material():
    d1, v1 = ProviderCapabilities.of_class("D1"), ProviderCapabilities.of_class("V1")
    assert pdf_fallback(d1, has_pdf_bytes=True, has_page_images=True) == "native"
    assert pdf_fallback(d1, has_pdf_bytes=False, has_page_images=True) == "images"
    assert pdf_fallback(d1, has_pdf_bytes=False, has_page_images=False) == "text"
    assert pdf_fallback(v1, has_pdf_bytes=True, has_page_images=False) == "text"
    assert pdf_fallback(ProviderCapabilities(), has_pdf_bytes=True, has_page_images=True) == "text"


def test_envelope_routes_binaries_by_capability():
    image = image_source("Diagram", PNG_BYTES, "image/png", alt_text="Boxes and arrows")
    report = sources_from_spans("report.pdf", "pdf", _spans(2), raw=PDF_BYTES)
    d1 = build_envelope(TASK, [report, image], capabilities=ProviderCapabilities.of_class("D1"))
    assert [(a.artifact_type, a.mime_type) for a in d1.attachments] == [
        ("raw_pdf", "application/pdf"),
        ("image", "image/png"),
    ]
    assert d1.attachments[0].tokens == 2 * 1600  # two pages
    v1 = build_envelope(TASK, [report, image], capabilities=ProviderCapabilities.of_class("V1"))
    assert [a.artifact_type for a in v1.attachments] == ["image"]  # no page images rendered: PDF goes as text
    t0 = build_envelope(TASK, [report, image], capabilities=ProviderCapabilities.of_class("T0"))
    assert t0.attachments == ()
    assert any(c.text == "[image description] Boxes and arrows" and c.anchor == image.id for c in t0.chunks)


# --- adapters ----------------------------------------------------------------


def _routed_envelope(caps):
    image = image_source("Diagram", PNG_BYTES, "image/png")
    report = sources_from_spans("report.pdf", "pdf", _spans(2), raw=PDF_BYTES)
    return build_envelope(TASK, [report, image], capabilities=ProviderCapabilities.of_class(caps))


def test_anthropic_adapter_shape():
    envelope = _routed_envelope("D1")
    body = to_anthropic(envelope, system="Be precise.", model="claude-x", max_tokens=1024, cache_context=True)
    assert set(body) == {"model", "max_tokens", "system", "messages"}
    assert body["system"] == [{"type": "text", "text": "Be precise.", "cache_control": {"type": "ephemeral"}}]
    assert body["max_tokens"] == 1024
    (message,) = body["messages"]
    assert set(message) == {"role", "content"} and message["role"] == "user"
    document, image, context, task = message["content"]
    assert document == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(PDF_BYTES).decode()},
    }
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG_BYTES).decode()},
    }
    # The stable prefix (binaries, then the context) ends in a cache breakpoint; the task follows.
    assert context["cache_control"] == {"type": "ephemeral"} and "cache_control" not in task
    assert context["text"] + task["text"] == render_text(envelope)
    assert task == {"type": "text", "text": render_task(envelope.task)}
    # A context read once (the default) is not worth a cache write; without caching, nothing is marked.
    read_once = to_anthropic(envelope, system="s", model="m", max_tokens=1)
    assert "cache_control" not in read_once["messages"][0]["content"][2]
    uncached = to_anthropic(envelope, system="s", model="m", max_tokens=1, cache=False, cache_context=True)
    assert "cache_control" not in json.dumps(uncached)


def test_adapters_send_only_included_attachments():
    envelope = _routed_envelope("D1")
    fitted = fit_to_budget(envelope, stage_costs(envelope)[3])
    assert [b["type"] for b in to_anthropic(fitted, system="s", model="m", max_tokens=1)["messages"][0]["content"]] == [
        "text",
        "text",
    ]
    assert [list(p) for p in to_gemini(fitted, system="s")["contents"][0]["parts"]] == [["text"]]


def test_openai_adapter_shape():
    envelope = _routed_envelope("V1")
    body = to_openai(envelope, system="Be precise.", model="gpt-x", max_tokens=512)
    assert set(body) == {"model", "max_completion_tokens", "messages"}
    assert body["max_completion_tokens"] == 512 and body["model"] == "gpt-x"
    system, user = body["messages"]
    assert system == {"role": "system", "content": "Be precise."}
    assert user["role"] == "user"
    text, image = user["content"]
    assert text == {"type": "text", "text": render_text(envelope)}
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()},
    }


def test_gemini_adapter_shape():
    envelope = _routed_envelope("D1")
    body = to_gemini(envelope, system="Be precise.")
    assert set(body) == {"contents", "system_instruction"}
    assert body["system_instruction"] == {"parts": [{"text": "Be precise."}]}
    (content,) = body["contents"]
    assert content["role"] == "user"
    pdf, image, text = content["parts"]
    assert pdf == {"inline_data": {"mime_type": "application/pdf", "data": base64.b64encode(PDF_BYTES).decode()}}
    assert image == {"inline_data": {"mime_type": "image/png", "data": base64.b64encode(PNG_BYTES).decode()}}
    assert text == {"text": render_text(envelope)}


def test_to_provider_dispatches_and_rejects_unknown():
    envelope = _routed_envelope("T0")
    content = to_provider("anthropic", envelope, system="s", model="m")["messages"][0]["content"]
    assert "".join(block["text"] for block in content) == render_text(envelope)
    assert to_provider("gemini", envelope, system="")["contents"][0]["parts"] == [{"text": render_text(envelope)}]
    with pytest.raises(ValueError, match="no adapter"):
        to_provider("mistral", envelope, system="s")


def test_source_from_context_file_reads_its_spans():
    class FakeText:
        spans = _spans(2)

    class FakeFile:
        filename = "report.pdf"
        format = "pdf"
        mime_type = "application/pdf"
        is_extracted = True
        text = FakeText()

    source = source_from_context_file(FakeFile())
    assert source.id == sources_from_spans("x.pdf", "pdf", _spans(2)).id
    assert source.filename == "report.pdf" and [c.anchor.split("#")[1] for c in source.chunks] == [
        "p=1&s=S1",
        "p=2&s=S2",
    ]


def test_index_marks_attached_sources_until_the_attachment_is_dropped():
    envelope = _envelope("D1")
    report_line = render_text(envelope).splitlines()[1]
    assert report_line.endswith(" | attached")
    t0_line = render_text(_envelope("T0")).splitlines()[1]
    assert not t0_line.endswith(" | attached") and _envelope("T0").index.entries[0].has_binary
    dropped = fit_to_budget(envelope, stage_costs(envelope)[3])
    assert not render_text(dropped).splitlines()[1].endswith(" | attached")


def test_every_limit_keeps_the_invariants_and_stages_only_grow_as_limits_shrink():
    envelope = _envelope()
    costs = stage_costs(envelope)
    previous_stage = 0
    step = max(1, (costs[0] - costs[5]) // 150)
    # The sweep ends exactly on the floor and just below it, whatever the step.
    limits = [*range(costs[0] + 5, costs[5], -step), costs[5], costs[5] - 1]
    for limit in limits:
        fitted = fit_to_budget(envelope, limit)
        assert fitted.budget.stage >= previous_stage
        previous_stage = fitted.budget.stage
        _assert_invariants(envelope, fitted)
    assert previous_stage == 5
