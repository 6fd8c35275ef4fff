"""The provider's limits (llm_platform.limiter) and the gateway's 429 handling.

The limiter keeps its counts in the tests' own Redis; every test starts and ends
with them forgotten (gateway.reset_providers() resets them too).
"""

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace

import pytest

from context_app.models import ContextFile, DigestStatus
from llm_platform import gateway, limiter
from llm_platform.base import LLMRequest, retry_after_seconds
from llm_platform.models import LLMCall
from tests.factories import ContextApi, make_member, wait_until

PROVIDER = "limits-test"


@pytest.fixture(autouse=True)
def fresh_limits():
    limiter.reset()
    yield
    limiter.reset()


def hold(priority: str = limiter.INTERACTIVE, tokens: int = 0) -> limiter.Slot:
    if priority == limiter.BULK:
        with limiter.bulk():
            return limiter.acquire(PROVIDER, tokens)
    return limiter.acquire(PROVIDER, tokens)


class Caller(threading.Thread):
    """A model call's thread; join() raises what it raised, so a failure in it fails the test."""

    def __init__(self, target, name: str | None = None):
        super().__init__(target=target, name=name, daemon=True)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            super().run()
        except BaseException as exc:  # handed to the test's thread
            self.error = exc

    def join(self, timeout: float | None = 30) -> None:
        super().join(timeout)
        assert not self.is_alive(), f"{self.name} still waits"
        if self.error is not None:
            raise self.error


def in_thread(target, name: str | None = None) -> Caller:
    thread = Caller(target, name)
    thread.start()
    return thread


@dataclass(frozen=True)
class Answer:
    """One answer of the limiter's Redis script to a call asking for a slot."""

    caller: str  # the asking thread's name
    granted: bool
    wait_ms: int
    reason: str


REASONS = {0: "calls in flight", 1: "cool-down", 2: "tokens", 3: "an interactive call waits"}


class LimiterAnswers(list):
    """Every answer the limiter gives, in order (it is asked again after each pause)."""

    def __init__(self, monkeypatch):
        super().__init__()
        self.lock = threading.Lock()
        real_client = limiter._client
        answers = self

        class Recording:
            def __init__(self, client):
                self.client = client

            def eval(self, script, *args):
                result = self.client.eval(script, *args)
                if script is limiter._ACQUIRE:
                    granted, wait_ms, reason = result
                    with answers.lock:
                        answers.append(Answer(threading.current_thread().name, bool(granted), wait_ms, REASONS[reason]))
                return result

            def __getattr__(self, name):
                return getattr(self.client, name)

        monkeypatch.setattr(limiter, "_client", lambda: Recording(real_client()))

    def to(self, caller: str) -> list[Answer]:
        with self.lock:
            return [answer for answer in self if answer.caller == caller]

    def refused(self, caller: str) -> bool:
        return any(not answer.granted for answer in self.to(caller))


# --- the limiter ------------------------------------------------------------------


