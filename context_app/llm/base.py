"""The provider interface every model call goes through (see gateway.complete)."""

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class LLMRequest:
    task: str  # what the call is for, e.g. "per_file_digest"; recorded in LLMCall.task
    system: str  # system prompt text
    prompt: str  # the user message: the task envelope (starts with "TASK: ...")
    max_tokens: int = 8192


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


class Provider(Protocol):
    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...
