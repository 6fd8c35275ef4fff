"""llm_platform.search_index: BM25 in memory, int4 vectors with a sign-bit first pass and exact rescoring, score
fusion."""

import numpy as np
import pytest

from llm_platform import search_index
from llm_platform.search_index import TermIndex, VectorIndex, fuse_scores


def unit_rows(count: int, dimensions: int = 64, seed: int = 1) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def vector_rows(vectors: np.ndarray, groups=None) -> list[tuple[int, str, int, bytes]]:
    """Two windows a record; window i's vector is stored as embedding i."""
    return [(i // 2, (groups or {}).get(i // 2, "set-a"), i, v.astype("<f4").tobytes()) for i, v in enumerate(vectors)]


def stored(vectors: np.ndarray):
    """`originals` for an index of vector_rows(vectors): embedding i is vectors[i]."""
    return lambda embedding_ids, width: vectors[embedding_ids]


def best_windows(vectors: np.ndarray, query: np.ndarray) -> dict[int, float]:
    cosines = vectors @ query
    return {record: float(max(cosines[2 * record], cosines[2 * record + 1])) for record in range(len(vectors) // 2)}


def test_a_record_scores_as_its_best_window_rescored_from_its_stored_vector():
    """The int4 rows choose the records; their windows' cosines come from the stored float32 vectors."""
    vectors = unit_rows(400, dimensions=384)
    index = VectorIndex.build(vector_rows(vectors))
    for query in [vectors[37], *unit_rows(10, dimensions=384, seed=2)]:  # window 37 is record 18's second
        exact = best_windows(vectors, query)
        expected = sorted(exact.items(), key=lambda item: (-item[1], item[0]))[:5]
        ranked = index.nearest(query, 5, stored(vectors))
        assert [r for r, _s in ranked] == [r for r, _s in expected]
        assert [s for _r, s in ranked] == pytest.approx([s for _r, s in expected], abs=1e-5)


def test_a_window_whose_stored_vector_is_gone_is_left_out():
    vectors = unit_rows(20)
    query = vectors[6]  # record 3's first window
    gone = vectors.copy()
    gone[6] = np.nan
    ranked = VectorIndex.build(vector_rows(vectors)).nearest(query, 10, stored(gone))
    assert dict(ranked)[3] == pytest.approx(float(vectors[7] @ query), abs=1e-5)  # its other window


def clustered_index(groups=None) -> tuple[VectorIndex, np.ndarray, object]:
    """Clustered vectors of the local model's width, as real embeddings are: 50 topics, 40 windows each; and
    10 queries near topics."""
    rng = np.random.default_rng(5)
    centres = unit_rows(50, 384, seed=9)
    spread = np.float32((128 / 384) ** 0.5)  # noise per dimension for the same spread as 128 dimensions of 0.35
    vectors = np.repeat(centres, 40, axis=0) + 0.35 * spread * rng.standard_normal((2000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = centres[:10] + 0.2 * spread * rng.standard_normal((10, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return VectorIndex.build(vector_rows(vectors, groups)), queries, stored(vectors)


def first_pass_only(monkeypatch) -> None:
    monkeypatch.setattr(search_index, "EXACT_WINDOWS", 100)
    monkeypatch.setattr(search_index, "MIN_CANDIDATES", 0)
    monkeypatch.setattr(search_index, "CANDIDATES_PER_RESULT", 40)  # 400 of 2,000 windows scored


def test_the_sign_bit_pass_finds_the_same_nearest_records_as_scoring_every_window(monkeypatch):
    index, queries, originals = clustered_index()
    exact = [index.nearest(q, 10, originals) for q in queries]
    first_pass_only(monkeypatch)
    first_pass = [index.nearest(q, 10, originals) for q in queries]
    overlap = [len({r for r, _ in a} & {r for r, _ in b}) for a, b in zip(exact, first_pass, strict=True)]
    assert sum(overlap) >= 0.9 * 10 * len(queries)
    assert any(a != b for a, b in zip(exact, first_pass, strict=True)), "the pass scored fewer windows"


def test_the_sign_bit_pass_of_a_group_keeps_to_the_group(monkeypatch):
    index, queries, originals = clustered_index(groups={record: "set-b" for record in range(0, 1000, 2)})  # every other
    exact = [index.nearest(q, 10, originals, group="set-b") for q in queries]
    first_pass_only(monkeypatch)
    first_pass = [index.nearest(q, 10, originals, group="set-b") for q in queries]
    assert all(record % 2 == 0 for ranked in first_pass for record, _s in ranked)
    overlap = [len({r for r, _ in a} & {r for r, _ in b}) for a, b in zip(exact, first_pass, strict=True)]
    assert sum(overlap) >= 0.9 * 10 * len(queries)


def test_a_group_sees_only_its_own_windows():
    vectors = unit_rows(40)
    index = VectorIndex.build(vector_rows(vectors, groups={r: "set-b" for r in range(10)}))
    ranked = index.nearest(vectors[3], 40, stored(vectors), group="set-b")
    assert {record for record, _s in ranked} == set(range(10))
    assert index.nearest(vectors[3], 5, stored(vectors), group="another set") == []


def test_vectors_of_another_width_and_an_empty_index_give_nothing():
    vectors = unit_rows(4)
    assert VectorIndex.build([]).nearest(vectors[0], 5, stored(vectors)) == []
    index = VectorIndex.build(vector_rows(vectors))
    assert index.nearest(unit_rows(1, dimensions=32)[0], 5, stored(vectors)) == []


def test_bm25_of_a_group_counts_that_group_as_the_collection():
    records = [(1, "a", 10), (2, "a", 10), (3, "b", 10), (4, "b", 10)]
    postings = [("pump", 1, 1), ("pump", 3, 2), ("valve", 2, 1)]
    index = TermIndex.build(records, postings)
    assert [r for r, _s in index.rank(["pump"], 5, group="b")] == [3]
    assert [r for r, _s in index.rank(["pump", "valve"], 5)] == [2, 3, 1]  # the rarer term first, then tf
    assert index.rank(["pump"], 5, group="c") == [] and index.rank(["absent"], 5) == []


def test_fused_scores_weigh_each_ranking_in_its_own_standard_deviations():
    keyword = [(1, 12.0), (2, 6.0), (3, 3.0)]  # BM25: from its last, over its standard deviation
    meaning = [(3, 0.9), (4, 0.7), (1, 0.5)]  # cosine: the same
    keyword_sd, meaning_sd = np.std([12.0, 6.0, 3.0]), np.std([0.9, 0.7, 0.5])
    fused = dict(fuse_scores(keyword, meaning, keyword_weight=0.4))
    assert fused == pytest.approx(
        {1: 0.4 * 9 / keyword_sd, 2: 0.4 * 3 / keyword_sd, 3: 0.6 * 0.4 / meaning_sd, 4: 0.6 * 0.2 / meaning_sd}
    )
    assert [item for item, _s in fuse_scores(keyword, meaning, keyword_weight=0.4)] == [3, 1, 4, 2]
    assert fuse_scores([], meaning)[0][0] == 3 and fuse_scores(keyword, [])[0][0] == 1
    assert fuse_scores([(7, 2.5)], []) == [(7, pytest.approx(0.3))]  # a lone result counts in full


def test_a_keyword_match_that_stands_out_outweighs_a_meaning_best_that_barely_leads():
    """Record 1 alone holds the question's rare term (BM25 far above the 29 records that share a
    common one) and is 15th of a close run by meaning, which record 2 leads by a shade. Scaled to each
    ranking's range, both bests counted 1 and meaning's larger share put record 2 first; in standard
    deviations, how far record 1 stands out of its ranking counts."""
    keyword = [(1, 9.0)] + [(100 + i, 1.0) for i in range(29)]
    meaning = [(2, 0.6)] + [(200 + i, 0.6 - 0.005 * i) for i in range(1, 14)] + [(1, 0.53)]
    meaning += [(200 + i, 0.6 - 0.005 * i) for i in range(15, 31)]
    assert [item for item, _s in fuse_scores(keyword, meaning, keyword_weight=0.3)][:2] == [1, 2]
