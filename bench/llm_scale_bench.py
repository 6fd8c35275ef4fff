"""Model calls at scale: a first parse of many small files against a slow, rate-limited model API.

    make bench                                   # 100 files (the default: minutes, not a quarter hour)
    .venv/bin/python bench/llm_scale_bench.py --files 100,1000
    .venv/bin/python bench/llm_scale_bench.py --files 100,1000 --memory   # the figures in docs/decisions.md
    .venv/bin/python bench/llm_scale_bench.py --files 300 --in-flight 48 --threads 56   # above the API's limit: 429s

The real stack, as `make run` starts it: a redis-server of its own, the workers of
the Procfile (every line but `web`, started with the same command, so their pools,
queues and concurrency are the product's), a throwaway SQLite database, and the
Anthropic provider over the real SDK, pointed at a fake Messages API on loopback
(bench/fake_messages.py) that answers after `--latency` seconds and refuses with
429 + retry-after beyond `--allowed` calls in flight (or `--per-minute`).

For each file count: upload small text files (in this process, as the API would),
press Parse now, and wait until every digest and the aggregate are ready. Prints
the wall time, the calls in flight as the fake saw them (max, time-weighted mean),
Task A and Task B calls against their minimum, the 429s, and
wall ÷ (calls × latency ÷ allowed): 1.0 is a model API kept exactly full. Then one
file is replaced and parsed again (1 Task A, one Task B per tree level), and one
interactive call is timed while a second, smaller ingest saturates the budget.
With --memory: the worker host's RSS with 64 calls in flight.
Writes bench/results/llm_scale.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fake_messages import API_KEY, FakeMessages  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

MODEL = "claude-bench"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", default="100", help="comma list of file counts (default 100)")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the fake takes per call (default 2)")
    parser.add_argument("--allowed", type=int, default=32, help="calls in flight the fake accepts (default 32)")
    parser.add_argument("--per-minute", type=int, default=None, help="calls a minute the fake accepts (default: any)")
    parser.add_argument("--in-flight", type=int, default=None, help="GROUNDWORK_LLM_MAX_IN_FLIGHT (default: --allowed)")
    parser.add_argument("--threads", type=int, default=None, help="LLM_WORKER_CONCURRENCY (default: the Procfile's)")
    parser.add_argument("--memory", action="store_true", help="also measure RSS with 64 calls in flight")
    parser.add_argument("--memory-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-interactive", action="store_true", help="skip the interactive-call probe")
    return parser.parse_args()


# --- the stack --------------------------------------------------------------------


class Stack:
    """redis-server, the fake API and the Procfile's workers, all for one scenario."""

    def __init__(
        self, *, latency: float, allowed: int, per_minute: int | None, in_flight: int, threads: int | None = None
    ):
        self.var = tempfile.mkdtemp(prefix="groundwork-llm-bench-")
        self.redis = RedisServer()
        self.fake = FakeMessages(latency=latency, max_concurrent=allowed, per_minute=per_minute)
        self.env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(ROOT),
            "GROUNDWORK_VAR_DIR": self.var,
            "REDIS_URL": self.redis.url,
            "GROUNDWORK_LLM": "anthropic",
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": self.fake.url,
            "GROUNDWORK_ANTHROPIC_MODEL": MODEL,
            "GROUNDWORK_LLM_MAX_IN_FLIGHT": str(in_flight),
            "LOG_LEVEL": "WARNING",
            "CELERY_TASK_ALWAYS_EAGER": "0",
        }
        if threads:  # else the Procfile's default
            self.env["LLM_WORKER_CONCURRENCY"] = str(threads)
        os.environ.update({k: v for k, v in self.env.items() if k != "PATH"})
        self.workers: list[subprocess.Popen] = []

    def start_workers(self) -> None:
        log = open(Path(self.var) / "workers.log", "ab")
        for name, command in procfile_workers():
            self.workers.append(
                subprocess.Popen(
                    ["bash", "-c", f"exec {command}"],
                    cwd=ROOT,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stopped with its children
                )
            )
            print(f"  started {name}: {command}", flush=True)
        # Celery beat answers no ping: wait for the lines that start a worker.
        wait_for_workers(sum(1 for _name, command in procfile_workers() if " worker " in command))

    def rss_mib(self) -> float:
        """Resident memory of every worker process and its children (the worker host), MiB."""
        total = 0
        for worker in self.workers:
            for pid in [worker.pid, *children_of(worker.pid)]:
                total += rss_kib(pid)
        return round(total / 1024, 1)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by each worker (its processes together), and by this process (the fake)."""
        used = {}
        for (name, _command), worker in zip(procfile_workers(), self.workers, strict=True):
            used[name] = round(sum(cpu_of(pid) for pid in [worker.pid, *children_of(worker.pid)]), 1)
        used["bench (fake API)"] = round(cpu_of(os.getpid()), 1)
        return used

    def stop(self) -> None:
        for worker in self.workers:
            try:
                os.killpg(worker.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for worker in self.workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        self.fake.stop()
        self.redis.stop()
        if os.environ.get("BENCH_KEEP_LOG"):
            shutil.copy(Path(self.var) / "workers.log", os.environ["BENCH_KEEP_LOG"])
        shutil.rmtree(self.var, ignore_errors=True)


def procfile_workers() -> list[tuple[str, str]]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    entries = [line.split(":", 1) for line in lines if re.match(r"^[a-z]+:", line)]
    return [(name, command.strip()) for name, command in entries if name != "web"]


def wait_for_workers(count: int) -> None:
    from config.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if len(replies) >= count:
            return
    raise RuntimeError("the workers did not start (see workers.log in the bench's var dir)")


def children_of(pid: int) -> list[int]:
    found = []
    try:
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            found += [int(child), *children_of(int(child))]
    except OSError:
        pass
    return found


def cpu_of(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# --- one scenario ----------------------------------------------------------------


def small_file(i: int, run: str = "") -> bytes:
    """A small text file; `run` makes its text (so its digest cache key) differ from other scenarios'."""
    return (
        f"Site {i}{run} replaced {i % 40 + 3} pumps in {2010 + i % 15}. "
        f"The audit of site {i} found a budget of {i * 7 + 11} thousand euros.\n"
    ).encode()


