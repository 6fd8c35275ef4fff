"""Anthropic Messages API through the official SDK. Retries are the gateway's, so they are counted.

Every request marks its stable prefix for prompt caching (ir.adapters: the system
prompt, and an envelope's context where it comes again) and, when the task has a JSON Schema, sends an
accepted copy of it as the output format (structured outputs: `output_config`).
"""

from typing import Any

import anthropic
from django.conf import settings

from llm_platform.base import LLMRequest, LLMResponse, ProviderError, TextSink, sdk_errors
from llm_platform.ir.adapters import anthropic_system, to_anthropic
from llm_platform.output_schema import sent_schema


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, *, api_key: str, base_url: str | None, model: str, timeout: float):
        self.model = model
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url or None, max_retries=0, timeout=timeout)

    def complete(self, request: LLMRequest) -> LLMResponse:
        with sdk_errors(anthropic, _message):
            message = self.client.messages.create(**self.params(request))
        return self.response(message)

    def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """The same request as `complete`, streamed (server-sent events); the text deltas go to `on_text`."""
        with sdk_errors(anthropic, _message), self.client.messages.stream(**self.params(request)) as stream:
            for text in stream.text_stream:
                on_text(text)
            message = stream.get_final_message()
        return self.response(message)

    def params(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API parameters of a request (a batch sends the same ones)."""
        cache = settings.GROUNDWORK_LLM_PROMPT_CACHE
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": anthropic_system(request.system, cache=cache),
            "messages": self._messages(request, cache=cache),
        }
        if request.output_schema is not None:
            params["output_config"] = {"format": {"type": "json_schema", "schema": sent_schema(request.output_schema)}}
        return params

    def response(self, message: anthropic.types.Message) -> LLMResponse:
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        usage = message.usage
        return LLMResponse(
            text=text,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            model=message.model or self.model,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        )

    def submit_batch(self, requests: dict[str, LLMRequest]) -> str:
        """Send requests through the Message Batches API (billed at half price); its batch id.

        Each keeps its parameters (output format, cache breakpoints); `requests` maps a
        custom_id (letters, digits, _ and -) to the request."""
        with sdk_errors(anthropic, _message):
            batch = self.client.messages.batches.create(
                requests=[{"custom_id": custom_id, "params": self.params(r)} for custom_id, r in requests.items()]
            )
        return batch.id

    def batch_results(self, batch_id: str) -> dict[str, LLMResponse | ProviderError] | None:
        """None while the batch is processing; then each custom_id's answer, or why it has none."""
        with sdk_errors(anthropic, _message):
            if self.client.messages.batches.retrieve(batch_id).processing_status != "ended":
                return None
            results: dict[str, LLMResponse | ProviderError] = {}
            for item in self.client.messages.batches.results(batch_id):
                if item.result.type == "succeeded":
                    results[item.custom_id] = self.response(item.result.message)
                else:  # errored, canceled, expired
                    error = getattr(getattr(getattr(item.result, "error", None), "error", None), "message", "")
                    results[item.custom_id] = ProviderError(f"batch request {item.result.type} {error}".strip())
        return results

    def _messages(self, request: LLMRequest, *, cache: bool) -> list[dict[str, Any]]:
        if request.envelope is None:
            return [{"role": "user", "content": request.prompt}]
        body = to_anthropic(
            request.envelope,
            system=request.system,
            model=self.model,
            max_tokens=request.max_tokens,
            cache=cache,
            cache_context=request.cache_context,
        )
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
