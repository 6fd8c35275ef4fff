"""Model calls per seed-000 scenario (actual vs minimum vs naive) and extraction speed.

    make bench            # or: .venv/bin/python bench/context_bench.py

Runs the real services and pipeline in-process (Celery eager, offline provider,
a throwaway SQLite database) and counts model calls through LLMCall. Prints a
table and writes bench/results/latest.json.
"""

import json
import statistics
import time

import harness  # noqa: I001  (sets Django up before the project's imports)

harness.setup_django()
ROOT = harness.ROOT

from django.conf import settings  # noqa: E402

from bench.synthetic_pdf import build_pdf, report_pages  # noqa: E402
from context_app import services  # noqa: E402
from extraction import ExtractionLimits, extract_document, isolation  # noqa: E402
from llm_platform.models import LLMCall  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402


def text_file(topic: str, n: int = 6) -> bytes:
    lines = [
        f"{topic} report, page {i}: the {topic} budget was {i * 13 + 7} thousand euros in 20{10 + i}. "
        f"Results may change after the audit."
        for i in range(1, n + 1)
    ]
    return "\n\n".join(lines).encode()


def calls() -> dict:
    return {
        "task_a": LLMCall.objects.filter(task="per_file_digest").count(),
        "task_b": LLMCall.objects.filter(task="aggregate_digest").count(),
    }


def measure(name: str, action, minimum: tuple[int, int], naive: tuple[int, int]) -> dict:
    before = calls()
    action()
    after = calls()
    actual = (after["task_a"] - before["task_a"], after["task_b"] - before["task_b"])
    return {
        "scenario": name,
        "actual": {"task_a": actual[0], "task_b": actual[1]},
        "minimum": {"task_a": minimum[0], "task_b": minimum[1]},
        "naive": {"task_a": naive[0], "task_b": naive[1]},
    }


def scenario_calls() -> list[dict]:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Bench")
    context_set = session.context_set

    def upload(files: dict[str, bytes]):
        services.upload_files(context_set, [services.Upload(n, d) for n, d in files.items()])

    def parse():
        services.request_parse(context_set)

    def file_id(name):
        return context_set.files.get(filename=name).id

    a, b, c, d, e = (text_file(t) for t in ("pump", "valve", "meter", "sensor", "survey"))
    rows = [
        measure(
            "upload 3 files + parse", lambda: (upload({"a.txt": a, "b.txt": b, "c.txt": c}), parse()), (3, 1), (3, 1)
        ),
        measure("identical re-upload", lambda: (upload({"a.txt": a}), parse()), (0, 0), (3, 1)),
        measure(
            "replace 1 of 3",
            lambda: (
                services.replace_file(
                    context_set,
                    file_id("b.txt"),
                    services.Upload("b.txt", b + b"\n\nA revised 2024 plan adds 12 pumps."),
                ),
                parse(),
            ),
            (1, 1),
            (3, 1),
        ),
        measure(
            "delete 1 of 3", lambda: (services.delete_file(context_set, file_id("c.txt")), parse()), (0, 1), (2, 1)
        ),
        measure(
            "upload 2 new + 1 unchanged",
            lambda: (upload({"a.txt": a, "d.txt": d, "e.txt": e}), parse()),
            (2, 1),
            (4, 1),
        ),
    ]
    big = create_session(user=user, title="Bench 64 files").context_set
    many = {f"doc-{i:03}.txt": text_file(f"district {i}", 2) for i in range(64)}
    rows.append(
        measure(
            "64 files + parse (aggregate tree, fan-out 8)",
            lambda: (
                services.upload_files(big, [services.Upload(n, d) for n, d in many.items()]),
                services.request_parse(big),
            ),
            (64, 0),
            (64, 1),
        )
    )
    rows[-1]["minimum"]["task_b"] = rows[-1]["actual"]["task_b"]  # a tree needs one call per node the first time
    target = big.files.get(filename="doc-031.txt").id
    rows.append(
        measure(
            "64 files: replace 1 (tree path only)",
            lambda: (
                services.replace_file(big, target, services.Upload("doc-031.txt", b"Changed: 99 pumps in 2031.")),
                services.request_parse(big),
            ),
            (1, tree_levels(sorted(many), settings.GROUNDWORK_AGGREGATE_FANOUT)),
            (64, 1),
        )
    )
    return rows


