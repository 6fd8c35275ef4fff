"""The model gateway: the real anthropic SDK against a fake Messages API on loopback, and the offline provider.

These tests register their own offline handler (TASK: ECHO) instead of relying on the
digest handlers, and script the fake's answers, so they test the gateway alone.
"""

import math
import socket
import time

import pytest
from django.core.exceptions import ImproperlyConfigured

from llm_platform import gateway, offline
from llm_platform.base import LLMRequest, LLMResponse, ProviderError
from llm_platform.models import LLMCall
from tests.fake_anthropic import api_key_of
from tests.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db

ECHO = "TASK: ECHO\nhello world"


def request(prompt: str = ECHO) -> LLMRequest:
    return LLMRequest(task="echo", system="SYSTEM PROMPT", prompt=prompt, max_tokens=1000)


@pytest.fixture(autouse=True)
def fresh_providers():
    gateway.reset_providers()
    yield
    gateway.reset_providers()


@pytest.fixture(autouse=True)
def echo_handler():
    def echo(prompt: str) -> dict:
        body = prompt.split("\n", 1)[1]
        if body == "crash":
            raise KeyError("missing section")
        return {"echo": body}

    offline.register("ECHO", echo)
    yield
    offline.unregister("ECHO")


class FlakyProvider:
    """A provider that raises the given errors in turn, then answers."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, *errors: ProviderError):
        self.errors = list(errors)
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return LLMResponse(text="{}", input_tokens=3, output_tokens=1, model="scripted-1-0401")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- anthropic, through the real SDK -------------------------------------------


def test_anthropic_call_is_sent_as_the_sdk_sends_it_and_recorded(fake_anthropic):
    fake_anthropic.script(("text", '{"answer": 42}'))
    result = gateway.complete(request(), prompt_version="v1.4", subject="file:x", attempt=2)

    assert result.response.text == '{"answer": 42}'
    [sent] = fake_anthropic.requests  # ANTHROPIC_BASE_URL honoured: it reached the fake
    assert sent["path"] == "/v1/messages"
    assert api_key_of(sent["headers"]) == "test-key"
    assert sent["body"]["model"] == "claude-test-model"
    assert sent["body"]["system"] == [{"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}}]
    assert sent["body"]["messages"] == [{"role": "user", "content": ECHO}]
    assert sent["body"]["max_tokens"] == 1000

    call = LLMCall.objects.get()
    assert call == result.call
    assert (call.task, call.provider, call.model, call.outcome, call.retries) == (
        "echo",
        "anthropic",
        "claude-test-model",
        "ok",
        0,
    )
    assert (call.prompt_version, call.subject, call.attempt, call.error) == ("v1.4", "file:x", 2, "")
    assert call.input_tokens == result.response.input_tokens > 0
    assert call.output_tokens == result.response.output_tokens > 0


STREAMED = '{"answer": "The valves were replaced in 2021. Losses fell by 18 percent. The end.", "needs": []}'


def test_anthropic_streams_through_the_sdk_and_the_call_is_recorded(fake_anthropic):
    fake_anthropic.script(("text", STREAMED))
    partials: list[str] = []
    result = gateway.complete(request(), subject="chat:x", on_partial=partials.append)

    [sent] = fake_anthropic.requests
    assert sent["body"]["stream"] is True and fake_anthropic.streamed == 1
    assert sent["body"]["messages"] == [{"role": "user", "content": ECHO}]  # the request `complete` sends
    # The text arrived in pieces, each partial a prefix of the next, the last the whole answer.
    assert len(partials) == 3 and all(later.startswith(earlier) for earlier, later in zip(partials, partials[1:]))
    assert partials[-1] == result.response.text == STREAMED
    call = LLMCall.objects.get()
    assert (call.provider, call.model, call.outcome, call.subject) == ("anthropic", "claude-test-model", "ok", "chat:x")
    assert call.output_tokens == result.response.output_tokens > 0 and call.input_tokens > 0


def test_a_stream_that_fails_is_retried_from_its_start(fake_anthropic):
    fake_anthropic.script(("status", 529), ("text", STREAMED))
    partials: list[str] = []
    result = gateway.complete(request(), on_partial=partials.append)
    assert result.response.text == STREAMED and partials[-1] == STREAMED
    assert [c.outcome for c in LLMCall.objects.order_by("id")] == ["throttled", "retried"]


def test_the_offline_provider_streams_its_answer_a_sentence_at_a_time():
    offline.register("STORY", lambda prompt: {"answer": "One. Two! Three?", "needs": []})
    try:
        partials: list[str] = []
        story = request("TASK: STORY\n")
        result = gateway.complete(story, provider=offline.OfflineProvider(), on_partial=partials.append)
    finally:
        offline.unregister("STORY")
    assert partials == ['{"answer": "One. ', '{"answer": "One. Two! ', result.response.text]
    assert LLMCall.objects.get().provider == "offline"


@pytest.mark.parametrize(
    "statuses",
    [(500,), (429,), (529,), (500, 529)],
    ids=["500", "429", "529-overloaded", "500-then-529"],
)
def test_retryable_statuses_are_retried_and_counted(fake_anthropic, statuses):
    fake_anthropic.script(*[("status", status) for status in statuses], ("text", "{}"))
    result = gateway.complete(request())
    assert (result.call.outcome, result.call.retries) == ("retried", len(statuses))
    assert len(fake_anthropic.requests) == len(statuses) + 1
    # Every retry is a row of its own; the answer's row counts them.
    attempts = LLMCall.objects.exclude(pk=result.call.pk).order_by("id")
    expected = [("throttled" if status in (429, 529) else "transient", status) for status in statuses]
    assert list(attempts.values_list("outcome", "status_code")) == expected


def test_rate_limit_beyond_the_retry_budget_fails_and_is_recorded(fake_anthropic, settings):
    settings.GROUNDWORK_LLM_MAX_RETRIES = 2
    fake_anthropic.script(("status", 429), ("status", 429), ("status", 429), ("text", "never reached"))
    with pytest.raises(gateway.GatewayError, match=r"^anthropic: 429 Too Many Requests: .* after 2 retries$"):
        gateway.complete(request())
    call = LLMCall.objects.get(outcome="failed")
    assert call.retries == 2
    assert "429" in call.error
    assert len(fake_anthropic.requests) == 3
    assert list(LLMCall.objects.exclude(pk=call.pk).values_list("outcome", "status_code")) == [("throttled", 429)] * 2


def test_client_errors_fail_at_once(fake_anthropic):
    fake_anthropic.script(("status", 400))
    with pytest.raises(gateway.GatewayError, match=r"^anthropic: 400 Bad Request: scripted failure$"):
        gateway.complete(request())
    assert len(fake_anthropic.requests) == 1
    call = LLMCall.objects.get()
    assert (call.outcome, call.retries) == ("failed", 0)


def test_a_wrong_api_key_fails_at_once(fake_anthropic, settings):
    settings.ANTHROPIC_API_KEY = "wrong-key"
    gateway.reset_providers()
    with pytest.raises(gateway.GatewayError, match="401 Unauthorized: invalid API key"):
        gateway.complete(request())
    assert api_key_of(fake_anthropic.requests[0]["headers"]) == "wrong-key"
    assert len(fake_anthropic.requests) == 1


def test_timeouts_are_retried(fake_anthropic, settings):
    settings.GROUNDWORK_LLM_TIMEOUT_SECONDS = 0.3
    gateway.reset_providers()
    fake_anthropic.script(("delay", 1.5))  # then the default answer, from the ECHO handler
    result = gateway.complete(request())
    assert result.response.text == '{"echo": "hello world"}'
    assert (result.call.outcome, result.call.retries) == ("retried", 1)


def test_an_unreachable_server_is_retried_then_fails(fake_anthropic, settings):
    settings.ANTHROPIC_BASE_URL = f"http://127.0.0.1:{closed_port()}"
    gateway.reset_providers()
    with pytest.raises(gateway.GatewayError, match="connection failed.* after 3 retries$"):
        gateway.complete(request())
    call = LLMCall.objects.get(outcome="failed")
    assert (call.provider, call.outcome, call.retries) == ("anthropic", "failed", 3)
    assert LLMCall.objects.filter(outcome="transient").count() == 3
    assert fake_anthropic.requests == []


def test_count_tokens_uses_the_api_and_gives_none_when_it_cannot(fake_anthropic, settings):
    assert gateway.get_provider().count_tokens("system", "hello world") > 0
    assert fake_anthropic.requests[-1]["path"] == "/v1/messages/count_tokens"
    settings.ANTHROPIC_API_KEY = "wrong-key"
    gateway.reset_providers()
    assert gateway.get_provider().count_tokens("system", "hello world") is None


# --- offline --------------------------------------------------------------------


def test_offline_provider_is_deterministic_and_estimates_tokens(settings):
    settings.GROUNDWORK_LLM = "offline"
    first = gateway.complete(request())
    second = gateway.complete(request())
    assert first.response.text == second.response.text == '{"echo": "hello world"}'
    call = first.call
    assert (call.provider, call.model, call.outcome) == ("offline", offline.OfflineProvider.model, "ok")
    assert call.input_tokens == math.ceil(len("SYSTEM PROMPT") / 4) + math.ceil(len(ECHO) / 4)
    assert call.output_tokens == math.ceil(len(first.response.text) / 4)


def test_offline_provider_refuses_unknown_tasks_without_retrying(settings):
    settings.GROUNDWORK_LLM = "offline"
    with pytest.raises(gateway.GatewayError, match=r"^offline: offline provider has no handler for TASK: SOMETHING$"):
        gateway.complete(request("TASK: SOMETHING\nhello"))
    with pytest.raises(gateway.GatewayError, match=r"no handler for TASK: \(none\)"):
        gateway.complete(request("no envelope at all"))
    assert list(LLMCall.objects.order_by("id").values_list("provider", "outcome", "retries")) == [
        ("offline", "failed", 0),
        ("offline", "failed", 0),
    ]


def test_a_crashing_provider_is_still_recorded(settings):
    settings.GROUNDWORK_LLM = "offline"
    with pytest.raises(gateway.GatewayError, match=r"^offline: internal error \(KeyError\)$"):
        gateway.complete(request("TASK: ECHO\ncrash"))
    call = LLMCall.objects.get()
    assert call.outcome == "failed" and "KeyError" in call.error


def test_every_task_the_apps_send_has_the_handler_it_names():
    from django.utils.module_loading import import_string

    from conversation_app import services as chat_services
    from digests import generate
    from llm_platform.model_task import ModelTask
    from research_app.runs import model_tasks

    def tasks_of(module) -> dict[str, ModelTask]:
        return {task.name: task for task in vars(module).values() if isinstance(task, ModelTask)}

    tasks = {**tasks_of(model_tasks), **tasks_of(chat_services), **tasks_of(generate)}
    assert set(tasks_of(model_tasks)) == {
        "NODE_QUERIES",
        "NODE_FINDINGS",
        "NODE_SUFFICIENCY",
        "NODE_DECOMPOSE",
        "CONTEXT_SPLIT",
        "REPORT",
    }
    assert set(tasks_of(chat_services)) == {"CHAT_TURN"}
    assert set(tasks_of(generate)) == {"PER_FILE_DIGEST", "AGGREGATE_DIGEST"}
    provider = offline.OfflineProvider()
    for name, task in tasks.items():
        handler = provider.handler_for(name)
        assert handler is import_string(task.offline_handler), name
        assert handler.__name__ == task.recorded_as, name
    # Each app answers its own tasks, each by the function of the task's name.
    assert {t.offline_handler.split(".")[0] for t in tasks_of(generate).values()} == {"digests"}
    assert {t.offline_handler.split(".")[0] for t in tasks_of(model_tasks).values()} == {"research_app"}
    assert {t.offline_handler.split(".")[0] for t in tasks_of(chat_services).values()} == {"conversation_app"}


def test_a_task_has_one_handler():
    offline.register("ECHO", offline.OfflineProvider().handler_for("ECHO"))  # the same again: harmless
    with pytest.raises(ValueError, match="the offline task ECHO already has a handler"):
        offline.register("ECHO", lambda prompt: {})


def named_handler(prompt: str) -> dict:
    return {"named": prompt}


def test_a_handler_named_by_its_path_is_imported_when_its_task_is_first_answered():
    path = f"{__name__}.named_handler"
    offline.register("NAMED", path)
    offline.register("NOWHERE", "tests.context.no_such_module.handler")  # never answered: never imported
    try:
        offline.register("NAMED", path)  # the same path again: harmless
        offline.register("NAMED", named_handler)  # the function the path names is the same handler
        with pytest.raises(ValueError, match="the offline task NAMED already has a handler: 'tests.context"):
            offline.register("NAMED", lambda prompt: {})
        with pytest.raises(ValueError, match="the offline task ECHO already has a handler"):
            offline.register("ECHO", path)
        response = offline.OfflineProvider().complete(request("TASK: NAMED\nhi"))
        assert response.text == '{"named": "TASK: NAMED\\nhi"}'
        assert offline.OfflineProvider().handler_for("NAMED") is named_handler
        with pytest.raises(ImportError):
            offline.OfflineProvider().handler_for("NOWHERE")
    finally:
        offline.unregister("NAMED")
        offline.unregister("NOWHERE")


# --- the gateway itself ---------------------------------------------------------


def test_an_explicit_provider_is_used_and_retryable_errors_are_retried():
    provider = FlakyProvider(ProviderError("overloaded", retryable=True))
    result = gateway.complete(request(), provider=provider, session_id=None)
    assert provider.calls == 2
    assert (result.call.provider, result.call.model, result.call.outcome) == ("scripted", "scripted-1-0401", "retried")


def test_non_retryable_errors_fail_at_once():
    provider = FlakyProvider(ProviderError("bad request", retryable=False))
    with pytest.raises(gateway.GatewayError, match=r"^scripted: bad request$"):
        gateway.complete(request(), provider=provider)
    assert provider.calls == 1
    call = LLMCall.objects.get()
    assert (call.model, call.outcome, call.error) == ("scripted-1", "failed", "bad request")


def test_mark_invalid_records_the_validation_errors():
    call = gateway.complete(request(), provider=FlakyProvider()).call
    gateway.mark_invalid(call, ["facts[0]: unknown source ghost.pdf::S9", "missing summary"])
    call.refresh_from_db()
    assert call.outcome == "invalid"
    assert call.error == "facts[0]: unknown source ghost.pdf::S9\nmissing summary"


def test_backoff_is_exponential_with_jitter(settings):
    settings.GROUNDWORK_LLM_BACKOFF_SECONDS = 1.0
    for retry, base in [(1, 1.0), (2, 2.0), (3, 4.0)]:
        assert all(base <= gateway._backoff(retry) <= base * 1.5 for _ in range(20))
    assert gateway._backoff(30) <= gateway.MAX_BACKOFF_SECONDS * 1.5


def test_provider_selection(settings):
    settings.GROUNDWORK_LLM = "offline"
    provider = gateway.get_provider()
    assert provider.name == "offline"
    assert gateway.get_provider() is provider  # cached per name

    settings.GROUNDWORK_LLM = "anthropic"
    settings.ANTHROPIC_API_KEY = ""
    with pytest.raises(ImproperlyConfigured, match="ANTHROPIC_API_KEY"):
        gateway.get_provider()
    settings.ANTHROPIC_API_KEY = "k"
    assert gateway.get_provider().name == "anthropic"
    assert gateway.get_provider("offline") is provider  # an explicit name wins over the setting

    settings.GROUNDWORK_LLM = "nonsense"
    with pytest.raises(ImproperlyConfigured, match="known providers: anthropic, offline"):
        gateway.get_provider()

    gateway.reset_providers()
    assert gateway.get_provider("offline") is not provider


def test_a_dotted_path_names_a_provider_class(settings):
    settings.GROUNDWORK_LLM = "llm_platform.offline.OfflineProvider"
    provider = gateway.get_provider()
    assert type(provider) is offline.OfflineProvider
    assert gateway.get_provider() is provider  # cached like a named provider
    assert gateway.complete(request()).call.provider == "offline"

    settings.GROUNDWORK_LLM = "llm_platform.offline.NoSuchProvider"
    with pytest.raises(ImproperlyConfigured, match=r"'llm_platform.offline.NoSuchProvider' cannot be imported"):
        gateway.get_provider()
    settings.GROUNDWORK_LLM = "no_such_module.Provider"
    with pytest.raises(ImproperlyConfigured, match="cannot be imported"):
        gateway.get_provider()


# --- the tests' scripted provider (GROUNDWORK_LLM as a dotted path) ----------------


def test_the_scripted_provider_answers_like_offline_unless_scripted(scripted_llm):
    assert type(gateway.get_provider()) is ScriptedProvider
    plain = gateway.complete(request())
    assert plain.response == offline.OfflineProvider().complete(request())
    assert (plain.call.provider, plain.call.model) == ("offline", offline.OfflineProvider.model)

    scripted_llm.handlers["ECHO"] = lambda prompt: {"scripted": True}
    assert gateway.complete(request()).response.text == '{"scripted": true}'
    scripted_llm.delay = 0.2
    started = time.monotonic()
    gateway.complete(request())
    assert time.monotonic() - started >= 0.2
    assert [r.prompt for r in scripted_llm.requests] == [ECHO, ECHO, ECHO]


def test_the_scripted_outage_fails_the_named_tasks_until_it_ends(scripted_llm, settings):
    settings.GROUNDWORK_LLM_MAX_RETRIES = 2
    scripted_llm.go_down("echo", retryable=True)
    with pytest.raises(gateway.GatewayError, match=r"503 Service Unavailable after 2 retries$"):
        gateway.complete(request())
    assert gateway.complete(LLMRequest(task="other", system="", prompt=ECHO)).call.outcome == "ok"
    scripted_llm.go_down()
    with pytest.raises(gateway.GatewayError, match=r"503 Service Unavailable$"):
        gateway.complete(LLMRequest(task="other", system="", prompt=ECHO))
    scripted_llm.come_back()
    assert gateway.complete(request()).call.outcome == "ok"
    assert len(scripted_llm.requests) == 3 + 1 + 1 + 1, "every call is recorded, failed or not"
