"""The gateway with the real anthropic SDK against a fake Messages API on loopback."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from context_app.llm import gateway
from context_app.llm.base import LLMRequest
from context_app.models import LLMCall
from tests.fake_anthropic import api_key_of

pytestmark = pytest.mark.django_db

ENVELOPE = "TASK: PER_FILE_DIGEST\nFILE: a.txt\nFORMAT: text\nSOURCE_SPANS:\n[S1] The plant treated 4,100 m3 per day in 2023.\nEND_FILE"


def request(prompt: str = ENVELOPE) -> LLMRequest:
    return LLMRequest(task="per_file_digest", system="SYSTEM PROMPT", prompt=prompt, max_tokens=1000)


def test_anthropic_call_is_recorded_and_sent_as_the_sdk_sends_it(fake_anthropic):
    result = gateway.complete(request(), prompt_version="v1.4", subject="file:x")
    assert '"a.txt::S1"' in result.response.text
    sent = fake_anthropic.message_requests()[0]
    assert api_key_of(sent["headers"]) == "test-key"
    assert sent["body"]["model"] == "claude-test-model"
    assert sent["body"]["system"] == "SYSTEM PROMPT"
    assert sent["body"]["messages"] == [{"role": "user", "content": ENVELOPE}]
    assert sent["body"]["max_tokens"] == 1000
    call = LLMCall.objects.get()
    assert (call.provider, call.model, call.outcome, call.retries) == ("anthropic", "claude-test-model", "ok", 0)
    assert call.input_tokens > 0 and call.output_tokens > 0 and call.prompt_version == "v1.4"


def test_server_errors_are_retried_and_counted(fake_anthropic):
    fake_anthropic.script(("status", 500), ("status", 529))
    result = gateway.complete(request())
    assert result.call.outcome == "retried" and result.call.retries == 2
    assert len(fake_anthropic.message_requests()) == 3


def test_rate_limit_beyond_the_retry_budget_fails(fake_anthropic, settings):
    settings.GROUNDWORK_LLM_MAX_RETRIES = 2
    fake_anthropic.script(("status", 429), ("status", 429), ("status", 429))
    with pytest.raises(gateway.GatewayError, match="429"):
        gateway.complete(request())
    call = LLMCall.objects.get()
    assert call.outcome == "failed" and call.retries == 2
    assert len(fake_anthropic.message_requests()) == 3


def test_client_errors_are_not_retried(fake_anthropic):
    fake_anthropic.script(("status", 400))
    with pytest.raises(gateway.GatewayError, match="400"):
        gateway.complete(request())
    assert len(fake_anthropic.message_requests()) == 1
    assert LLMCall.objects.get().outcome == "failed"


def test_count_tokens_uses_the_api(fake_anthropic):
    assert gateway.get_provider().count_tokens("system", "hello world") > 0


def test_offline_provider_is_deterministic_and_refuses_unknown_tasks(settings):
    settings.GROUNDWORK_LLM = "offline"
    gateway.reset_providers()
    first = gateway.complete(request()).response.text
    second = gateway.complete(request()).response.text
    assert first == second
    with pytest.raises(gateway.GatewayError, match="no handler for TASK: SOMETHING"):
        gateway.complete(request("TASK: SOMETHING\nhello"))
    assert list(LLMCall.objects.order_by("id").values_list("provider", "outcome")) == [
        ("offline", "ok"),
        ("offline", "ok"),
        ("offline", "failed"),
    ]


def test_provider_selection(settings):
    gateway.reset_providers()
    settings.GROUNDWORK_LLM = "nonsense"
    with pytest.raises(ImproperlyConfigured, match="known providers"):
        gateway.get_provider()
    settings.GROUNDWORK_LLM = "anthropic"
    settings.ANTHROPIC_API_KEY = ""
    with pytest.raises(ImproperlyConfigured, match="ANTHROPIC_API_KEY"):
        gateway.get_provider()
    settings.ANTHROPIC_API_KEY = "k"
    assert gateway.get_provider().name == "anthropic"
    gateway.reset_providers()
