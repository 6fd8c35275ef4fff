"""In-memory search indexes: the arithmetic of library search, apart from any table.

A team's library is ranked in the process that searches it, from arrays loaded once
and kept until the library changes (context_app.library_index loads them):

- TermIndex: Okapi BM25 over postings in compressed-row form, one slice of arrays per
  term; a query's terms are scored with a few vector operations, however common they
  are (the database no longer sends every posting of "file" to Python).
- VectorIndex: the unit vectors of the library's windows, quantised to int4 with a scale
  per row (192 bytes a window at 384 dimensions, an eighth of float32). Up to
  EXACT_WINDOWS windows every one is scored from its int4 row; above, a first pass by the
  Hamming distance of the vectors' sign bits (48 bytes a window) picks the candidates
  scored so. The windows of the best records are then scored again from their stored
  float32 vectors (`originals`: the database keeps them), so the cosines a search returns
  are exact: the quantised rows only choose which windows to read ("quantisation in
  memory, originals on disk, rescoring"). A record scores as its best window, so a long
  page is found by its one passage that answers.
- fuse_scores: a hybrid ranking from a keyword one and a meaning one (each ranking's scores in units of
  their standard deviation, weighted and summed).

Rows carry a record id and a group code (a session's context set), so one index serves
a team's library and each session's part of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from llm_platform.terms import BM25_B, BM25_K1

# BM25's share of a hybrid score; meaning has the rest. Chosen on the tune half of the man-page
# questions (bench/retrieval_bench.py; 0.2 to 0.5 tried, and reciprocal rank fusion, which was lower),
# and checked again when the scores became standard deviations (fuse_scores): 0.25 and 0.35 were lower.
KEYWORD_WEIGHT = 0.3
# Above this many windows the sign-bit pass chooses which to score; below, all are.
EXACT_WINDOWS = 50_000
CANDIDATES_PER_RESULT = 50  # the sign-bit pass keeps this many windows per result asked for,
MIN_CANDIDATES = 2_000  # and at least this many
# The windows of this many records a result asked for are rescored from their stored vectors: an int4
# cosine is within ~0.01 of the true one, so the true best are among twice as many records by it.
RESCORED_PER_RESULT = 2


def _top(scores: np.ndarray, ids: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The `limit` best (id, score) with a positive, finite score; ties by id."""
    eligible = np.flatnonzero(np.isfinite(scores) & (scores > 0))
    if not len(eligible):
        return []
    if len(eligible) > limit:
        eligible = eligible[np.argpartition(-scores[eligible], limit - 1)[:limit]]
    ranked = sorted(((int(ids[i]), float(scores[i])) for i in eligible), key=lambda item: (-item[1], item[0]))
    return ranked[:limit]


@dataclass(frozen=True)
class TermIndex:
    record_ids: np.ndarray  # int64, one per record
    groups: np.ndarray  # int32 group code per record
    group_codes: dict[str, int]
    lengths: np.ndarray  # float32 index terms per record
    term_slices: dict[str, tuple[int, int]]  # term -> [start, end) into the postings arrays
    posting_records: np.ndarray  # int32 row of the record (into record_ids)
    posting_tf: np.ndarray  # uint16 term frequency (capped at 65,535)

    @classmethod
    def build(cls, records: Iterable[tuple[int, str, int]], postings: Iterable[tuple[str, int, int]]) -> TermIndex:
        """From (record id, group, length) rows and (term, record id, tf) rows sorted by term."""
        codes: dict[str, int] = {}
        rows = list(records)
        record_ids = np.fromiter((r for r, _g, _l in rows), np.int64, len(rows))
        row_of = {int(record_id): i for i, record_id in enumerate(record_ids)}
        slices: dict[str, tuple[int, int]] = {}
        posting_rows: list[int] = []
        tfs: list[int] = []
        for term, record_id, tf in postings:
            row = row_of.get(record_id)
            if row is None:
                continue  # a record written after the records were read: the next load has it
            start, _end = slices.get(term, (len(posting_rows), 0))
            posting_rows.append(row)
            tfs.append(min(tf, 65_535))
            slices[term] = (start, len(posting_rows))
        return cls(
            record_ids=record_ids,
            groups=np.fromiter((codes.setdefault(str(g), len(codes)) for _r, g, _l in rows), np.int32, len(rows)),
            group_codes=codes,
            lengths=np.fromiter((length for _r, _g, length in rows), np.float32, len(rows)),
            term_slices=slices,
            posting_records=np.array(posting_rows, dtype=np.int32),
            posting_tf=np.array(tfs, dtype=np.uint16),
        )

    @property
    def nbytes(self) -> int:
        arrays = (self.record_ids, self.groups, self.lengths, self.posting_records, self.posting_tf)
        return sum(a.nbytes for a in arrays)

    def rank(self, terms: Sequence[str], limit: int, *, group: str | None = None) -> list[tuple[int, float]]:
        """(record id, BM25) of the records holding any of `terms`, best first; with `group`, that
        group's records alone, counted as the whole collection (its size, lengths and frequencies)."""
        if group is not None and str(group) not in self.group_codes:
            return []
        in_group = self.groups == self.group_codes[str(group)] if group is not None else None
        total = int(in_group.sum()) if in_group is not None else len(self.record_ids)
        if not total or limit <= 0:
            return []
        average = float(self.lengths[in_group].mean() if in_group is not None else self.lengths.mean()) or 1.0
        scores = np.zeros(len(self.record_ids), dtype=np.float64)
        for term in set(terms):
            start, end = self.term_slices.get(term, (0, 0))
            rows, tf = self.posting_records[start:end], self.posting_tf[start:end].astype(np.float64)
            if in_group is not None:
                kept = in_group[rows]
                rows, tf = rows[kept], tf[kept]
            if not len(rows):
                continue
            idf = np.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.lengths[rows] / average)
            scores += np.bincount(rows, weights=idf * tf * (BM25_K1 + 1) / (tf + norm), minlength=len(scores))
        return _top(scores, self.record_ids, limit)


