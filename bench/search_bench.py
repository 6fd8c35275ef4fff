"""Library search: seed 002's performance table, indexing speed and retrieval quality.

    make bench            # or: .venv/bin/python bench/search_bench.py

Uploads the Python-docs corpus (tests/fixtures/library_corpus) through the real
upload service into a throwaway SQLite database, then measures (median of
repeated runs): building a 10-source cited context, one library search,
deduplicating 100 results, estimating tokens of 10,000 characters; and
recall@5 / MRR over the 20 labelled questions. Prints a table and writes
bench/results/search.json. Seed 002's targets: <1 s, –, <10 ms, <5 ms.
"""

import random
import time

import harness  # noqa: I001  (sets Django up before the project's imports)

harness.setup_django()
ROOT = harness.ROOT


from bench.retrieval_quality import corpus_files, evaluate  # noqa: E402
from context_app import library, services  # noqa: E402
from context_app.models import LibraryPosting, LibraryRecord  # noqa: E402
from llm_platform.ir import estimate_tokens  # noqa: E402
from research_app.search import ContextBuilder, LibrarySearch, SearchResult, deduplicate_results  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user, team_cache_scope  # noqa: E402

QUERY = "How do I handle an exception and still run clean-up code?"


def main() -> None:
    user, team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Search bench")
    files = corpus_files()
    started = time.perf_counter()
    services.upload_files(session.context_set, [services.Upload(name, data) for name, data in files.items()])
    upload_seconds = time.perf_counter() - started
    scope = team_cache_scope(team)

    builder = ContextBuilder([LibrarySearch(scope)], max_sources=10, max_tokens=10_000)
    built = builder.build_context(QUERY, num_results=10)
    rng = random.Random(2)
    hundred = [
        SearchResult("library", f"doc{rng.randrange(20)}", "f.pdf", "x", s, relevance_score=s, page=rng.randrange(1, 6))
        for s in (rng.random() for _ in range(100))
    ]
    text_10k = ((ROOT / "tests" / "fixtures" / "library_corpus" / "tutorial-errors.html").read_text())[:10_000]
    quality = evaluate(lambda q: [(h.filename, h.parent_heading) for h in library.search(scope, q, 10).hits], k=5)

    results = {
        "corpus_files": len(files),
        "corpus_bytes": sum(len(d) for d in files.values()),
        "library_records": LibraryRecord.objects.filter(scope=scope).count(),
        "library_postings": LibraryPosting.objects.filter(scope=scope).count(),
        "upload_extract_index_seconds": round(upload_seconds, 3),
        "context_build_10_sources_ms": harness.median_ms(lambda: builder.build_context(QUERY, num_results=10), 20),
        "context_build_sources": len(built.sources),
        "context_build_tokens": built.total_tokens,
        "library_search_ms": harness.median_ms(lambda: library.search(scope, QUERY, 10).hits, 50),
        "dedup_100_results_ms": harness.median_ms(lambda: deduplicate_results(hundred), 200),
        "estimate_tokens_10000_chars_ms": harness.median_ms(lambda: estimate_tokens(text_10k), 200),
        "recall_at_5": quality["recall_at_5"],
        "mrr": quality["mrr"],
        "questions": quality["questions"],
    }
    harness.write_results("search", results, per_question=quality["per_question"])


if __name__ == "__main__":
    main()
