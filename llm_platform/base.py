"""The provider interface every model call goes through (see gateway.complete)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from llm_platform.ir.render import render_text

if TYPE_CHECKING:
    from llm_platform.ir.types import ContextEnvelope

DEFAULT_MAX_TOKENS = 8192


@dataclass(frozen=True)
class LLMRequest:
    task: str  # what the call is for, e.g. "per_file_digest"; recorded in LLMCall.task
    system: str  # system prompt text
    prompt: str  # the user message: the task envelope (starts with "TASK: ...")
    max_tokens: int = DEFAULT_MAX_TOKENS
    # When set, providers send it in their own shape (document/image blocks, image parts);
    # `prompt` is then its rendered text, for providers that only read text.
    envelope: ContextEnvelope | None = None
    # The task's full JSON Schema (prompts/schemas): providers that constrain their output
    # send an accepted copy of it (output_schema.sent_schema); validation still uses all of it.
    output_schema: dict | None = None
    # The envelope's context is sent again in later calls (a conversation's files): providers
    # with prompt caching mark it, as they always mark the system prompt.
    cache_context: bool = False

    @classmethod
    def from_envelope(
        cls,
        task: str,
        system: str,
        envelope: ContextEnvelope,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        cache_context: bool = False,
    ) -> LLMRequest:
        return cls(
            task=task,
            system=system,
            prompt=render_text(envelope),
            max_tokens=max_tokens,
            envelope=envelope,
            cache_context=cache_context,
        )


@dataclass(frozen=True)
class LLMResponse:
    text: str
    input_tokens: int  # uncached input: what the provider bills at the full input price
    output_tokens: int
    model: str
    # Prompt caching: input read from the provider's cache, and input written to it
    # (Anthropic's cache_read_input_tokens / cache_creation_input_tokens; billed apart).
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class ProviderError(Exception):
    """A provider failed. `retryable` errors (429, 5xx, timeouts) are retried with backoff.

    `status` is the HTTP status of an error answer; `retry_after` (seconds) is what the
    service asked us to wait, from its `retry-after-ms` or `retry-after` header.
    """

    def __init__(
        self, message: str, *, retryable: bool = False, status: int | None = None, retry_after: float | None = None
    ):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after

    @property
    def rate_limited(self) -> bool:
        """429 Too Many Requests or 529 Overloaded: the service asks every caller to slow down."""
        return self.status in RATE_LIMIT_STATUSES


# What the vendors' SDKs themselves retry: 408 timeout, 409 lock, 429 rate limit, any 5xx (529 overloaded).
RETRYABLE_STATUSES = frozenset({408, 409, 429})
RATE_LIMIT_STATUSES = frozenset({429, 529})
MAX_RETRY_AFTER_SECONDS = 3600.0


def http_status_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> ProviderError:
    """The ProviderError for an HTTP error answer, retryable when a retry can help."""
    try:
        line = f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        line = f"{status} Overloaded" if status == 529 else str(status)
    retry_after = retry_after_seconds(headers or {})
    if retry_after is not None:
        message = f"{message} (retry-after {retry_after:g} s)"
    return ProviderError(
        f"{line}: {message}"[:600],
        retryable=status in RETRYABLE_STATUSES or status >= 500,
        status=status,
        retry_after=retry_after,
    )


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """`retry-after-ms`, else `retry-after` (seconds, or an HTTP date), as seconds; None when absent or unusable."""
    headers = {k.lower(): v for k, v in headers.items()}
    seconds = None
    try:
        if headers.get("retry-after-ms"):
            seconds = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after"):
            value = headers["retry-after"].strip()
            try:
                seconds = float(value)
            except ValueError:
                seconds = (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError, OverflowError):
        return None
    if seconds is None or seconds != seconds:  # NaN
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER_SECONDS)


@contextmanager
def sdk_errors(sdk: ModuleType, status_message: Callable[[Exception], str]) -> Iterator[None]:
    """An official vendor SDK's errors (`anthropic`, `openai`: the same error classes) as ProviderErrors.

    Timeouts and failed connections are retryable, HTTP errors by their status
    (`status_message` reads the error's message), anything else the SDK raises is not.
    """
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise ProviderError("request timed out", retryable=True) from exc
    except sdk.APIConnectionError as exc:
        raise ProviderError(f"connection failed: {exc}", retryable=True) from exc
    except sdk.APIStatusError as exc:
        headers = getattr(getattr(exc, "response", None), "headers", None)
        raise http_status_error(exc.status_code, status_message(exc), headers) from exc
    except sdk.APIError as exc:  # e.g. a response the SDK could not parse
        raise ProviderError(f"unusable response: {exc}", retryable=False) from exc


TextSink = Callable[[str], None]  # receives each piece of a streamed answer's text, in order


class Provider(Protocol):
    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...

    def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """`complete`, with each piece of the answer's text passed to `on_text` as it arrives."""
        ...


class BatchProvider(Provider, Protocol):
    """A provider with a batch API (anthropic): requests answered later, at a discount."""

    def submit_batch(self, requests: dict[str, LLMRequest]) -> str: ...

    def batch_results(self, batch_id: str) -> dict[str, LLMResponse | ProviderError] | None: ...
