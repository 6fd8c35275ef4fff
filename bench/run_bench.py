"""Research runs: time, model calls, tokens, events, payload and queries of whole runs.

    make bench            # or: .venv/bin/python bench/run_bench.py

Uploads the Python-docs corpus (tests/fixtures/library_corpus, 22 pages) into a
throwaway SQLite database and runs three of its labelled questions, each as a
whole run (bind phase, tree, report) with the offline provider and Celery in
eager mode (one process: wall time is the work itself, with no queue waits).
Then a second run of the first question on the same, now parsed, context
shows what the bind phase costs when nothing changed (no Task A/B call).
Also: the snapshot's size and its query count for a 1-node and a many-node
tree (equal counts: no N+1). Prints a table; writes bench/results/runs.json.
"""

import json
import statistics
import time
from collections import Counter

import harness  # noqa: I001  (sets Django up before the project's imports)

harness.setup_django()
ROOT = harness.ROOT

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from bench.retrieval_quality import corpus_files  # noqa: E402
from context_app import services  # noqa: E402
from llm_platform.models import LLMCall  # noqa: E402
from research_app.models import ResearchRun  # noqa: E402
from research_app.runs import engine  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "library_corpus"
LABELLED = [q["question"] for q in json.loads((CORPUS / "questions.json").read_text())]


# Half of each question is not in the corpus, so the root is insufficient and the tree grows.
UNANSWERABLE = "what budget did the team's 2023 training plan allow?"
QUESTIONS = [f"{LABELLED[i].rstrip('?')}, and {UNANSWERABLE}" for i in (0, 2, 4)]


def one_run(session, user, question: str, **limits) -> dict:
    started = time.perf_counter()
    run = engine.start_run(session, user, question=question, limits=limits)
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    calls = LLMCall.objects.filter(subject__startswith=f"run:{run.pk}:")
    return {
        "question": question,
        "status": run.status,
        "seconds": round(seconds, 3),
        "nodes": run.nodes.count(),
        "max_depth_reached": max(run.nodes.values_list("depth", flat=True), default=0),
        "events": run.events.count(),
        "model_calls": dict(Counter(calls.values_list("task", flat=True))),
        "model_calls_total": calls.count(),
        "tokens": run.tokens_used,
        "references": len(run.report["references"]) if run.report else 0,
        "run": run,
    }


def snapshot_cost(client: APIClient, run: ResearchRun) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/api/runs/{run.pk}")
    assert response.status_code == 200, response.content
    return len(queries), len(response.content)


def main() -> None:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Run bench", question=QUESTIONS[0])
    files = corpus_files()
    services.upload_files(session.context_set, [services.Upload(name, data) for name, data in files.items()])
    parse_calls_before = LLMCall.objects.filter(task__in=["per_file_digest", "aggregate_digest"]).count()

    runs = [one_run(session, user, q, max_depth=2, max_children=3, max_nodes=10) for q in QUESTIONS]
    parse_calls = LLMCall.objects.filter(task__in=["per_file_digest", "aggregate_digest"]).count() - parse_calls_before
    rerun = one_run(session, user, QUESTIONS[0], max_depth=2, max_children=3, max_nodes=10)
    parse_calls_rerun = (
        LLMCall.objects.filter(task__in=["per_file_digest", "aggregate_digest"]).count()
        - parse_calls_before
        - parse_calls
    )
    root_only = one_run(session, user, LABELLED[1], max_depth=0)

    client = APIClient()
    client.force_authenticate(user)
    small_queries, small_bytes = snapshot_cost(client, root_only["run"])
    big = max(runs, key=lambda r: r["nodes"])
    big_queries, big_bytes = snapshot_cost(client, big["run"])

    results = {
        "corpus_files": len(files),
        "bind_phase_parse_calls_first_run": parse_calls,
        "bind_phase_parse_calls_rerun_unchanged": parse_calls_rerun,
        "run_seconds_median": statistics.median(r["seconds"] for r in runs),
        "rerun_seconds": rerun["seconds"],
        "nodes_per_run": [r["nodes"] for r in runs],
        "events_per_run": [r["events"] for r in runs],
        "model_calls_per_run": [r["model_calls_total"] for r in runs],
        "tokens_per_run": [r["tokens"] for r in runs],
        "references_per_run": [r["references"] for r in runs],
        "snapshot_queries_1_node": small_queries,
        f"snapshot_queries_{big['nodes']}_nodes": big_queries,
        "snapshot_bytes_1_node": small_bytes,
        f"snapshot_bytes_{big['nodes']}_nodes": big_bytes,
    }
    detail = [{k: v for k, v in r.items() if k != "run"} for r in [*runs, rerun, root_only]]
    harness.write_results("runs", results, runs=detail)


if __name__ == "__main__":
    main()
