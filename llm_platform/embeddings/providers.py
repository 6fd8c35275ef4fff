"""Embedding providers: `local` (all-MiniLM-L6-v2 in this process) and any OpenAI-compatible
`POST {base}/embeddings` server (`openai`, and `voyage`, whose API has the same shape).

A provider has a `name`, a `model`, `remote` (its calls cost money and go under the
shared rate limiter) and `embed(texts) -> Embedded`. It raises ProviderError; what it
returns is checked by embeddings.gateway before anything stores it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from llm_platform.base import ProviderError, sdk_errors

VOYAGE_BASE_URL = "https://api.voyageai.com/v1"
LOCAL_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Embedded:
    vectors: np.ndarray  # (len(texts), dimensions), as the provider sent them
    input_tokens: int
    model: str


class EmbeddingProvider(Protocol):
    name: str
    model: str
    remote: bool

    def embed(self, texts: list[str]) -> Embedded: ...


class LocalEmbeddings:
    """all-MiniLM-L6-v2 on this machine's CPU (llm_platform.embeddings.minilm): no network, no cost."""

    name = "local"
    remote = False

    def __init__(self) -> None:
        from llm_platform.embeddings.minilm import load_minilm

        self.encoder = load_minilm()
        self.model = LOCAL_MODEL

    def embed(self, texts: list[str]) -> Embedded:
        tokens = sum(self.encoder.count_tokens(text) for text in texts)
        return Embedded(self.encoder.encode(texts), tokens, self.model)


class OpenAICompatibleEmbeddings:
    """`POST {base}/embeddings` through the official openai SDK: OpenAI, Ollama, vLLM,
    text-embeddings-inference, LM Studio, and Voyage AI (same request and answer)."""

    remote = True

    def __init__(self, name: str, *, api_key: str, base_url: str | None, model: str, timeout: float):
        import openai  # only where a remote provider is configured

        self.name, self.model, self._openai = name, model, openai
        self.client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url or None, max_retries=0, timeout=timeout
        )

    def embed(self, texts: list[str]) -> Embedded:
        with sdk_errors(self._openai, lambda exc: exc.message):
            answer = self.client.embeddings.create(model=self.model, input=texts, encoding_format="float")
        if not isinstance(getattr(answer, "data", None), list):  # e.g. a proxy's HTML error page, sent as 200
            raise ProviderError(f"unusable answer: {str(answer)[:200]!r}")
        data = sorted(answer.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise ProviderError(f"asked for {len(texts)} vectors, got {len(data)}")
        try:
            vectors = np.array([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ProviderError(f"unusable vectors: {exc}") from exc
        usage = getattr(answer, "usage", None)
        tokens = getattr(usage, "prompt_tokens", None) or getattr(usage, "total_tokens", None) or 0
        return Embedded(vectors, int(tokens), answer.model or self.model)


def build_provider(name: str) -> EmbeddingProvider:
    """The provider settings.GROUNDWORK_EMBEDDINGS names ("off" has none: callers ask `enabled()` first)."""
    if name == "local":
        return LocalEmbeddings()
    if name in ("openai", "voyage"):
        base_url = settings.GROUNDWORK_EMBEDDINGS_BASE_URL or (VOYAGE_BASE_URL if name == "voyage" else "")
        if not settings.GROUNDWORK_EMBEDDINGS_MODEL:
            raise ImproperlyConfigured(f"GROUNDWORK_EMBEDDINGS={name} needs GROUNDWORK_EMBEDDINGS_MODEL")
        if name == "voyage" and not settings.GROUNDWORK_EMBEDDINGS_API_KEY:
            raise ImproperlyConfigured("GROUNDWORK_EMBEDDINGS=voyage needs GROUNDWORK_EMBEDDINGS_API_KEY")
        return OpenAICompatibleEmbeddings(
            name,
            api_key=settings.GROUNDWORK_EMBEDDINGS_API_KEY,
            base_url=base_url,
            model=settings.GROUNDWORK_EMBEDDINGS_MODEL,
            timeout=settings.GROUNDWORK_EMBEDDINGS_TIMEOUT_SECONDS,
        )
    raise ImproperlyConfigured(f"unknown GROUNDWORK_EMBEDDINGS {name!r}; known: local, openai, voyage, off")


def elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
