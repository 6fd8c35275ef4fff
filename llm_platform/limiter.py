"""The provider's limits, shared by every process: calls in flight, tokens a minute, and its 429s.

Model calls are network-bound, so a worker host keeps many in flight (the `llm`
worker's thread pool); what bounds them is the provider's account, which is one
for the whole deployment. The counts therefore live in Redis (the broker every
worker and web process already reaches), per provider name:

- calls in flight: a sorted set of leases (token → expiry), at most
  GROUNDWORK_LLM_MAX_IN_FLIGHT; a lease outlives its call by little, so a
  process that died mid-call frees its slot by itself;
- tokens a minute: a token bucket of GROUNDWORK_LLM_TOKENS_PER_MINUTE (input
  estimated before the call, corrected by the usage the answer reports);
- a cool-down: a 429/529 stops every process from calling until its
  retry-after has passed, and lowers the calls in flight by a quarter (raised
  again by one per limit's worth of successful calls), so a storm of 429s slows
  the pipeline down instead of failing files.

Two priorities share the budget. Calls made inside `bulk()` (Task A and B: an
ingest) yield to interactive calls (chat turns, research steps, the default):
while an interactive call waits, no bulk call gets a slot or tokens, and bulk
calls never hold the GROUNDWORK_LLM_INTERACTIVE_RESERVE slots kept free for
interactive ones. Redis being unreachable does not stop model calls: the limits
are then not applied (logged).
"""

from __future__ import annotations

import contextvars
import logging
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis
from django.conf import settings

from workspaces import shared_redis

logger = logging.getLogger(__name__)

INTERACTIVE = "interactive"
BULK = "bulk"
KEY_PREFIX = "groundwork:llm:"
POLL_SECONDS = 0.1  # how often a waiting call looks again for a slot freed by another process
LEASE_MARGIN_SECONDS = 30.0  # a lease outlives the call's own timeout by this much
ADAPTIVE_TTL_MS = 600_000  # a lowered limit left alone this long is forgotten
UNLIMITED = 1_000_000  # GROUNDWORK_LLM_MAX_IN_FLIGHT = 0 with a tokens-a-minute limit

_priority: contextvars.ContextVar[str] = contextvars.ContextVar("groundwork_llm_priority", default=INTERACTIVE)
_released = threading.Condition()  # wakes this process's waiters when one of its calls ends


class LimitWaitExceeded(Exception):
    """A call waited longer than GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS for the provider's limits."""


@contextmanager
def bulk() -> Iterator[None]:
    """Model calls made in here are bulk work (an ingest's digests): they yield to interactive calls."""
    token = _priority.set(BULK)
    try:
        yield
    finally:
        _priority.reset(token)


def current_priority() -> str:
    return _priority.get()


@dataclass
class Slot:
    provider: str
    token: str
    priority: str
    tokens: int  # tokens taken from the bucket for this call (its estimate)
    waited: float  # seconds spent waiting for the slot, tokens or a cool-down
    held: bool = True  # False: the limits were not applied (off, or Redis unreachable)


# --- Lua: each step is one atomic round trip, on the Redis server's clock ---------------

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: in flight, bulk in flight, cool-down, adaptive limit, token bucket, interactive waiters
# ARGV: token, lease ms, limit, reserve, bulk?, tokens wanted, tokens a minute, waiter margin ms
# → {granted, wait ms, reason}: reason 1 cool-down, 2 tokens, 3 an interactive call is waiting, 0 slots
_ACQUIRE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
local bulk = ARGV[5] == '1'
local function waiting(wait, reason)
  -- an interactive call says it is waiting (until about when it looks again): bulk calls hold back
  if not bulk then redis.call('ZADD', KEYS[6], now + math.ceil(wait * 1.3) + tonumber(ARGV[8]), ARGV[1]) end
  return {0, wait, reason}
