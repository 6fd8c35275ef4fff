"""The openai-compatible provider with the real openai SDK against a fake server on loopback."""

import pytest

from digests.generate import generate_file_digest
from llm_platform import gateway
from llm_platform.base import LLMRequest
from llm_platform.models import LLMCall

pytestmark = pytest.mark.django_db

SPANS = [{"span_id": "S1", "text": "The reservoir held 1.2 million m3 in August 2023."}]


def test_digest_through_an_ollama_style_server(fake_openai):
    generated = generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    assert generated.provider == "openai" and generated.model == "llama3.1:8b"
    assert generated.content["facts"][0]["sources"] == ["levels.txt::S1"]
    sent = fake_openai.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["model"] == "llama3.1:8b"
    assert [m["role"] for m in sent["body"]["messages"]] == ["system", "user"]
    assert sent["body"]["messages"][1]["content"].startswith("TASK: PER_FILE_DIGEST\nFILE: levels.txt")
    call = LLMCall.objects.get()
    assert (call.provider, call.outcome, call.task) == ("openai", "ok", "per_file_digest")
    assert call.input_tokens > 0


def test_a_streamed_call_sends_stream_true_and_reads_the_chunks_and_usage(fake_openai):
    fake_openai.texts = ['{"answer": "First sentence. Second sentence.", "needs": []}']
    partials: list[str] = []
    request = LLMRequest(task="chat_turn", system="SYSTEM", prompt="TASK: CHAT_TURN\nhello", max_tokens=100)
    result = gateway.complete(request, on_partial=partials.append)
    sent = fake_openai.requests[0]["body"]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True} and fake_openai.streamed == 1
    assert partials == ['{"answer": "First sentence. ', fake_openai_text := result.response.text]
    assert fake_openai_text == '{"answer": "First sentence. Second sentence.", "needs": []}'
    call = LLMCall.objects.get()
    assert (call.provider, call.model, call.outcome) == ("openai", "llama3.1:8b", "ok")
    assert call.input_tokens > 0 and call.output_tokens == result.response.output_tokens > 0


def test_server_errors_are_retried(fake_openai):
    fake_openai.statuses = [503]
    generate_file_digest(filename="levels.txt", format="text", spans=SPANS)
    retry, call = LLMCall.objects.order_by("id")
    assert (retry.outcome, retry.status_code) == ("transient", 503)
    assert call.outcome == "retried" and call.retries == 1


def test_needs_a_base_url_or_a_key(settings):
    settings.GROUNDWORK_LLM = "openai"
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    gateway.reset_providers()
    with pytest.raises(Exception, match="OPENAI_BASE_URL"):
        gateway.get_provider()
    gateway.reset_providers()
