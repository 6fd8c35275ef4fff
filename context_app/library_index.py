"""A team's library as in-memory search indexes, kept in each process between searches.

The database holds the library (records, postings, windows with their vectors); the
first search of a team in a process loads its TermIndex (BM25) and, per embeddings
model, its VectorIndex (llm_platform.search_index), and later searches use them as
long as the library has not changed. Whatever writes or removes a team's records or
vectors calls `library_changed`, which bumps a counter per team in Redis; a process
that sees another count reloads. Without Redis a loaded index serves for
STALE_SECONDS at most.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import redis
from django.db import transaction

from llm_platform.models import TextEmbedding
from llm_platform.search_index import TermIndex, VectorIndex
from workspaces import shared_redis

from .models import LibraryPosting, LibraryRecord, LibraryWindow

STALE_SECONDS = 10.0


@dataclass
class TeamIndex:
    generation: int | None
    loaded_at: float
    terms: TermIndex
    vectors: dict[str, VectorIndex] = field(default_factory=dict)  # by embeddings model key


_teams: dict[str, TeamIndex] = {}
_loading = threading.Lock()


def library_changed(scope: str) -> None:
    """Tell every process that the scope's indexes are out of date, once the change is committed
    (a process that reloaded before the commit would keep the old library under the new count)."""
    transaction.on_commit(lambda: _bump(scope))


def _bump(scope: str) -> None:
    try:
        shared_redis.client().incr(_generation_key(scope))
    except redis.RedisError:
        pass  # the indexes serve STALE_SECONDS at most (_still_current)


def term_index(scope: str) -> TermIndex:
    return _team(scope).terms


def vector_index(scope: str, model_key: str) -> VectorIndex:
    team = _team(scope)
    if model_key not in team.vectors:
        with _loading:
            rows = LibraryWindow.objects.filter(scope=scope, model=model_key, embedding__isnull=False).values_list(
                "record_id", "record__file__context_set_id", "embedding_id", "embedding__vector"
            )
            team.vectors[model_key] = VectorIndex.build(list(rows.iterator(chunk_size=5000)))
    return team.vectors[model_key]


def stored_vectors(embedding_ids: np.ndarray, width: int) -> np.ndarray:
    """The float32 vectors stored under `embedding_ids`, a row each in that order (NaN for one gone
    meanwhile): what VectorIndex.nearest rescores its best windows from."""
    stored = dict(TextEmbedding.objects.filter(pk__in=set(embedding_ids.tolist())).values_list("id", "vector"))
    rows = np.full((len(embedding_ids), width), np.nan, dtype=np.float32)
    for i, embedding_id in enumerate(embedding_ids.tolist()):
        vector = stored.get(embedding_id)
        if vector is not None and len(vector) == width * 4:  # a vector stays as made (never updated)
            rows[i] = np.frombuffer(vector, dtype="<f4")
    return rows


def _team(scope: str) -> TeamIndex:
    generation = _generation(scope)
    team = _teams.get(scope)
    if team is not None and _still_current(team, generation):
        return team
    with _loading:
        records = LibraryRecord.objects.filter(scope=scope).values_list("id", "file__context_set_id", "length")
        postings = LibraryPosting.objects.filter(scope=scope).order_by("term").values_list("term", "record_id", "tf")
        terms = TermIndex.build(list(records.iterator(chunk_size=5000)), postings.iterator(chunk_size=20_000))
        team = _teams[scope] = TeamIndex(generation, time.monotonic(), terms)
    return team


def _still_current(team: TeamIndex, generation: int | None) -> bool:
    if generation is None or team.generation is None:
        return time.monotonic() - team.loaded_at < STALE_SECONDS
    return team.generation == generation


def _generation(scope: str) -> int | None:
    try:
        return int(shared_redis.client().get(_generation_key(scope)) or 0)
    except redis.RedisError:
        return None


def _generation_key(scope: str) -> str:
    return f"groundwork:library-generation:{scope}"