def minimum_task_b(files: int, fanout: int = 8) -> int:
    total, level = 0, files
    while level > 1:
        level = math.ceil(level / fanout)
        total += level
    return max(total, 1)


def tree_levels(filenames: list[str]) -> int:
    from django.conf import settings

    from context_app.pipeline.aggregate import _buckets

    fanout = settings.GROUNDWORK_AGGREGATE_FANOUT
    entries, levels = [{"manifest": [{"filename": name}]} for name in sorted(filenames)], 1
    while len(entries) > fanout:
        entries = [{"manifest": bucket[0]["manifest"]} for bucket in _buckets(entries, fanout)]
        levels += 1
    return levels


def settled(context_set_id) -> bool:
    from context_app.models import ContextFile, ContextSet, DigestStatus

    context_set = ContextSet.objects.get(pk=context_set_id)
    busy = ContextFile.objects.filter(
        context_set_id=context_set_id, digest_status__in=[DigestStatus.STALE, DigestStatus.PARSING]
    ).exists()
    return (
        not busy
        and context_set.aggregate_digest_status == DigestStatus.READY
        and context_set.aggregate_revision == context_set.revision
    )


def wait_settled(context_set_id, timeout: float = 1200) -> float:
    started = time.monotonic()
    while not settled(context_set_id):
        if time.monotonic() - started > timeout:
            raise RuntimeError("the parse did not settle")
        time.sleep(0.2)
    return time.monotonic() - started


def calls_of(context_set_id) -> dict:
    """Model calls by task: answered calls (one per Task A/B), and refused attempts (429/529) recorded."""
    from django.db.models import Count

    from llm_platform.models import LLMCall

    rows = LLMCall.objects.filter(session__context_set=context_set_id)
    by = dict(rows.values_list("outcome").annotate(n=Count("id")).values_list("outcome", "n"))
    answered = rows.exclude(outcome__in=["throttled", "transient", "failed"])
    retried = rows.filter(outcome__in=["transient", "failed"]).values_list("error", flat=True)
    return {
        "task_a": answered.filter(task="per_file_digest").count(),
        "task_b": answered.filter(task="aggregate_digest").count(),
        "outcomes": by,
        "errors": sorted({error[:160] for error in retried}),
    }


