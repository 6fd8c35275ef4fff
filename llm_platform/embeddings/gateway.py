"""embed(): the cache, the provider, the checks and the ledger (see the package's docstring)."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence

import numpy as np
from django.conf import settings

from llm_platform import limiter
from llm_platform.base import ProviderError
from llm_platform.embeddings.providers import LOCAL_MODEL, Embedded, EmbeddingProvider, build_provider, elapsed_ms
from llm_platform.models import LLMCall, TextEmbedding

logger = logging.getLogger(__name__)

TASK = "embed"
# After a failed call, the provider is left alone this long: a server that is down costs
# each search one timeout at most, not one per query.
COOL_DOWN_SECONDS = 30.0

_provider: dict[str, EmbeddingProvider] = {}
_building = threading.Lock()
_down_until = 0.0


class EmbeddingsUnavailable(Exception):
    """No vectors this time (off, down, or an unusable answer); the message is safe to show."""


def enabled() -> bool:
    return settings.GROUNDWORK_EMBEDDINGS != "off"


def provider() -> EmbeddingProvider:
    """The configured provider, built once per process; EmbeddingsUnavailable when it cannot be
    (a missing or altered model package, a setting left out): search goes on by keywords."""
    name = settings.GROUNDWORK_EMBEDDINGS
    if name not in _provider:
        with _building:  # the model loads once per process, however many threads ask
            if name not in _provider:
                try:
                    _provider[name] = build_provider(name)
                except Exception as exc:
                    raise EmbeddingsUnavailable(f"embeddings provider {name} unavailable: {exc}") from exc
    return _provider[name]


def warm_up() -> threading.Thread | None:
    """Builds the provider in the background, so that the first search of a web process (a chat
    question) does not wait a second or two for the local model to load. A provider that cannot be
    built is left for that first search to report (it goes on by keywords)."""
    if not enabled():
        return None

    def build() -> None:
        try:
            provider()
        except EmbeddingsUnavailable:
            pass

    thread = threading.Thread(target=build, name="embeddings-warm-up", daemon=True)
    thread.start()
    return thread


def reset_provider() -> None:
    """Forget the built provider and any cool-down (tests, settings changes)."""
    global _down_until
    _provider.clear()
    _down_until = 0.0


def model_key() -> str:
    """What vectors are kept under, "provider:model": vectors of two models never meet in one search.
    Known from the settings alone (the local model's weights are not loaded to name it)."""
    name = settings.GROUNDWORK_EMBEDDINGS
    return f"{name}:{LOCAL_MODEL if name == 'local' else settings.GROUNDWORK_EMBEDDINGS_MODEL}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def embed(texts: Sequence[str], *, subject: str = "", session_id=None) -> np.ndarray:
    """(len(texts), dimensions) float32 unit vectors, cached by (text hash, model)."""
    if not enabled():
        raise EmbeddingsUnavailable("embeddings are off (GROUNDWORK_EMBEDDINGS=off)")
    if time.monotonic() < _down_until:
        raise EmbeddingsUnavailable("the embeddings provider failed moments ago; keyword search only for now")
    chosen = provider()
    key = model_key()
    hashes = [text_hash(text) for text in texts]
    vectors = _cached(key, set(hashes))
    missing = {h: text for h, text in zip(hashes, texts, strict=True) if h not in vectors}
    batch_size = settings.GROUNDWORK_EMBEDDINGS_BATCH_SIZE
    pending = list(missing.items())
    for start in range(0, len(pending), batch_size):
        batch = pending[start : start + batch_size]
        answered = _call(chosen, [text for _h, text in batch], _dimensions(key, vectors), subject, session_id)
        _store(key, {h: vector for (h, _t), vector in zip(batch, answered, strict=True)})
        vectors.update((h, vector) for (h, _t), vector in zip(batch, answered, strict=True))
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([vectors[h] for h in hashes])


def closeness(query: str, texts: Sequence[str]) -> np.ndarray | None:
    """Each text's cosine with the query, in order; None when embeddings are off or unavailable
    (the caller then judges by terms alone, as it would without a model)."""
    if not enabled() or not texts:
        return None
    try:
        vectors = embed([query, *texts])
    except EmbeddingsUnavailable:
        return None
    return vectors[1:] @ vectors[0]


def _cached(key: str, hashes: set[str]) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    wanted = sorted(hashes)
    for start in range(0, len(wanted), 500):  # SQLite's bound on query parameters
        rows = TextEmbedding.objects.filter(model=key, text_hash__in=wanted[start : start + 500])
        found.update((h, np.frombuffer(bytes(v), dtype="<f4")) for h, v in rows.values_list("text_hash", "vector"))
    return found


def _dimensions(key: str, known: dict[str, np.ndarray]) -> int | None:
    """The dimension this model's vectors have had so far (None before its first)."""
    for vector in known.values():
        return len(vector)
    stored = TextEmbedding.objects.filter(model=key).values_list("vector", flat=True).first()
    return len(bytes(stored)) // 4 if stored is not None else None


def _store(key: str, vectors: dict[str, np.ndarray]) -> None:
    TextEmbedding.objects.bulk_create(
        [TextEmbedding(text_hash=h, model=key, vector=v.astype("<f4").tobytes()) for h, v in vectors.items()],
        ignore_conflicts=True,  # another worker embedded the same text meanwhile: same vector
    )


def _call(chosen: EmbeddingProvider, texts: list[str], dimensions: int | None, subject: str, session_id) -> np.ndarray:
    """One provider call, recorded; its vectors checked and normalised."""
    global _down_until
    row = dict(task=TASK, provider=chosen.name, model=chosen.model, subject=subject[:128], session_id=session_id)
    slot = limiter.acquire(f"embeddings:{chosen.name}", 0) if chosen.remote else None
    started = time.monotonic()
    try:
        answer = chosen.embed(texts)
        vectors = checked(answer, len(texts), dimensions)
    except (ProviderError, EmbeddingsUnavailable) as exc:
        if slot is not None:
            limiter.release(slot)
        _down_until = time.monotonic() + COOL_DOWN_SECONDS
        status = getattr(exc, "status", None)
        LLMCall.objects.create(
            **row,
            outcome=LLMCall.Outcome.FAILED,
            error=str(exc)[:2000],
            status_code=status,
            latency_ms=elapsed_ms(started),
        )
        logger.warning("embeddings (%s) failed: %s", chosen.name, exc)
        raise EmbeddingsUnavailable(f"embeddings provider {chosen.name} failed: {exc}") from exc
    if slot is not None:
        limiter.release(slot, used_tokens=answer.input_tokens, succeeded=True)
    LLMCall.objects.create(
        **{**row, "model": answer.model or chosen.model},
        input_tokens=answer.input_tokens,
        outcome=LLMCall.Outcome.OK,
        latency_ms=elapsed_ms(started),
        waited_ms=int(slot.waited * 1000) if slot is not None else 0,
    )
    return vectors


def checked(answer: Embedded, count: int, dimensions: int | None) -> np.ndarray:
    """The answer's vectors, L2-normalised, once they are what was asked for; else EmbeddingsUnavailable."""
    vectors = answer.vectors
    if vectors.ndim != 2 or vectors.shape[0] != count:
        raise EmbeddingsUnavailable(f"expected {count} vectors, got an array of shape {vectors.shape}")
    if dimensions is not None and vectors.shape[1] != dimensions:
        raise EmbeddingsUnavailable(f"vectors of {vectors.shape[1]} dimensions, this model's have {dimensions}")
    if vectors.shape[1] == 0 or not np.isfinite(vectors).all():
        raise EmbeddingsUnavailable("vectors with no dimensions, NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingsUnavailable("a zero vector")
    return (vectors / norms).astype(np.float32)