@dataclass(frozen=True)
class VectorIndex:
    record_ids: np.ndarray  # int64, one per window
    embedding_ids: np.ndarray  # int64: where each window's float32 vector is stored (for `originals`)
    groups: np.ndarray  # int32 group code per window
    group_codes: dict[str, int]
    nibbles: np.ndarray  # uint8 (windows, dimensions / 2): components 2k (low 4 bits) and 2k+1, int4 each
    scales: np.ndarray  # float32: a row's vector is its int4 components / scale
    signs: np.ndarray  # uint64 (windows, dimensions / 64): the sign bits, for the first pass
    dimensions: int

    @classmethod
    def build(cls, rows: Sequence[tuple[int, str, int, bytes]]) -> VectorIndex:
        """From (record id, group, embedding id, float32 vector bytes) rows; rows of another width than the
        first are left out."""
        width = len(bytes(rows[0][3])) if rows else 0
        kept = [row for row in rows if len(bytes(row[3])) == width]
        vectors = np.frombuffer(b"".join(bytes(row[3]) for row in kept), dtype="<f4").reshape(len(kept), width // 4)
        peak = np.abs(vectors).max(axis=1, keepdims=True) if len(kept) else np.ones((0, 1), np.float32)
        scales = (7.0 / np.where(peak > 0, peak, 1.0)).astype(np.float32)
        codes: dict[str, int] = {}
        return cls(
            record_ids=np.fromiter((row[0] for row in kept), np.int64, len(kept)),
            embedding_ids=np.fromiter((row[2] for row in kept), np.int64, len(kept)),
            groups=np.fromiter((codes.setdefault(str(row[1]), len(codes)) for row in kept), np.int32, len(kept)),
            group_codes=codes,
            nibbles=_int4_pairs(np.round(vectors * scales).astype(np.int8)),
            scales=scales[:, 0],
            signs=_sign_bits(vectors),
            dimensions=width // 4,
        )

    @property
    def nbytes(self) -> int:
        arrays = (self.record_ids, self.embedding_ids, self.groups, self.nibbles, self.scales, self.signs)
        return sum(a.nbytes for a in arrays)

    def nearest(
        self,
        query: np.ndarray,
        limit: int,
        originals: Callable[[np.ndarray, int], np.ndarray],
        *,
        group: str | None = None,
    ) -> list[tuple[int, float]]:
        """The `limit` records nearest to the unit vector `query`, best first, as (record id, cosine).

        `originals(embedding ids, dimensions)` gives the stored float32 vectors of those windows (rows in
        that order; a row of NaN for one gone meanwhile): the best records' windows are rescored from
        them."""
        if not len(self.record_ids) or limit <= 0 or query.shape[-1] != self.dimensions:
            return []
        if group is not None and str(group) not in self.group_codes:
            return []
        in_group = self.groups == self.group_codes[str(group)] if group is not None else None
        if (len(self.record_ids) if in_group is None else np.count_nonzero(in_group)) > EXACT_WINDOWS:
            rows = self._first_pass(query, max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT), in_group)
        else:
            rows = np.arange(len(self.record_ids)) if in_group is None else np.flatnonzero(in_group)
        by_int4 = rows[np.argsort(-self._int4_cosines(rows, query), kind="stable")]
        best_records = _first_distinct(self.record_ids[by_int4], limit * RESCORED_PER_RESULT)
        rows = rows[np.isin(self.record_ids[rows], best_records)]
        stored = np.asarray(originals(self.embedding_ids[rows], self.dimensions), dtype=np.float32)
        cosines = np.nan_to_num(stored @ query.astype(np.float32), nan=-np.inf)
        order = np.argsort(-cosines, kind="stable")
        rows, cosines = rows[order], cosines[order]
        # A record's score is its best window's: the windows best first, each record kept once.
        best: dict[int, float] = {}
        for row, cosine in zip(rows, cosines, strict=True):
            if np.isfinite(cosine):
                best.setdefault(int(self.record_ids[row]), float(cosine))
            if len(best) == limit:
                break
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))

    def _int4_cosines(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The rows' cosines with `query`, from their int4 components (even ones in the low bits)."""
        query = np.pad(query.astype(np.float32), (0, self.dimensions % 2))
        pairs = self.nibbles[rows]
        low = (pairs << 4).view(np.int8) >> 4  # an arithmetic shift keeps the int4's sign
        high = pairs.view(np.int8) >> 4
        return (low.astype(np.float32) @ query[0::2] + high.astype(np.float32) @ query[1::2]) / self.scales[rows]

    def _first_pass(self, query: np.ndarray, keep: int, in_group: np.ndarray | None) -> np.ndarray:
        """The `keep` windows (of the group) whose sign bits differ least from the query's. Computed over
        every window in place, the other groups' set out of reach after: copying a group's rows out
        first cost more than the pass itself (22 MB of sign bits at 474,000 windows)."""
        differing = np.bitwise_count(self.signs ^ _sign_bits(query[None, :]))  # uint8, a count per 64 bits
        distance = differing[:, 0].astype(np.int16)
        for column in range(1, differing.shape[1]):  # column by column: sum(axis=1) of 6 is slower
            distance += differing[:, column]
        if in_group is not None:
            distance[~in_group] = np.iinfo(np.int16).max
        keep = min(keep, len(distance))
        rows = np.argpartition(distance, keep - 1)[:keep]
        return rows if in_group is None else rows[in_group[rows]]


def _int4_pairs(components: np.ndarray) -> np.ndarray:
    """int8 components in [-7, 7], two to a byte: component 2k in the low 4 bits, 2k+1 in the high."""
    if components.shape[1] % 2:
        components = np.pad(components, ((0, 0), (0, 1)))
    as_bytes = components.view(np.uint8)
    return (as_bytes[:, 0::2] & 0x0F) | (as_bytes[:, 1::2] << 4)


def _first_distinct(ids: np.ndarray, count: int) -> np.ndarray:
    """The first `count` distinct values of `ids`, in their order."""
    values, first_at = np.unique(ids, return_index=True)
    return values[np.argsort(first_at, kind="stable")][:count]


def _sign_bits(vectors: np.ndarray) -> np.ndarray:
    packed = np.packbits(vectors > 0, axis=1)
    padding = (-packed.shape[1]) % 8
    return np.pad(packed, ((0, 0), (0, padding))).view(np.uint64)


def fuse_scores(
    keyword: Sequence[tuple[int, float]],
    meaning: Sequence[tuple[int, float]],
    *,
    keyword_weight: float = KEYWORD_WEIGHT,
) -> list[tuple[int, float]]:
    """Distribution-based score fusion: each ranking's scores measured from its last result in units of
    their standard deviation over its own results (`spread_scores`), then weighted and summed per id; an
    id absent from a ranking gets nothing from it. Best first, ties by id."""
    fused: dict[int, float] = {}
    for ranking, weight in ((keyword, keyword_weight), (meaning, 1 - keyword_weight)):
        for item, share in spread_scores(ranking).items():
            fused[item] = fused.get(item, 0.0) + weight * share
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def spread_scores(ranking: Sequence[tuple[int, float]]) -> dict[int, float]:
    """(score - the ranking's lowest) / the ranking's standard deviation, by id; 1.0 each when the scores
    are all equal (a single result). Scaled to its range, every ranking's best scored 1 however little it
    stood out; in standard deviations, a best result far above the rest of its ranking (a confident
    match) outweighs the best of a ranking whose scores lie close together."""
    if not ranking:
        return {}
    scores = np.array([score for _item, score in ranking], dtype=np.float64)
    deviation = float(scores.std())
    if deviation <= 0:
        return {item: 1.0 for item, _score in ranking}
    shares = (scores - scores.min()) / deviation
    return {item: float(share) for (item, _score), share in zip(ranking, shares, strict=True)}
