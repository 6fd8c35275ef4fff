"""Embeddings, the model platform's second front door (the first is gateway.complete).

`embed(texts)` gives one unit vector a text, in order. A text embedded before by the
same model comes from the cache (TextEmbedding, by sha256 of the text); the others go
to the configured provider in batches, each call an LLMCall row (task `embed`):
remote calls under the shared rate limiter with their tokens and cost, local ones with
their time and no cost. What a provider answers is checked (count, dimension, finite,
non-zero) before it is stored or used. Any failure is EmbeddingsUnavailable, and
callers fall back to keyword search: meaning makes search better, never makes it fail.

settings.GROUNDWORK_EMBEDDINGS: `local` (the default), `openai` | `voyage` (a remote
OpenAI-compatible server: GROUNDWORK_EMBEDDINGS_BASE_URL, _MODEL, _API_KEY) or `off`.
"""

from llm_platform.embeddings.gateway import (
    EmbeddingsUnavailable,
    closeness,
    embed,
    enabled,
    model_key,
    reset_provider,
    text_hash,
    warm_up,
)

__all__ = [
    "EmbeddingsUnavailable",
    "closeness",
    "embed",
    "enabled",
    "model_key",
    "reset_provider",
    "text_hash",
    "warm_up",
]
