"""The one way to call a model: pick the provider, retry what is worth retrying, record every call.

settings.GROUNDWORK_LLM picks the provider: "offline" (llm_platform.offline),
"anthropic", "openai" (an OpenAI-compatible server), or the dotted path of a
provider class built without arguments, e.g. "tests.scripted_provider.ScriptedProvider".
A provider has a `name`, a `model`, `complete(LLMRequest) -> LLMResponse` and
`stream(LLMRequest, on_text) -> LLMResponse`, the same call streamed (base.Provider);
it raises ProviderError, retryable or not. Every call first takes
a slot under the provider's limits (limiter: calls in flight, tokens a minute,
429 cool-downs, shared by every process through Redis).
"""

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from llm_platform import limiter, spending
from llm_platform.base import LLMRequest, LLMResponse, Provider, ProviderError
from llm_platform.ir.tokens import estimate_tokens
from llm_platform.models import LLMCall

logger = logging.getLogger(__name__)

_providers: dict[str, Provider] = {}
_building = threading.Lock()

MAX_BACKOFF_SECONDS = 60.0


@dataclass(frozen=True)
class GatewayResult:
    response: LLMResponse
    call: LLMCall


class GatewayError(Exception):
    """The call failed for good (after retries); the message is safe to show."""


class SpendingCapReached(GatewayError):
    """The call was not made: it could take the session past its spending cap (llm_platform.spending)."""


def _build(name: str) -> Provider:
    """The provider `name` stands for: "offline", "anthropic", "openai", or the dotted path of a class
    that is built without arguments (e.g. the tests' scripted provider).

    Each provider is imported only when it is the one configured: an SDK (anthropic, openai)
    costs its import time and memory in every process only where it is used."""
    if name == "offline":
        from llm_platform.offline import OfflineProvider

        return OfflineProvider()
    if name == "anthropic":
        from llm_platform.anthropic_provider import AnthropicProvider

        if not settings.ANTHROPIC_API_KEY:
            raise ImproperlyConfigured("GROUNDWORK_LLM=anthropic needs ANTHROPIC_API_KEY")
        key, url, model = settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL, settings.GROUNDWORK_ANTHROPIC_MODEL
        return _sdk_provider(AnthropicProvider, key, url, model)
    if name == "openai":
        from llm_platform.openai_provider import OpenAICompatibleProvider

        if not settings.OPENAI_BASE_URL and not settings.OPENAI_API_KEY:
            raise ImproperlyConfigured("GROUNDWORK_LLM=openai needs OPENAI_BASE_URL (local server) or OPENAI_API_KEY")
        key, url, model = settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL, settings.GROUNDWORK_OPENAI_MODEL
        return _sdk_provider(OpenAICompatibleProvider, key, url, model)
    if "." in name:
        try:
            provider_class = import_string(name)
        except ImportError as exc:
            raise ImproperlyConfigured(f"GROUNDWORK_LLM {name!r} cannot be imported: {exc}") from exc
        return provider_class()
    raise ImproperlyConfigured(
        f"unknown GROUNDWORK_LLM {name!r}; known providers: anthropic, offline, openai, "
        "or the dotted path of a provider class"
    )


def _sdk_provider(provider_class: type, api_key: str, base_url: str, model: str) -> Provider:
    """A provider over a vendor's official SDK: both take the same arguments."""
    return provider_class(
        api_key=api_key, base_url=base_url or None, model=model, timeout=settings.GROUNDWORK_LLM_TIMEOUT_SECONDS
    )


def get_provider(name: str | None = None) -> Provider:
    name = name or settings.GROUNDWORK_LLM
    if name not in _providers:
        with _building:  # the llm worker's threads all start at once: one builds, the others wait
            if name not in _providers:
                _providers[name] = _build(name)
    return _providers[name]


def reset_providers() -> None:
    """Forget built providers and the limiter's counts (tests and settings changes)."""
    _providers.clear()
    limiter.reset()


