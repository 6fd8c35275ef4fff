"""OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, LM Studio) through the official SDK.

Local servers speak the same protocol at their own base URL, e.g. Ollama at
http://localhost:11434/v1. Retries are the gateway's, so they are counted.
"""

from typing import Any

import openai

from ..ir.adapters import to_openai
from .base import LLMRequest, LLMResponse, ProviderError, TextSink, sdk_errors


class OpenAICompatibleProvider:
    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None, model: str, timeout: float):
        self.model = model
        # Local servers ignore the key, but the SDK insists on one.
        self.client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url or None, max_retries=0, timeout=timeout
        )

    def complete(self, request: LLMRequest) -> LLMResponse:
        with sdk_errors(openai, lambda exc: exc.message):
            completion = self.client.chat.completions.create(**self._params(request))
        if not completion.choices:
            raise ProviderError("response had no choices", retryable=True)
        usage = completion.usage
        return LLMResponse(
            text=completion.choices[0].message.content or "",
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            model=completion.model or self.model,
        )

    def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """The same request as `complete` with stream=True; each chunk's content goes to `on_text`.
        The usage comes in a last chunk without choices (stream_options.include_usage)."""
        pieces: list[str] = []
        usage, model = None, ""
        with sdk_errors(openai, lambda exc: exc.message):
            chunks = self.client.chat.completions.create(
                **self._params(request), stream=True, stream_options={"include_usage": True}
            )
            for chunk in chunks:
                model = chunk.model or model
                usage = chunk.usage or usage
                text = chunk.choices[0].delta.content if chunk.choices else None
                if text:
                    pieces.append(text)
                    on_text(text)
        if not model:
            raise ProviderError("the stream ended without a chunk", retryable=True)
        return LLMResponse(
            text="".join(pieces),
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            model=model or self.model,
        )

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        """The Chat Completions request, one for both `complete` and `stream`."""
        return {"model": self.model, "max_tokens": request.max_tokens, "messages": self._messages(request)}

    def _messages(self, request: LLMRequest) -> list[dict[str, Any]]:
        if request.envelope is None:
            return [{"role": "system", "content": request.system}, {"role": "user", "content": request.prompt}]
        # Only the messages: the limit stays max_tokens, the parameter the text path sends too.
        body = to_openai(request.envelope, system=request.system, model=self.model, max_tokens=request.max_tokens)
        return body["messages"]
