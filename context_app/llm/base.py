"""The provider interface every model call goes through (see gateway.complete)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from ..ir.render import render_text

if TYPE_CHECKING:
    from ..ir.types import ContextEnvelope

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

    @classmethod
    def from_envelope(
        cls, task: str, system: str, envelope: ContextEnvelope, *, max_tokens: int = DEFAULT_MAX_TOKENS
    ) -> LLMRequest:
        return cls(task=task, system=system, prompt=render_text(envelope), max_tokens=max_tokens, envelope=envelope)


@dataclass(frozen=True)
class LLMResponse:
    text: str
    input_tokens: int
    output_tokens: int
    model: str


class ProviderError(Exception):
    """A provider failed. `retryable` errors (429, 5xx, timeouts) are retried with backoff."""

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable


# What the vendors' SDKs themselves retry: 408 timeout, 409 lock, 429 rate limit, any 5xx (529 overloaded).
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def http_status_error(status: int, message: str) -> ProviderError:
    """The ProviderError for an HTTP error answer, retryable when a retry can help."""
    try:
        line = f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        line = f"{status} Overloaded" if status == 529 else str(status)
    return ProviderError(f"{line}: {message}"[:600], retryable=status in RETRYABLE_STATUSES or status >= 500)


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
        raise http_status_error(exc.status_code, status_message(exc)) from exc
    except sdk.APIError as exc:  # e.g. a response the SDK could not parse
        raise ProviderError(f"unusable response: {exc}", retryable=False) from exc


class Provider(Protocol):
    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...
