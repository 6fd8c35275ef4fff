"""Anthropic Messages API through the official SDK. Retries are the gateway's, so they are counted."""

from typing import Any

import anthropic

from ..ir.adapters import to_anthropic
from .base import LLMRequest, LLMResponse, TextSink, sdk_errors


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, *, api_key: str, base_url: str | None, model: str, timeout: float):
        self.model = model
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url or None, max_retries=0, timeout=timeout)

    def complete(self, request: LLMRequest) -> LLMResponse:
        with sdk_errors(anthropic, _message):
            message = self.client.messages.create(**self._params(request))
        return self._response(message)

    def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """The same request as `complete`, streamed (server-sent events); the text deltas go to `on_text`."""
        with sdk_errors(anthropic, _message), self.client.messages.stream(**self._params(request)) as stream:
            for text in stream.text_stream:
                on_text(text)
            message = stream.get_final_message()
        return self._response(message)

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API request, one for both `complete` and `stream`."""
        return {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "messages": self._messages(request),
        }

    def _response(self, message: Any) -> LLMResponse:
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        return LLMResponse(
            text=text,
            input_tokens=message.usage.input_tokens,
            output_tokens=message.usage.output_tokens,
            model=message.model or self.model,
        )

    def _messages(self, request: LLMRequest) -> list[dict[str, Any]]:
        if request.envelope is None:
            return [{"role": "user", "content": request.prompt}]
        body = to_anthropic(request.envelope, system=request.system, model=self.model, max_tokens=request.max_tokens)
        return body["messages"]

    def count_tokens(self, system: str, prompt: str) -> int | None:
        """Exact input tokens when the API offers counting; None lets callers estimate."""
        try:
            result = self.client.messages.count_tokens(
                model=self.model, system=system, messages=[{"role": "user", "content": prompt}]
            )
            return result.input_tokens
        except Exception:  # best effort: the budget falls back to an estimate
            return None


def _message(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(error.get("message") or exc.message)[:500]
