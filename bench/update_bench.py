"""Update report (issue 25): model calls and wall time of an update against the run it updates.

    .venv/bin/python bench/update_bench.py                  # both providers, the fake's 2 s per call
    .venv/bin/python bench/update_bench.py --provider offline --latency 1

The issue's goal, as its test states it: a session of 10 files whose report has at least 15 cited
claims (tests/research/test_run_update.py's files and question), one cited file replaced (the
budget file: its cost sentence removed, its other sentence reworded), then Update report. The update
should make at most 30 % of the original run's model calls.

The real stack, as bench/llm_scale_bench.py starts it: a redis-server of its own, the Procfile's
workers (every line but `web`), a throwaway SQLite database; this process is the web side (the
API through DRF's test client, with an Idempotency-Key). Each provider runs in a process of its own
(Django reads its settings once): `offline`, and `anthropic` — the real SDK against the fake
Messages API (bench/fake_messages.py), which answers after `--latency` seconds.

For each provider: upload the 10 files and parse them (not timed: the session's cost, paid before
either run), then time the original run (POST …/runs → completed) with max_depth 1; replace
budget.md and parse it again (not timed, as before the original run), then time the update
(POST …/update → completed). Model calls are the LLMCall rows of each run (what the update's own
summary counts). Prints a table; writes bench/results/update.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from bench.llm_scale_bench import Stack, setup_django, wait_settled  # noqa: E402

PROVIDERS = ("offline", "anthropic")
GOAL_RATIO = 0.30
GOAL_CITED_CLAIMS = 15
RUN_LIMITS = {"max_depth": 1}  # as the test: a root and its children over 10 files
FINISHED = ("completed", "failed", "cancelled")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", choices=PROVIDERS, help="one provider, in this process (default: both)")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the fake takes per call (default 2)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take before the bench fails")
    return parser.parse_args()


# --- one provider, in this process -----------------------------------------------------


class Api:
    """The API as a client calls it (token auth, Idempotency-Key on every POST), in this process."""

    def __init__(self, user):
        from rest_framework.test import APIClient

        self.client = APIClient()
        self.client.force_authenticate(user)

    def get(self, path: str) -> dict:
        response = self.client.get(path, secure=True)  # DEBUG off: the settings redirect plain HTTP
        assert response.status_code == 200, (path, response.status_code, response.content[:300])
        return response.json()

    def post(self, path: str, body: dict | None = None, expect: int = 201) -> dict:
        headers = {"HTTP_IDEMPOTENCY_KEY": uuid.uuid4().hex}
        response = self.client.post(path, body or {}, format="json", secure=True, **headers)
        assert response.status_code == expect, (path, response.status_code, response.content[:300])
        return response.json()


def until_finished(api: Api, run_id: str, timeout: float) -> dict:
    """The run's snapshot once it has finished (GET /api/runs/{rid} every 0.1 s, as a page would poll)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snapshot = api.get(f"/api/runs/{run_id}")
        if snapshot["status"] in FINISHED:
            return snapshot
        time.sleep(0.1)
    raise RuntimeError(f"run {run_id} did not finish in {timeout} s")


def timed_run(api: Api, start, timeout: float) -> tuple[dict, float]:
    """(the finished run's snapshot, seconds from the POST that started it to its end)."""
    started = time.perf_counter()
    run_id = start()["run_id"]
    snapshot = until_finished(api, run_id, timeout)
    return snapshot, round(time.perf_counter() - started, 2)


def one_provider(provider: str, latency: float, timeout: float) -> dict:
    """The scenario with `provider`, on a stack of its own; its figures."""
    os.environ.setdefault("SECRET_KEY", "groundwork-bench-key-for-a-throwaway-database-only")
    stack = Stack(latency=latency, allowed=64, per_minute=None, in_flight=64)
    stack.env["GROUNDWORK_LLM"] = os.environ["GROUNDWORK_LLM"] = provider
    try:
        setup_django()
        stack.start_workers()
        return scenario(provider, latency, timeout)
    finally:
        stack.stop()