end
local cool = tonumber(redis.call('GET', KEYS[3]) or '0')
if cool > now then return waiting(cool - now, 1) end
local configured = tonumber(ARGV[3])
local limit = configured
local adaptive = tonumber(redis.call('GET', KEYS[4]) or '0')
if adaptive > 0 and adaptive < limit then limit = math.max(1, math.floor(adaptive)) end
local reserve = tonumber(ARGV[4])
if bulk then
  if redis.call('ZCARD', KEYS[6]) > 0 then return {0, 0, 3} end
  if redis.call('ZCARD', KEYS[2]) >= math.max(1, limit - reserve) then return {0, 0, 0} end
end
if redis.call('ZCARD', KEYS[1]) >= limit then return waiting(0, 0) end
local tpm = tonumber(ARGV[7])
if tpm > 0 then
  local floor = 0
  if bulk then floor = tpm * reserve / configured end
  local want = math.min(tonumber(ARGV[6]), tpm - floor)
  local level = tonumber(redis.call('HGET', KEYS[5], 'level') or ARGV[7])
  local ts = tonumber(redis.call('HGET', KEYS[5], 'ts') or now)
  level = math.min(tpm, level + (now - ts) * tpm / 60000)
  if level - want < floor then return waiting(math.ceil((want + floor - level) * 60000 / tpm), 2) end
  redis.call('HSET', KEYS[5], 'level', tostring(level - want), 'ts', now)
  redis.call('PEXPIRE', KEYS[5], 120000)
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if bulk then redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) end
redis.call('ZREM', KEYS[6], ARGV[1])
return {1, 0, 0}
"""
)

# KEYS: in flight, bulk in flight, token bucket, adaptive limit
# ARGV: token, tokens to give back (negative: to take), succeeded?, configured limit
_RELEASE = (
    """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local back = tonumber(ARGV[2])
if back ~= 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HINCRBYFLOAT', KEYS[3], 'level', back)
end
if ARGV[3] == '1' then
  local adaptive = tonumber(redis.call('GET', KEYS[4]) or '0')
  if adaptive > 0 then
    adaptive = adaptive + 1 / adaptive
    if adaptive >= tonumber(ARGV[4]) then
      redis.call('DEL', KEYS[4])
    else
      redis.call('SET', KEYS[4], tostring(adaptive), 'PX', %d)
    end
  end
end
return 1
"""
    % ADAPTIVE_TTL_MS
)

# KEYS: cool-down, adaptive limit, in flight
# ARGV: cool-down ms, configured limit
_THROTTLED = (
    _NOW
    + """
local until_ms = now + tonumber(ARGV[1])
local cool = tonumber(redis.call('GET', KEYS[1]) or '0')
if cool <= now then
  -- a new storm: a quarter fewer calls in flight than were when the provider said no
  local adaptive = tonumber(redis.call('GET', KEYS[2]) or ARGV[2])
  local base = math.min(adaptive, math.max(1, redis.call('ZCARD', KEYS[3])))
  redis.call('SET', KEYS[2], tostring(math.max(1, base * 0.75)), 'PX', %d)
