"""Nearest vectors and rank fusion: the arithmetic of search by meaning, apart from any table.

A VectorIndex holds the unit vectors of one team's library windows as one float16
matrix (768 bytes a window at 384 dimensions: 100,000 windows in 77 MB), each row
tagged with the record it belongs to and that record's group (a session's context
set). Cosine similarity is one matrix-vector product; a record scores as its best
window, so a long page is found by its one passage that answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Reciprocal rank fusion's constant (Cormack et al. 2009): a result's share is 1 / (k + rank).
RRF_K = 60


@dataclass(frozen=True)
class VectorIndex:
    record_ids: np.ndarray  # int64, one per window
    groups: np.ndarray  # int64 codes of each window's record's group
    group_codes: dict[str, int]
    matrix: np.ndarray  # float16 (windows, dimensions), unit rows

    @classmethod
    def build(cls, rows: Sequence[tuple[int, str, bytes]], dimensions: int | None = None) -> VectorIndex:
        """From (record id, group, float32 vector bytes) rows; rows of another dimension are left out."""
        codes: dict[str, int] = {}
        kept = [row for row in rows if dimensions is None or len(row[2]) == dimensions * 4]
        if kept and dimensions is None:
            width = len(kept[0][2])
            kept = [row for row in kept if len(row[2]) == width]
        matrix = np.frombuffer(b"".join(bytes(v) for _r, _g, v in kept), dtype="<f4")
        matrix = matrix.reshape(len(kept), -1).astype(np.float16) if kept else np.zeros((0, 0), np.float16)
        return cls(
            record_ids=np.fromiter((r for r, _g, _v in kept), dtype=np.int64, count=len(kept)),
            groups=np.fromiter((codes.setdefault(str(g), len(codes)) for _r, g, _v in kept), np.int64, len(kept)),
            group_codes=codes,
            matrix=matrix,
        )

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + self.record_ids.nbytes + self.groups.nbytes

    def nearest(self, query: np.ndarray, limit: int, *, group: str | None = None) -> list[tuple[int, float]]:
        """The `limit` records nearest to the unit vector `query`, best first, as (record id, cosine):
        a record's score is its best window's; with `group`, that group's records alone."""
        if not len(self.record_ids) or limit <= 0 or query.shape[-1] != self.matrix.shape[1]:
            return []
        scores = (self.matrix @ query.astype(np.float16)).astype(np.float32)
        if group is not None:
            code = self.group_codes.get(str(group))
            if code is None:
                return []
            scores = np.where(self.groups == code, scores, -np.inf)
        # Enough windows that `limit` distinct records are among them unless records have many windows each.
        take = min(len(scores), limit * 8)
        top = np.argpartition(-scores, take - 1)[:take]
        best: dict[int, float] = {}
        for i in top[np.argsort(-scores[top], kind="stable")]:
            if not np.isfinite(scores[i]):
                break
            best.setdefault(int(self.record_ids[i]), float(scores[i]))
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:limit]


def fuse_rankings(*rankings: Sequence[tuple[int, float]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of ranked (id, score) lists: each list gives an id 1 / (k + its rank)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (item, _score) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
