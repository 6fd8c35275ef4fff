"""The provider's limits (llm_platform.limiter) and the gateway's 429 handling.

The limiter keeps its counts in the tests' own Redis; every test starts and ends
with them forgotten (gateway.reset_providers() resets them too).
"""

import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from context_app.models import ContextFile, DigestStatus
from llm_platform import gateway, limiter
from llm_platform.base import LLMRequest, retry_after_seconds
from llm_platform.models import LLMCall
from tests.factories import ContextApi, make_member

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


def in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


# --- the limiter ------------------------------------------------------------------


def test_calls_in_flight_never_exceed_the_limit(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 3
    lock, now, peak = threading.Lock(), [0], [0]

    def call():
        slot = hold()
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1
        limiter.release(slot, succeeded=True)

    threads = [in_thread(call) for _ in range(12)]
    for thread in threads:
        thread.join(timeout=30)
    assert peak[0] == 3
    assert limiter.state(PROVIDER)["in_flight"] == 0


def test_a_waiting_interactive_call_goes_before_waiting_bulk_calls(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 2
    held = [hold(limiter.BULK), hold(limiter.BULK)]
    order: list[str] = []

    def wait_for_slot(priority):
        slot = hold(priority)
        order.append(priority)
        time.sleep(0.2)
        limiter.release(slot)

    bulk_waiter = in_thread(lambda: wait_for_slot(limiter.BULK))
    time.sleep(0.2)  # the bulk call has waited longer
    interactive_waiter = in_thread(lambda: wait_for_slot(limiter.INTERACTIVE))
    time.sleep(0.2)
    limiter.release(held.pop())
    interactive_waiter.join(timeout=10)
    limiter.release(held.pop())
    bulk_waiter.join(timeout=10)
    assert order == [limiter.INTERACTIVE, limiter.BULK]


def test_bulk_calls_leave_the_reserve_to_interactive_ones(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 3
    settings.GROUNDWORK_LLM_INTERACTIVE_RESERVE = 1
    settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS = 0.3
    bulk = [hold(limiter.BULK), hold(limiter.BULK)]
    with pytest.raises(limiter.LimitWaitExceeded):
        hold(limiter.BULK)
    started = time.monotonic()
    interactive = hold()
    assert time.monotonic() - started < 0.2
    for slot in [*bulk, interactive]:
        limiter.release(slot)


def test_tokens_a_minute_make_a_call_wait_for_the_bucket_to_refill(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 0  # no limit on calls in flight: tokens alone
    settings.GROUNDWORK_LLM_TOKENS_PER_MINUTE = 6000  # 100 a second
    first = hold(tokens=6000)
    limiter.release(first, used_tokens=6000)
    started = time.monotonic()
    second = hold(tokens=50)  # the bucket is empty: half a second to refill 50
    assert 0.4 <= time.monotonic() - started < 3
    limiter.release(second, used_tokens=50)


def test_a_429_pauses_every_caller_and_lowers_the_calls_in_flight(settings):
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 8
    slots = [hold() for _ in range(4)]
    limiter.throttled(slots[0], 0.5)
    state = limiter.state(PROVIDER)
    assert state["adaptive_limit"] == 3.0  # a quarter fewer than the 4 in flight when the 429 came
    assert 0.3 < state["cooldown_seconds"] <= 0.5
    for slot in slots:
        limiter.release(slot)
    started = time.monotonic()
    slot = hold()  # another caller waits the cool-down out too
    assert time.monotonic() - started >= 0.3
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
def test_a_retry_after_longer_than_the_wait_budget_fails_at_once(fake_anthropic, settings):
    settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS = 1
    fake_anthropic.script(("status", 429, {"retry-after": "30"}))
    started = time.monotonic()
    with pytest.raises(gateway.GatewayError, match=r"429 Too Many Requests: .*retry-after 30 s"):
        gateway.complete(echo_request())
    assert time.monotonic() - started < 5
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