end
if until_ms > cool then redis.call('SET', KEYS[1], until_ms, 'PX', math.max(1, until_ms - now)) end
return 1
"""
    % ADAPTIVE_TTL_MS
)


def _client() -> redis.Redis:
    return shared_redis.client()


def _keys(provider: str) -> dict[str, str]:
    base = f"{KEY_PREFIX}{provider}:"
    names = ("inflight", "bulk", "cooldown", "adaptive", "tokens", "waiting")
    return {name: base + name for name in names}


def _limit() -> int:
    return max(0, settings.GROUNDWORK_LLM_MAX_IN_FLIGHT) or UNLIMITED


def acquire(provider: str, estimated_tokens: int) -> Slot:
    """Wait for a slot (and tokens) for one call to `provider`; release() it when the call ends."""
    priority = current_priority()
    tpm = max(0, settings.GROUNDWORK_LLM_TOKENS_PER_MINUTE)
    token = uuid.uuid4().hex
    if settings.GROUNDWORK_LLM_MAX_IN_FLIGHT <= 0 and not tpm:
        return Slot(provider, token, priority, 0, 0.0, held=False)
    limit = _limit()
    keys = _keys(provider)
    started = time.monotonic()
    budget = settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS
    lease = settings.GROUNDWORK_LLM_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS
    reserve = min(max(0, settings.GROUNDWORK_LLM_INTERACTIVE_RESERVE), limit - 1)
    args = [token, int(lease * 1000), limit, reserve, int(priority == BULK), estimated_tokens, tpm]
    margin_ms = int(POLL_SECONDS * 3000)
    while True:
        try:
            granted, wait_ms, _reason = _client().eval(_ACQUIRE, 6, *keys.values(), *args, margin_ms)
        except redis.RedisError as exc:
            logger.warning("model call limits not applied (Redis: %s)", exc)
            return Slot(provider, token, priority, 0, time.monotonic() - started, held=False)
        waited = time.monotonic() - started
        if granted:
            return Slot(provider, token, priority, min(estimated_tokens, tpm) if tpm else 0, waited)
        if waited >= budget:
            _forget_waiter(keys, token)
            raise LimitWaitExceeded(f"waited {waited:.0f} s for the provider's rate limits")
        # A cool-down or an empty bucket says how long; a full house is polled (and woken by a local release).
        pause = wait_ms / 1000 if wait_ms else POLL_SECONDS
        pause = min(pause * (1 + random.random() / 4) + random.random() * 0.01, budget - waited + 0.01)
        with _released:
            _released.wait(timeout=max(0.001, pause))


def _forget_waiter(keys: dict[str, str], token: str) -> None:
    try:
        _client().zrem(keys["waiting"], token)
    except redis.RedisError:
        pass


def release(slot: Slot, *, used_tokens: int | None = None, succeeded: bool = False) -> None:
    """The call ended: free its slot; `used_tokens` (what the answer reports) corrects the estimate."""
    if not slot.held:
        return
    back = slot.tokens - used_tokens if used_tokens is not None and slot.tokens else 0
    keys = _keys(slot.provider)
    try:
        _client().eval(
            _RELEASE,
            4,
            keys["inflight"],
            keys["bulk"],
            keys["tokens"],
            keys["adaptive"],
            slot.token,
            back,
            int(succeeded),
            _limit(),
        )
    except redis.RedisError as exc:
        logger.warning("could not release a model call slot (Redis: %s); its lease will expire", exc)
    with _released:
        _released.notify_all()


def throttled(slot: Slot, wait_seconds: float) -> None:
    """The provider answered 429/529: nobody calls it for `wait_seconds`, and fewer calls go in flight."""
    if not slot.held:
        return
    keys = _keys(slot.provider)
    try:
        _client().eval(
            _THROTTLED, 3, keys["cooldown"], keys["adaptive"], keys["inflight"], int(wait_seconds * 1000), _limit()
        )
    except redis.RedisError as exc:
        logger.warning("could not record a rate limit (Redis: %s)", exc)


def state(provider: str) -> dict:
    """What the limiter holds for `provider` now (for tests, benchmarks and an operator's shell)."""
    keys = _keys(provider)
    client = _client()
    seconds, micros = client.time()
    now = seconds * 1000 + micros // 1000
    cooldown = int(client.get(keys["cooldown"]) or 0)
    adaptive = client.get(keys["adaptive"])
    return {
        "in_flight": client.zcount(keys["inflight"], now, "+inf"),
        "bulk_in_flight": client.zcount(keys["bulk"], now, "+inf"),
        "interactive_waiting": client.zcount(keys["waiting"], now, "+inf"),
        "cooldown_seconds": max(0, cooldown - now) / 1000,
        "adaptive_limit": float(adaptive) if adaptive else None,
        "tokens": client.hget(keys["tokens"], "level"),
    }


def reset() -> None:
    """Forget every provider's counts (tests, and a settings change)."""
    try:
        client = _client()
        for key in client.scan_iter(match=f"{KEY_PREFIX}*"):
            client.delete(key)
    except redis.RedisError:
        pass