def interactive_probe(latency: float) -> float:
    """Seconds one interactive model call takes end to end (queueing for a slot included)."""
    from digests.envelopes import per_file_envelope
    from llm_platform import gateway
    from llm_platform.base import LLMRequest

    # Any envelope the fake's offline handlers answer will do: what is timed is the wait for a slot.
    prompt = per_file_envelope("probe.txt", "text", [{"span_id": "S1", "text": "The probe cost 5 euros."}])
    started = time.monotonic()
    gateway.complete(LLMRequest(task="chat_turn", system="bench", prompt=prompt))
    return round(time.monotonic() - started, 2)


def run_scenario(stack: Stack, files: int, args, *, probe: bool) -> dict:
    from context_app import services
    from research_app.services import create_session
    from workspaces.services import ensure_demo_user

    user, _team = ensure_demo_user(f"bench{files}", "bench", f"Bench {files}")  # a team (digest cache) of its own
    session = create_session(user=user, title=f"{files} files")
    context_set = session.context_set
    uploads = [services.Upload(f"site-{i:04d}.txt", small_file(i, f" ({files})")) for i in range(files)]
    for start in range(0, files, 100):  # in requests of 100 files, as a client would
        services.upload_files(context_set, uploads[start : start + 100])
    stack.fake.start_window()
    rss_peak = [stack.rss_mib()]
    timeline: list[int] = []  # calls in flight at the fake, once a second
    cpu_before = stack.cpu_seconds()
    done = threading.Event()

    def sample_rss():
        while not done.wait(1.0):
            rss_peak.append(stack.rss_mib())
            timeline.append(stack.fake.in_flight)

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    services.request_parse(context_set)
    wall = wait_settled(context_set.pk)
    done.set()
    sampler.join()
    seen = stack.fake.figures()
    calls = calls_of(context_set.pk)
    allowed = min(args.allowed, args.in_flight or args.allowed)
    total_calls = calls["task_a"] + calls["task_b"]
    ideal = total_calls * args.latency / allowed
    # Dependencies bound it too: the last Task A's answer, then one Task B per level up to the root.
    levels = tree_levels([u.filename for u in uploads])
    path = args.latency * (math.ceil(calls["task_a"] / allowed) + levels)
    result = {
        "files": files,
        "wall_seconds": round(wall, 1),
        "max_in_flight": seen["max_in_flight"],
        "mean_in_flight": seen["mean_in_flight"],
        "task_a": calls["task_a"],
        "task_a_minimum": files,
        "task_b": calls["task_b"],
        "task_b_minimum": minimum_task_b(files),
        "responses_429": seen["refused_429"],
        "recorded_outcomes": calls["outcomes"],
        "errors_retried_or_failed": calls["errors"],
        "ideal_seconds": round(ideal, 1),
        "ratio": round(wall / ideal, 2),
        "tree_levels": levels,
        "dependency_bound_seconds": round(path, 1),
        "worker_rss_peak_mib": max(rss_peak),
        "cpu_seconds": {k: round(v - cpu_before.get(k, 0), 1) for k, v in stack.cpu_seconds().items()},
        "in_flight_each_second": timeline,
    }

    # One replaced file: one Task A and one Task B per level of the tree.
    from context_app.models import ContextFile

    before = calls_of(context_set.pk)
    target = ContextFile.objects.get(context_set=context_set, filename="site-0007.txt")
    replaced = services.Upload("site-0007.txt", f"Site 7 ({files}) replaced 99 pumps.".encode())
    services.replace_file(context_set, target.pk, replaced)
    services.request_parse(context_set)
    result["replace_one_seconds"] = round(wait_settled(context_set.pk), 1)
    after = calls_of(context_set.pk)
    result["replace_one_task_a"] = after["task_a"] - before["task_a"]
    result["replace_one_task_b"] = after["task_b"] - before["task_b"]

    if probe:  # an interactive call while a fresh ingest of the same size keeps the budget full
        session2 = create_session(user=user, title=f"{files} more files")
        more = [services.Upload(f"more-{i:04d}.txt", small_file(i, f" (more {files})")) for i in range(min(files, 200))]
        services.upload_files(session2.context_set, more)
        services.request_parse(session2.context_set)
        time.sleep(max(3.0, 2 * args.latency))  # let the bulk calls fill every slot
        result["interactive_call_during_ingest_seconds"] = interactive_probe(args.latency)
        wait_settled(session2.context_set.pk)
    return result