def complete(
    request: LLMRequest,
    *,
    prompt_version: str = "",
    subject: str = "",
    session_id=None,
    run_id=None,
    attempt: int = 1,
    provider: Provider | None = None,
    before_call: Callable[[LLMRequest], None] | None = None,
    on_partial: Callable[[str], None] | None = None,
) -> GatewayResult:
    """One model call: a slot under the provider's limits (limiter), retries, an LLMCall row per attempt.

    Each attempt that fails and is retried is a row of its own (`throttled` for a 429/529,
    `transient` for a timeout, a lost connection or a 5xx); the answer (or the final
    failure) is one more row whose `retries` counts them. A 429/529 that says when to come
    back (retry-after) is waited out, at least that long, for up to
    GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS in all, without using up
    GROUNDWORK_LLM_MAX_RETRIES: a storm of them slows the calls down instead of failing them.

    `before_call(request)` runs before every try: a caller's last word, it may raise to stop
    (e.g. a research run that was cancelled, or whose token budget the call could pass).
    A call that could take its session past the session's spending cap is not made
    (SpendingCapReached, no LLMCall row: nothing was sent); one that may holds its most
    against the cap until its row is written (llm_platform.spending).

    With `on_partial` the answer is streamed (`provider.stream`): it is called with
    the answer's text received so far each time more arrives. What it sees is
    provisional: a retried attempt starts again from its first piece, and only the
    returned response is checked and kept.
    """
    provider = provider or get_provider()
    record = _record(request, provider, prompt_version, subject, session_id, attempt, run_id=run_id)
    try:
        with spending.held_within_cap(session_id, provider.name, provider.model, request):
            return _attempts(request, record, provider, before_call, on_partial)
    except spending.OverSpendingCap as exc:
        raise SpendingCapReached(str(exc)) from exc


def _attempts(
    request: LLMRequest,
    record: dict,
    provider: Provider,
    before_call: Callable[[LLMRequest], None] | None,
    on_partial: Callable[[str], None] | None,
) -> GatewayResult:
    """complete's tries, until an answer or a failure for good."""
    retries = 0  # every retry, recorded on the answer's row
    backoffs = 0  # retries that use up GROUNDWORK_LLM_MAX_RETRIES (no retry-after to go by)
    rate_limit_waited = 0.0
    started = time.monotonic()
    # Only a tokens-a-minute limit needs the estimate (counting words of a long prompt takes time).
    tpm = settings.GROUNDWORK_LLM_TOKENS_PER_MINUTE
    estimated = estimate_tokens(request.system) + estimate_tokens(request.prompt) if tpm else 0
    while True:
        if before_call is not None:
            before_call(request)
        try:
            slot = limiter.acquire(provider.name, estimated)
        except limiter.LimitWaitExceeded as exc:
            after = f" after {retries} retries" if retries else ""
            _record_failure(record, retries, started, str(exc))
            raise GatewayError(f"{provider.name}: {exc}{after}") from exc
        attempt_started = time.monotonic()
        try:
            response = provider.complete(request) if on_partial is None else _streamed(provider, request, on_partial)
        except ProviderError as exc:
            wait = None
            if exc.retryable:
                budget = settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS - rate_limit_waited
                if exc.rate_limited and exc.retry_after is not None:
                    if exc.retry_after <= budget:  # else: longer than we wait in all, fail now
                        wait = exc.retry_after + random.uniform(0, min(1.0, exc.retry_after / 4 + 0.05))
                        rate_limit_waited += wait
                elif backoffs < settings.GROUNDWORK_LLM_MAX_RETRIES:
                    backoffs += 1
                    wait = max(_backoff(backoffs), exc.retry_after or 0.0)
            if exc.rate_limited:
                limiter.throttled(slot, wait if wait is not None else _backoff(1))
            limiter.release(slot, used_tokens=0 if exc.rate_limited else None)
            if wait is None:
                after = f" after {retries} retries" if retries else ""
                _record_failure(record, retries, started, str(exc), slot=slot, status=exc.status)
                raise GatewayError(f"{provider.name}: {exc}{after}") from exc
            retries += 1
            _record_retried_attempt(record, exc, attempt_started, slot)
            time.sleep(wait)
            continue
        except Exception as exc:
            limiter.release(slot)
            # A provider bug (e.g. an offline handler crashing on an envelope) still gets
            # its LLMCall row, and callers see the one failure type they handle.
            logger.exception("%s provider raised unexpectedly on %s", provider.name, request.task)
            _record_failure(record, retries, started, f"{type(exc).__name__}: {exc}", slot=slot)
            raise GatewayError(f"{provider.name}: internal error ({type(exc).__name__})") from exc
        limiter.release(slot, used_tokens=response.input_tokens + response.output_tokens, succeeded=True)
        break
    call = LLMCall.objects.create(
        **_answered(record, response),
        retries=retries,
        outcome=LLMCall.Outcome.RETRIED if retries else LLMCall.Outcome.OK,
        latency_ms=_ms_since(started),
        waited_ms=int(slot.waited * 1000),
    )
    return GatewayResult(response=response, call=call)