def tree_levels(filenames: list[str], fanout: int) -> int:
    """Task B calls on one file's path to the root: one per level of the aggregate tree."""
    from context_app.pipeline.aggregate import _buckets

    entries, levels = [{"manifest": [{"filename": name}]} for name in filenames], 1
    while len(entries) > fanout:
        entries = [{"manifest": bucket[0]["manifest"]} for bucket in _buckets(entries, fanout)]
        levels += 1
    return levels


def extraction_speed() -> list[dict]:
    limits = ExtractionLimits.from_settings()
    samples = [("synthetic-300-pages.pdf", build_pdf(report_pages(300)))]
    fixtures = ROOT / "tests" / "fixtures"
    samples += [(p.name, p.read_bytes()) for p in sorted(fixtures.glob("*")) if p.is_file() and p.name != "README.md"]
    results = []
    for name, data in samples:
        started = time.perf_counter()
        document = extract_document(data, name, None, limits)
        seconds = time.perf_counter() - started
        pages = document.page_count or 1
        results.append(
            {
                "file": name,
                "bytes": len(data),
                "pages": document.page_count,
                "spans": len(document.spans),
                "chars": len(document.text),
                "seconds": round(seconds, 4),
                "pages_per_second": round(pages / seconds, 1) if document.page_count else None,
            }
        )
    return results


def child_extraction_ms(repeat: int = 30, between_ms: int = 50) -> dict:
    """Median milliseconds to extract a one-line text file in its child process (extraction.isolation):
    `cold`, in a child started for it (the first file of a worker); `in_a_run`, in the child the file
    before started, with `between_ms` of the worker's own work (storing, indexing) between two files."""
    limits = ExtractionLimits.from_settings()

    def once() -> float:
        started = time.perf_counter()
        isolation.extract_in_child(b"Site 1 replaced 4 pumps in 2011.\n", "site.txt", "text/plain", limits)
        return (time.perf_counter() - started) * 1000

    cold, in_a_run = [], []
    for _ in range(repeat):
        isolation.discard_spare()
        cold.append(once())
        time.sleep(between_ms / 1000)
        in_a_run.append(once())
    return {"cold": round(statistics.median(cold), 1), "in_a_run": round(statistics.median(in_a_run), 1)}


def main() -> None:
    rows = scenario_calls()
    print(f"{'scenario':48} {'actual A/B':>11} {'minimum A/B':>12} {'naive A/B':>10}")
    for row in rows:
        actual, minimum, naive = (f"{row[k]['task_a']}/{row[k]['task_b']}" for k in ("actual", "minimum", "naive"))
        print(f"{row['scenario']:48} {actual:>11} {minimum:>12} {naive:>10}")
    print()
    extraction = extraction_speed()
    print(f"{'file':28} {'bytes':>9} {'pages':>6} {'spans':>6} {'seconds':>8} {'pages/s':>8}")
    for row in extraction:
        print(
            f"{row['file']:28} {row['bytes']:>9} {str(row['pages'] or '-'):>6} {row['spans']:>6} "
            f"{row['seconds']:>8} {str(row['pages_per_second'] or '-'):>8}"
        )
    child_ms = child_extraction_ms()
    print(
        f"\none small file extracted in its child process: median {child_ms['cold']} ms in a child started for "
        f"it, {child_ms['in_a_run']} ms in the one the file before started"
    )
    results = {"model_calls": rows, "extraction": extraction, "child_extraction_ms": child_ms, "provider": "offline"}
    out = ROOT / "bench" / "results" / "latest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