def scenario(provider: str, latency: float, timeout: float) -> dict:
    from context_app import services
    from context_app.models import ContextFile
    from llm_platform.models import LLMCall
    from research_app.models import ResearchRun
    from research_app.services import create_session
    from tests.research.test_run_update import BUDGET_V2, FILES, QUESTION
    from workspaces.services import ensure_demo_user

    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Update bench", question=QUESTION)
    context_set = session.context_set
    services.upload_files(context_set, [services.Upload(name, data) for name, data in FILES.items()])
    services.request_parse(context_set)
    wait_settled(context_set.pk, timeout=timeout)

    api = Api(user)
    original, original_seconds = timed_run(
        api, lambda: api.post(f"/api/sessions/{session.pk}/runs", RUN_LIMITS), timeout
    )
    assert original["status"] == "completed", original["status"]
    report = original["report"]
    paragraphs = [p for s in report["sections"] for p in s["paragraphs"]]
    cited_claims = sum(1 for p in paragraphs if p["citations"] or p["sources"])

    budget = ContextFile.objects.get(context_set=context_set, filename="budget.md")
    services.replace_file(context_set, budget.pk, services.Upload("budget.md", BUDGET_V2))
    services.request_parse(context_set)
    wait_settled(context_set.pk, timeout=timeout)

    updated, update_seconds = timed_run(
        api, lambda: api.post(f"/api/runs/{original['run_id']}/update", expect=202), timeout
    )
    assert updated["status"] == "completed", updated["status"]
    summary = updated["report"]["update"]
    calls = {
        run_id: LLMCall.objects.filter(run_id=run_id).count() for run_id in (original["run_id"], updated["run_id"])
    }
    original_calls, update_calls = calls[original["run_id"]], calls[updated["run_id"]]
    assert ResearchRun.objects.get(pk=updated["run_id"]).updates_run_id == uuid.UUID(original["run_id"])
    ratio = round(update_calls / original_calls, 3) if original_calls else None
    return {
        "provider": provider,
        "fake_latency_seconds": latency if provider == "anthropic" else None,
        "files": len(FILES),
        "cited_claims": cited_claims,
        "original_model_calls": original_calls,
        "update_model_calls": update_calls,
        "calls_ratio": ratio,
        "within_goal": ratio is not None and ratio <= GOAL_RATIO and cited_claims >= GOAL_CITED_CLAIMS,
        "original_seconds": original_seconds,
        "update_seconds": update_seconds,
        "seconds_ratio": round(update_seconds / original_seconds, 3),
        "claims_kept": summary["unchanged"],
        "claims_changed": summary["changed"],
        "claims_withdrawn": summary["withdrawn"],
        "claims_new": summary.get("new", 0),
        "explored_again": summary["explored_again"],
        "change_summary": summary["summary"],
        "original_nodes": len(original["nodes"]),
        "coverage_summary": updated["coverage"]["summary"],
    }


# --- both providers, each in a process of its own ------------------------------------


def in_own_process(provider: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--provider", provider, "--latency", str(args.latency)]
    command += ["--timeout", str(args.timeout)]
    print(f"== {provider}", flush=True)
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the workers and servers on the way out
    if args.provider:
        print(json.dumps(one_provider(args.provider, args.latency, args.timeout)), flush=True)
        return
    results = {provider: in_own_process(provider, args) for provider in PROVIDERS}
    figures = {}
    for provider, result in results.items():
        for key in (
            "cited_claims",
            "original_model_calls",
            "update_model_calls",
            "calls_ratio",
            "within_goal",
            "original_seconds",
            "update_seconds",
            "claims_kept",
            "claims_changed",
            "claims_withdrawn",
            "claims_new",
        ):
            figures[f"{provider}_{key}"] = result[key]
    figures["goal_calls_ratio"] = GOAL_RATIO
    figures["fake_latency_seconds"] = args.latency
    harness.write_results("update", figures, runs=results)


if __name__ == "__main__":
    main()