def _streamed(provider: Provider, request: LLMRequest, on_partial: Callable[[str], None]) -> LLMResponse:
    received: list[str] = []

    def on_text(piece: str) -> None:
        received.append(piece)
        on_partial("".join(received))

    return provider.stream(request, on_text)


def record_batch_answer(
    request: LLMRequest,
    answer: LLMResponse | ProviderError,
    *,
    provider: Provider,
    prompt_version: str = "",
    subject: str = "",
    session_id=None,
) -> GatewayResult:
    """A request answered through a batch API (batch_ingest), recorded as complete() records a call,
    with batch=True (billed at GROUNDWORK_LLM_BATCH_DISCOUNT). A request the batch did not answer
    is a failed row, and GatewayError."""
    record = {**_record(request, provider, prompt_version, subject, session_id, 1), "batch": True}
    if isinstance(answer, ProviderError):
        LLMCall.objects.create(**record, outcome=LLMCall.Outcome.FAILED, error=str(answer)[:2000])
        raise GatewayError(f"{provider.name}: {answer}")
    call = LLMCall.objects.create(**_answered(record, answer), outcome=LLMCall.Outcome.OK)
    return GatewayResult(response=answer, call=call)


def _record(
    request: LLMRequest, provider: Provider, prompt_version: str, subject: str, session_id, attempt: int, run_id=None
):
    """The fields of every LLMCall row of a request."""
    return dict(
        task=request.task,
        attempt=attempt,
        provider=provider.name,
        model=provider.model,
        prompt_version=prompt_version,
        subject=subject,
        session_id=session_id,
        run_id=run_id,
    )


def _answered(record: dict, response: LLMResponse) -> dict:
    """The row's fields with what an answer says: the model that answered, its tokens by kind."""
    return {
        **record,
        "model": response.model or record["model"],
        "input_tokens": response.input_tokens,
        "output_tokens": response.output_tokens,
        "cache_read_input_tokens": response.cache_read_input_tokens,
        "cache_creation_input_tokens": response.cache_creation_input_tokens,
    }


def _record_retried_attempt(record: dict, exc: ProviderError, attempt_started: float, slot: limiter.Slot) -> None:
    LLMCall.objects.create(
        **record,
        outcome=LLMCall.Outcome.THROTTLED if exc.rate_limited else LLMCall.Outcome.TRANSIENT,
        status_code=exc.status,
        error=str(exc)[:2000],
        latency_ms=_ms_since(attempt_started),
        waited_ms=int(slot.waited * 1000),
    )


def _record_failure(
    record: dict, retries: int, started: float, error: str, *, slot: limiter.Slot | None = None, status=None
) -> None:
    LLMCall.objects.create(
        **record,
        retries=retries,
        outcome=LLMCall.Outcome.FAILED,
        error=error[:2000],
        status_code=status,
        latency_ms=_ms_since(started),
        waited_ms=int(slot.waited * 1000) if slot else 0,
    )


def mark_invalid(call: LLMCall, errors: list[str]) -> None:
    call.outcome = LLMCall.Outcome.INVALID
    call.error = "\n".join(errors)[:4000]
    call.save(update_fields=["outcome", "error"])


def _backoff(retry: int) -> float:
    """Exponential from the configured base, jittered so parallel workers don't retry in step."""
    base = settings.GROUNDWORK_LLM_BACKOFF_SECONDS
    return min(base * (2 ** (retry - 1)), MAX_BACKOFF_SECONDS) * (1 + random.random() / 2)


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
