"""Library search at 100,000 records: BM25, dense and hybrid latency (p50/p95), and the memory a team's
in-memory index takes.

    .venv/bin/python bench/library_scale_bench.py [--records 100000]

Uploads the man-page corpus (tests/fixtures/manpages) through the real upload service, then
grows its library to --records records by copying its records with their sentences shuffled
among records of the same page (so term statistics stay those of real text), with their
postings and windows. Window vectors are random unit vectors: latency and memory depend on
their number, not their values (quality is bench/retrieval_bench.py's job). Query embedding
is excluded (it is one model call, cached). Writes bench/results/library_scale.json.
"""

import argparse
import os
import random
import statistics
import time

import harness  # noqa: I001  (sets Django up before the project's imports)

parser = argparse.ArgumentParser()
parser.add_argument("--records", type=int, default=100_000)
args = parser.parse_args()
os.environ["GROUNDWORK_EMBEDDINGS"] = "off"  # the corpus's own windows get no vectors: the copies get random ones
harness.setup_django()

from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402

from bench.manpage_quality import corpus_files, questions  # noqa: E402
from context_app import library, library_index, meaning, services  # noqa: E402
from context_app.library import SearchMode  # noqa: E402
from context_app.models import LibraryPosting, LibraryRecord, LibraryWindow  # noqa: E402
from llm_platform import embeddings  # noqa: E402
from llm_platform.models import TextEmbedding  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user, team_cache_scope  # noqa: E402

DIMENSIONS = 384
MODEL_KEY = "bench:random-384"


def main() -> None:
    user, team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Scale bench")
    files = corpus_files()
    services.upload_files(session.context_set, [services.Upload(name, data) for name, data in files.items()])
    scope = team_cache_scope(team)
    started = time.perf_counter()
    grow(scope, args.records)
    grow_seconds = time.perf_counter() - started
    queries = [q.question for q in questions(split="tune") if q.style != "unanswerable"][:40]
    rng = np.random.default_rng(7)
    query_vectors = {q: unit(rng.standard_normal(DIMENSIONS)) for q in queries}

    with (
        mock.patch.object(embeddings, "model_key", lambda *_a: MODEL_KEY),
        mock.patch.object(embeddings, "embed", lambda texts, **_k: np.stack([query_vectors[t] for t in texts])),
        mock.patch.object(embeddings, "enabled", lambda: True),
    ):
        started = time.perf_counter()
        terms = library_index.term_index(scope)
        term_load_seconds = time.perf_counter() - started
        started = time.perf_counter()
        index = library_index.vector_index(scope, MODEL_KEY)
        load_seconds = time.perf_counter() - started
        figures = {
            "records": LibraryRecord.objects.filter(scope=scope).count(),
            "postings": LibraryPosting.objects.filter(scope=scope).count(),
            "windows": LibraryWindow.objects.filter(scope=scope).count(),
            "grow_seconds": round(grow_seconds, 1),
            "term_index_load_seconds": round(term_load_seconds, 2),
            "term_index_mb": round(terms.nbytes / 2**20, 1),
            "vector_index_load_seconds": round(load_seconds, 2),
            "vector_index_mb": round(index.nbytes / 2**20, 1),
            "team_index_mb": round((terms.nbytes + index.nbytes) / 2**20, 1),
        }
        for mode in (SearchMode.BM25, SearchMode.DENSE, SearchMode.HYBRID):
            timings = latencies(lambda q, mode=mode: library.search(scope, q, 10, mode=mode), queries)
            figures[f"{mode}_p50_ms"] = round(statistics.median(timings), 1)
            figures[f"{mode}_p95_ms"] = round(percentile(timings, 95), 1)
    harness.write_results("library_scale", figures)


def grow(scope: str, target: int) -> None:
    """Copies of the corpus's records (sentences shuffled within each page) until `target` records."""
    originals = list(LibraryRecord.objects.filter(scope=scope).select_related("file"))
    rng = random.Random(3)
    sentences_of: dict = {}
    for record in originals:
        sentences_of.setdefault(record.file_id, []).extend(s for s in record.text.split(". ") if s)
    copy = 0
    while LibraryRecord.objects.filter(scope=scope).count() < target:
        batch = []
        for record in originals[: target - LibraryRecord.objects.filter(scope=scope).count()]:
            pool = sentences_of[record.file_id]
            count = max(1, len(record.text.split(". ")))
            text = ". ".join(rng.choice(pool) for _ in range(count))
            batch.append((record, text))
        copy += 1
        write_copies(scope, batch, copy)


def write_copies(scope: str, batch, copy: int) -> None:
    drafts = [
        library.RecordDraft(
            record.position + copy * 10_000, record.page, record.section_path, text, record.first_span, record.last_span
        )
        for record, text in batch
    ]
    terms = [library.record_terms(draft) for draft in drafts]
    records = LibraryRecord.objects.bulk_create(
        [
            LibraryRecord(
                file=record.file,
                file_text_id=record.file_text_id,
                scope=scope,
                document_id=f"{record.document_id}-{copy}",
                position=draft.position,
                page=draft.page,
                section_path=draft.section_path,
                parent_heading=draft.parent_heading,
                text=draft.text,
                first_span=draft.first_span,
                last_span=draft.last_span,
                length=sum(counts.values()),
            )
            for (record, _t), draft, counts in zip(batch, drafts, terms, strict=True)
        ],
        batch_size=2000,
    )
    LibraryPosting.objects.bulk_create(
        [
            LibraryPosting(record=r, scope=scope, term=t, tf=tf)
            for r, c in zip(records, terms, strict=True)
            for t, tf in c.items()
        ],
        batch_size=5000,
    )
    rng = np.random.default_rng(copy)
    windows = [(r, a, b) for r in records for a, b in meaning.window_bounds(r.text)]
    vectors = [unit(v).astype("<f4").tobytes() for v in rng.standard_normal((len(windows), DIMENSIONS))]
    stored = TextEmbedding.objects.bulk_create(
        [TextEmbedding(text_hash=f"{copy}-{i}", model=MODEL_KEY, vector=v) for i, v in enumerate(vectors)],
        batch_size=2000,
    )
    LibraryWindow.objects.bulk_create(
        [
            LibraryWindow(record=r, scope=scope, model=MODEL_KEY, start=a, end=b, embedding=e)
            for (r, a, b), e in zip(windows, stored, strict=True)
        ],
        batch_size=2000,
    )


def unit(vector):
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def latencies(search, queries) -> list[float]:
    for query in queries[:3]:
        search(query)  # warm: the first search of a process loads the team's index
    timings = []
    for _round in range(3):
        for query in queries:
            started = time.perf_counter()
            search(query)
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


if __name__ == "__main__":
    main()
