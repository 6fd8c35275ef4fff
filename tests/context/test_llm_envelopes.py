"""Envelope requests reach each provider in its own shape: the real SDKs against the fake servers on loopback."""

import base64
import struct
import zlib
from pathlib import Path

import pytest

from llm_platform import gateway
from llm_platform.base import LLMRequest
from llm_platform.ir import (
    ProviderCapabilities,
    build_envelope,
    capabilities_for,
    image_source,
    note_source,
    render_text,
    sources_from_spans,
)
from llm_platform.models import LLMCall
from tests.fake_anthropic import text_of

pytestmark = pytest.mark.django_db

PDF_BYTES = (Path(__file__).parents[1] / "fixtures" / "report.pdf").read_bytes()
SPANS = [
    {"span_id": "S1", "text": "The reservoir held 1.2 million m3 in August 2023.", "locator": "p. 1"},
    {"span_id": "S2", "text": "Inflow fell by a third over the summer.", "locator": "p. 2"},
]
TASK = "Summarise the reservoir levels, citing anchors."


def tiny_png() -> bytes:
    """A valid 1x1 white PNG (no imaging library in the test environment)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\xff\xff")  # filter byte, then one white pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def report_and_note(capabilities: ProviderCapabilities):
    sources = [
        sources_from_spans("report.pdf", "pdf", SPANS, raw=PDF_BYTES),
        note_source("Analyst note", "Check the August figure against the gauge log."),
    ]
    return build_envelope(TASK, sources, capabilities=capabilities)


def test_from_envelope_keeps_the_rendered_text_as_the_prompt():
    envelope = report_and_note(capabilities_for("anthropic"))
    request = LLMRequest.from_envelope("report", "SYSTEM", envelope, max_tokens=500)
    assert (request.task, request.system, request.max_tokens) == ("report", "SYSTEM", 500)
    assert request.prompt == render_text(envelope)
    assert request.envelope is envelope


# --- anthropic ------------------------------------------------------------------


def test_anthropic_gets_the_pdf_as_a_document_block_before_the_text(fake_anthropic):
    envelope = report_and_note(capabilities_for("anthropic"))
    fake_anthropic.script(("text", '{"summary": "ok"}'))
    result = gateway.complete(
        LLMRequest.from_envelope("report", "SYSTEM PROMPT", envelope, max_tokens=700),
        provider=gateway.get_provider("anthropic"),
    )

    assert result.response.text == '{"summary": "ok"}'
    [sent] = fake_anthropic.message_requests()
    assert sent["body"]["system"][0]["text"] == "SYSTEM PROMPT" and sent["body"]["max_tokens"] == 700
    [message] = sent["body"]["messages"]
    assert message["role"] == "user"
    assert message["content"][0] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(PDF_BYTES).decode()},
    }
    assert [block["type"] for block in message["content"]] == ["document", "text", "text"]  # context, task
    assert text_of(message["content"]) == render_text(envelope)
    call = LLMCall.objects.get()
    assert (call.task, call.provider, call.outcome) == ("report", "anthropic", "ok")
    assert call.input_tokens == result.response.input_tokens > 0


def test_anthropic_text_only_envelope_sends_a_single_text_block(fake_anthropic):
    envelope = report_and_note(ProviderCapabilities.of_class("T0"))  # the PDF arrives as its extracted text
    assert envelope.attachments == ()
    fake_anthropic.script(("text", "{}"))
    gateway.complete(LLMRequest.from_envelope("report", "SYSTEM PROMPT", envelope))

    [sent] = fake_anthropic.message_requests()
    [message] = sent["body"]["messages"]
    assert [block["type"] for block in message["content"]] == ["text", "text"]  # context, task
    assert text_of(message["content"]) == render_text(envelope)
    assert "The reservoir held 1.2 million m3" in message["content"][0]["text"]


def test_anthropic_gets_images_as_image_blocks(fake_anthropic):
    png = tiny_png()
    envelope = build_envelope(
        TASK, [image_source("Gauge photo", png, "image/png")], capabilities=capabilities_for("anthropic")
    )
    fake_anthropic.script(("text", "{}"))
    gateway.complete(LLMRequest.from_envelope("report", "SYSTEM PROMPT", envelope))

    [sent] = fake_anthropic.message_requests()
    image, *texts = sent["body"]["messages"][0]["content"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
    }
    assert text_of(texts) == render_text(envelope)


# --- openai-compatible ------------------------------------------------------------


def test_openai_gets_a_system_message_and_text_then_image_parts(fake_openai):
    png = tiny_png()
    sources = [note_source("Analyst note", "Check the gauge photo."), image_source("Gauge photo", png, "image/png")]
    envelope = build_envelope(TASK, sources, capabilities=capabilities_for("openai"))
    fake_openai.texts = ['{"summary": "ok"}']
    result = gateway.complete(LLMRequest.from_envelope("report", "SYSTEM PROMPT", envelope, max_tokens=600))

    assert result.response.text == '{"summary": "ok"}'
    [sent] = fake_openai.requests
    assert sent["body"]["max_tokens"] == 600
    system, user = sent["body"]["messages"]
    assert system == {"role": "system", "content": "SYSTEM PROMPT"}
    assert user["role"] == "user"
    assert user["content"] == [
        {"type": "text", "text": render_text(envelope)},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
    ]
    call = LLMCall.objects.get()
    assert (call.task, call.provider, call.outcome) == ("report", "openai", "ok")


def test_openai_never_gets_the_raw_pdf(fake_openai):
    # Vision without page images: the PDF falls back to its extracted text.
    envelope = report_and_note(capabilities_for("openai"))
    fake_openai.texts = ["{}"]
    gateway.complete(LLMRequest.from_envelope("report", "SYSTEM PROMPT", envelope))

    [sent] = fake_openai.requests
    assert sent["body"]["messages"][1]["content"] == [{"type": "text", "text": render_text(envelope)}]
