"""OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, LM Studio) through the official SDK.

Local servers speak the same protocol at their own base URL, e.g. Ollama at
http://localhost:11434/v1. Retries are the gateway's, so they are counted.

Structured outputs: a task's JSON Schema goes as `response_format` json_schema
(an accepted copy, output_schema.sent_schema). Servers differ: OpenAI and recent
Ollama and vLLM constrain the answer to it, some versions refuse the parameter
with a 400. After such a refusal this provider asks that server in plain words
instead (the schema in the system prompt) for the rest of the process.
"""

import json
from typing import Any

import openai

from llm_platform.base import LLMRequest, LLMResponse, ProviderError, TextSink, sdk_errors
from llm_platform.ir.adapters import to_openai
from llm_platform.output_schema import sent_schema


class OpenAICompatibleProvider:
    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None, model: str, timeout: float):
        self.model = model
        # Local servers ignore the key, but the SDK insists on one.
        self.client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url or None, max_retries=0, timeout=timeout
        )
        self.accepts_json_schema = True  # until the server refuses response_format json_schema

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self._structured_or_in_words(request, self._complete)

    def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """The same request as `complete` with stream=True; each chunk's content goes to `on_text`.
        The usage comes in a last chunk without choices (stream_options.include_usage)."""
        return self._structured_or_in_words(request, lambda params: self._stream(params, on_text))

    def _structured_or_in_words(self, request: LLMRequest, send) -> LLMResponse:
        """`send` the request with its schema as response_format; in plain words to a server that refuses it."""
        if request.output_schema is not None and self.accepts_json_schema:
            try:
                return send(self._params(request, structured=True))
            except ProviderError as exc:
                if not refuses_json_schema(exc):
                    raise
                self.accepts_json_schema = False  # this server refuses the parameter: ask in words from now on
        return send(self._params(request, structured=False))

    def _complete(self, params: dict[str, Any]) -> LLMResponse:
        with sdk_errors(openai, lambda exc: exc.message):
            completion = self.client.chat.completions.create(**params)
        if not completion.choices:
            raise ProviderError("response had no choices", retryable=True)
        return _response(completion.choices[0].message.content or "", completion.usage, completion.model or self.model)

    def _stream(self, params: dict[str, Any], on_text: TextSink) -> LLMResponse:
        pieces: list[str] = []
        usage, model = None, ""
        with sdk_errors(openai, lambda exc: exc.message):
            chunks = self.client.chat.completions.create(**params, stream=True, stream_options={"include_usage": True})
            for chunk in chunks:
                model = chunk.model or model
                usage = chunk.usage or usage
                text = chunk.choices[0].delta.content if chunk.choices else None
                if text:
                    pieces.append(text)
                    on_text(text)
        if not model:
            raise ProviderError("the stream ended without a chunk", retryable=True)
        return _response("".join(pieces), usage, model)

    def _params(self, request: LLMRequest, *, structured: bool) -> dict[str, Any]:
        """The Chat Completions request, one for both `complete` and `stream`."""
        params: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens}
        system = request.system
        if structured:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.task, "schema": sent_schema(request.output_schema)},
            }
        elif request.output_schema is not None:
            system = f"{system}\n\n{json_instructions(request.output_schema)}"
        return {**params, "messages": self._messages(request, system)}

    def _messages(self, request: LLMRequest, system: str) -> list[dict[str, Any]]:
        if request.envelope is None:
            return [{"role": "system", "content": system}, {"role": "user", "content": request.prompt}]
        # Only the messages: the limit stays max_tokens, the parameter the text path sends too.
        body = to_openai(request.envelope, system=system, model=self.model, max_tokens=request.max_tokens)
        return body["messages"]


def _response(text: str, usage: Any, model: str) -> LLMResponse:
    return LLMResponse(
        text=text,
        input_tokens=usage.prompt_tokens if usage else 0,
        output_tokens=usage.completion_tokens if usage else 0,
        model=model,
    )


def refuses_json_schema(exc: ProviderError) -> bool:
    """A 400 that names the parameter (a context too long is a 400 too, and not this)."""
    return exc.status == 400 and any(word in str(exc) for word in ("response_format", "json_schema"))


def json_instructions(schema: dict) -> str:
    """The plain-words request for a server without structured outputs."""
    return "Answer with one JSON object, and nothing else, that matches this JSON Schema:\n" + json.dumps(
        sent_schema(schema), separators=(",", ":")
    )