def test_calls_in_flight_never_exceed_the_limit(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 3
    lock, now, peak = threading.Lock(), [0], [0]
    # A call ends only once three calls hold a slot together: the limit is reached, never passed.
    three_at_once = threading.Barrier(3, timeout=30)

    def call():
        slot = hold()
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        three_at_once.wait()
        with lock:
            now[0] -= 1
        limiter.release(slot, succeeded=True)

    threads = [in_thread(call, f"call {n}") for n in range(12)]
    for thread in threads:
        thread.join()
    assert peak[0] == 3
    assert limiter.state(PROVIDER)["in_flight"] == 0


def test_a_waiting_interactive_call_goes_before_waiting_bulk_calls(settings, monkeypatch):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 2
    answers = LimiterAnswers(monkeypatch)
    held = [hold(limiter.BULK), hold(limiter.BULK)]
    order: list[str] = []

    def wait_for_slot(priority):
        slot = hold(priority)
        order.append(priority)
        limiter.release(slot)

    bulk_waiter = in_thread(lambda: wait_for_slot(limiter.BULK), "bulk")
    wait_until(lambda: answers.refused("bulk"), timeout=10, message="the bulk call to wait")  # it waited first
    interactive_waiter = in_thread(lambda: wait_for_slot(limiter.INTERACTIVE), "interactive")
    wait_until(lambda: limiter.state(PROVIDER)["interactive_waiting"], timeout=10, message="the interactive call")
    limiter.release(held.pop())  # one slot for two waiters
    interactive_waiter.join()
    limiter.release(held.pop())
    bulk_waiter.join()
    assert order == [limiter.INTERACTIVE, limiter.BULK]


def test_bulk_calls_leave_the_reserve_to_interactive_ones(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 3
    settings.GROUNDWORK_LLM_INTERACTIVE_RESERVE = 1
    settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS = 0  # a call not granted when it first asks fails
    bulk = [hold(limiter.BULK), hold(limiter.BULK)]
    with pytest.raises(limiter.LimitWaitExceeded):
        hold(limiter.BULK)
    interactive = hold()  # granted at once: the reserve was left free
    for slot in [*bulk, interactive]:
        limiter.release(slot)


def test_tokens_a_minute_make_a_call_wait_for_the_bucket_to_refill(settings, monkeypatch):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 0  # no limit on calls in flight: tokens alone
    settings.GROUNDWORK_LLM_TOKENS_PER_MINUTE = 6000  # 100 a second
    answers = LimiterAnswers(monkeypatch)
    first = hold(tokens=6000)
    limiter.release(first, used_tokens=6000)
    second = hold(tokens=100)  # the bucket is empty: a second to refill 100
    asked = answers.to(threading.current_thread().name)
    assert asked[0].granted and asked[-1].granted
    refusals = asked[1:-1]
    assert refusals and {a.reason for a in refusals} == {"tokens"}
    assert 0 < refusals[0].wait_ms <= 1000, "told to wait for the 100 tokens to refill"
    limiter.release(second, used_tokens=100)


def test_a_429_pauses_every_caller_and_lowers_the_calls_in_flight(settings, monkeypatch):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 8
    answers = LimiterAnswers(monkeypatch)
    slots = [hold() for _ in range(4)]
    limiter.throttled(slots[0], 1.0)
    state = limiter.state(PROVIDER)
    assert state["adaptive_limit"] == 3.0  # a quarter fewer than the 4 in flight when the 429 came
    assert 0 < state["cooldown_seconds"] <= 1.0
    for slot in slots:
        limiter.release(slot)
    answers.clear()
    slot = hold()  # another caller waits the cool-down out too
    assert answers[0].reason == "cool-down" and 0 < answers[0].wait_ms <= 1000
    assert [a.granted for a in answers] == [False] * (len(answers) - 1) + [True]
    limiter.release(slot, succeeded=True)
    assert limiter.state(PROVIDER)["adaptive_limit"] == pytest.approx(3 + 1 / 3)


def test_without_redis_calls_are_not_limited(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    slot = hold()
    assert slot.held is False
    limiter.release(slot)


def test_retry_after_headers_are_read_as_seconds():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"Retry-After": "0.5"}) == 0.5
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_a_minute = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 55 < retry_after_seconds({"retry-after": in_a_minute}) <= 60
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# --- the gateway on a 429 -------------------------------------------------------------


def echo_request() -> LLMRequest:
    return LLMRequest(task="per_file_digest", system="SYSTEM", prompt="TASK: UNKNOWN\nhello", max_tokens=100)


@pytest.mark.django_db
def test_a_429_storm_with_retry_after_is_waited_out_beyond_the_retry_budget(fake_anthropic, settings):
    settings.GROUNDWORK_LLM_MAX_RETRIES = 1
    storm = [("status", 429, {"retry-after-ms": "50"})] * 4
    fake_anthropic.script(*storm, ("status", 529, {"retry-after": "0.05"}), ("text", "{}"))
    result = gateway.complete(echo_request())
    assert (result.call.outcome, result.call.retries) == ("retried", 5)
    rows = LLMCall.objects.exclude(pk=result.call.pk).order_by("id")
    assert list(rows.values_list("outcome", "status_code")) == [("throttled", 429)] * 4 + [("throttled", 529)]
    assert "retry-after 0.05 s" in rows.last().error


@pytest.mark.django_db
def test_a_retry_after_longer_than_the_wait_budget_fails_at_once(fake_anthropic, settings, monkeypatch):
    settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS = 1
    fake_anthropic.script(("status", 429, {"retry-after": "30"}))
    sleeps: list[float] = []  # the gateway's pauses between tries
    monkeypatch.setattr(gateway, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleeps.append))
    with pytest.raises(gateway.GatewayError, match=r"429 Too Many Requests: .*retry-after 30 s"):
        gateway.complete(echo_request())
    assert sleeps == [] and len(fake_anthropic.message_requests()) == 1, "no wait, no second try"
    assert LLMCall.objects.get().status_code == 429


@pytest.mark.django_db(transaction=True)
def test_a_429_with_retry_after_is_waited_out_and_the_file_ends_ready(fake_anthropic, settings):
    from config.celery import app

    settings.GROUNDWORK_LLM_MAX_RETRIES = 0  # the retry-after alone must carry the file through
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    api.upload_and_extract(sid, {"pumps.txt": b"District 4 replaced 12 pumps in 2021 for 80,000 euros.\n"})
    fake_anthropic.script(("status", 429, {"retry-after": "1"}))
    app.conf.task_always_eager = True
    try:
        api.parse(sid)
    finally:
        app.conf.task_always_eager = False
    first, second, *_ = fake_anthropic.message_requests()
    assert second["at"] - first["at"] >= 1.0, "the retry waited at least the retry-after"
    assert ContextFile.objects.get().digest_status == DigestStatus.READY
    manifest = api.manifest(sid)
    assert manifest["aggregate_digest_status"] == "ready"
    digest_calls = LLMCall.objects.filter(task="per_file_digest").order_by("id")
    assert list(digest_calls.values_list("outcome", "status_code")) == [("throttled", 429), ("retried", None)]
    assert digest_calls.last().latency_ms >= 1000
