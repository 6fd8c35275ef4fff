"""Retrieval quality by mode on the man-page corpus: BM25, dense (meaning) and hybrid.

    .venv/bin/python bench/retrieval_bench.py [--split tune|held_out] [--embeddings local|openai|off]

Uploads tests/fixtures/manpages (117 pages) through the real upload service into a
throwaway SQLite database, makes every library window's vector with the configured
embeddings provider (default: the local all-MiniLM-L6-v2), then scores each mode on the
labelled questions (bench/manpage_quality.py): recall@5 and MRR per style
("paraphrase": a colleague's words; "words": the pages' own). The vectors are kept in
var/bench/ between runs (by text hash and model, as the product's cache keeps them), so
only the first run pays for embedding the corpus. Writes bench/results/retrieval_<split>.json
(retrieval_<split>_bm25.json with --embeddings off).
"""

import argparse
import os
import sys
import time

import harness  # noqa: I001  (sets Django up before the project's imports)

parser = argparse.ArgumentParser()
parser.add_argument("--split", choices=["tune", "held_out"], default="tune")
parser.add_argument("--embeddings", default=os.environ.get("GROUNDWORK_EMBEDDINGS", "local"))
args = parser.parse_args()
os.environ["GROUNDWORK_EMBEDDINGS"] = args.embeddings
harness.setup_django()

from bench.manpage_quality import corpus_files, evaluate  # noqa: E402
from context_app import library, meaning, services  # noqa: E402
from context_app.library import SearchMode  # noqa: E402
from context_app.models import ContextFile, LibraryRecord, LibraryWindow  # noqa: E402
from llm_platform import embeddings  # noqa: E402
from llm_platform.models import LLMCall  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user, team_cache_scope  # noqa: E402


def main() -> None:
    loaded = harness.load_text_embeddings()
    user, team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Retrieval bench")
    files = corpus_files()
    services.upload_files(session.context_set, [services.Upload(name, data) for name, data in files.items()])
    scope = team_cache_scope(team)
    figures = {
        "pages": len(files),
        "library_records": LibraryRecord.objects.filter(scope=scope).count(),
        "split": args.split,
        "embeddings": embeddings.model_key() if embeddings.enabled() else "off",
    }
    if embeddings.enabled():
        started = time.perf_counter()
        for file_id in ContextFile.objects.filter(context_set=session.context_set).values_list("pk", flat=True):
            meaning.embed_file(file_id)
        windows = LibraryWindow.objects.filter(scope=scope)
        figures |= {
            "windows": windows.count(),
            "windows_embedded_now": LLMCall.objects.filter(task="embed").exclude(subject="search").count(),
            "vectors_from_earlier_runs": loaded,
            "embed_seconds": round(time.perf_counter() - started, 1),
        }
        harness.save_text_embeddings()
    details = {}
    modes = [SearchMode.BM25] + ([SearchMode.DENSE, SearchMode.HYBRID] if embeddings.enabled() else [])
    for mode in modes:
        for style in ("paraphrase", "words"):

            def search(question, mode=mode):
                return [(hit.filename, hit.text) for hit in library.search(scope, question, 10, mode=mode).hits]

            quality = evaluate(search, k=5, split=args.split, style=style)
            figures[f"{mode}_{style}_recall_at_5"] = quality["recall_at_5"]
            figures[f"{mode}_{style}_mrr"] = quality["mrr"]
            details[f"{mode}_{style}"] = quality["per_question"]
    figures["hybrid_search_ms" if embeddings.enabled() else "bm25_search_ms"] = harness.median_ms(
        lambda: library.search(scope, "how do I count the lines that match a pattern", 10), 20
    )
    suffix = "" if embeddings.enabled() else "_bm25"
    harness.write_results(f"retrieval_{args.split}{suffix}", figures, per_question=details)


if __name__ == "__main__":
    sys.exit(main())