def memory_scenario() -> dict:
    """RSS of the worker host with 64 model calls in flight (slow calls, so they stay in flight).

    Runs in a process of its own (`--memory-only`): Django reads its settings once.
    """
    stack = Stack(latency=20.0, allowed=64, per_minute=None, in_flight=64, threads=72)
    try:
        setup_django()
        stack.start_workers()
        from context_app import services
        from research_app.services import create_session
        from workspaces.services import ensure_demo_user

        user, _team = ensure_demo_user("benchmem", "bench", "Bench")
        session = create_session(user=user, title="memory")
        uploads = [services.Upload(f"mem-{i:04d}.txt", small_file(i)) for i in range(128)]
        services.upload_files(session.context_set, uploads[:100])
        services.upload_files(session.context_set, uploads[100:])
        idle = stack.rss_mib()
        services.request_parse(session.context_set)
        deadline = time.monotonic() + 60
        while stack.fake.figures()["max_in_flight"] < 64 and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2)
        in_flight = stack.fake.in_flight
        loaded = stack.rss_mib()
        return {"calls_in_flight": in_flight, "worker_rss_idle_mib": idle, "worker_rss_64_in_flight_mib": loaded}
    finally:
        stack.stop()


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the workers and servers on the way out
    if args.memory_only:
        print(json.dumps(memory_scenario()))
        return
    counts = [int(n) for n in args.files.split(",") if n.strip()]
    in_flight = args.in_flight or args.allowed
    print(
        f"llm scale bench: latency {args.latency}s, fake accepts {args.allowed} in flight"
        f"{f' and {args.per_minute}/min' if args.per_minute else ''}, GROUNDWORK_LLM_MAX_IN_FLIGHT={in_flight}",
        flush=True,
    )
    stack = Stack(
        latency=args.latency,
        allowed=args.allowed,
        per_minute=args.per_minute,
        in_flight=in_flight,
        threads=args.threads,
    )
    results = []
    try:
        setup_django()
        stack.start_workers()
        for files in counts:
            print(f"  {files} files …", flush=True)
            results.append(run_scenario(stack, files, args, probe=not args.no_interactive))
    finally:
        stack.stop()
    memory = None
    if args.memory:
        print("  64 calls in flight (memory) …", flush=True)
        out = subprocess.run([sys.executable, __file__, "--memory-only"], capture_output=True, text=True, check=True)
        memory = json.loads(out.stdout.strip().splitlines()[-1])

    print()
    header = ["files", "wall s", "ideal s", "ratio", "path s", "in flight max/mean", "Task A/min", "Task B/min", "429s"]
    rows = [
        [
            r["files"],
            r["wall_seconds"],
            r["ideal_seconds"],
            r["ratio"],
            r["dependency_bound_seconds"],
            f"{r['max_in_flight']}/{r['mean_in_flight']}",
            f"{r['task_a']}/{r['task_a_minimum']}",
            f"{r['task_b']}/{r['task_b_minimum']}",
            r["responses_429"],
        ]
        for r in results
    ]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        print("  ".join(str(x).rjust(w) for x, w in zip(row, widths, strict=True)))
    print("ideal = calls × latency ÷ allowed in flight; path = latency × (⌈Task A ÷ allowed⌉ + tree levels)")
    for r in results:
        extra = (
            f", interactive call during an ingest {r['interactive_call_during_ingest_seconds']} s"
            if ("interactive_call_during_ingest_seconds" in r)
            else ""
        )
        print(
            f"{r['files']} files: replace one → Task A {r['replace_one_task_a']}, Task B {r['replace_one_task_b']}"
            f" in {r['replace_one_seconds']} s; worker RSS peak {r['worker_rss_peak_mib']} MiB{extra}"
        )
        print(f"{r['files']} files: CPU seconds during the first parse {r['cpu_seconds']}")
    if memory:
        print(
            f"memory: {memory['calls_in_flight']} calls in flight → worker host RSS "
            f"{memory['worker_rss_64_in_flight_mib']} MiB (idle {memory['worker_rss_idle_mib']} MiB)"
        )
    out = ROOT / "bench" / "results" / "llm_scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "latency_seconds": args.latency,
        "fake_allowed_in_flight": args.allowed,
        "fake_per_minute": args.per_minute,
        "groundwork_llm_max_in_flight": in_flight,
        "workers": procfile_workers(),
        "cpus": os.cpu_count(),
    }
    out.write_text(json.dumps({"settings": settings, "runs": results, "memory": memory}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
