"""Scanned documents: seconds per page of OCR, and a text PDF's extraction speed beside it.

    make bench            # or: .venv/bin/python bench/ocr_bench.py [--pages 20] [--dpi 300]

A 20-page image-only PDF made from text we know (bench/synthetic_scan.py: 300 dpi, turned
0.6°, noise) goes through the product's own path: extraction.isolation.extract_in_child,
the extraction child, pypdfium2's render and a `tesseract` process a page, two at a time.
Wall seconds per page is the goal (≤ 2 s on the CI machines' 2 cores); the CPU seconds the
child and its `tesseract` processes spent per page say what the machine's load cannot. Word
recall against the original text says the speed did not come from reading less.

The text PDF (300 pages, bench/synthetic_pdf.py) is extracted in the same child: a text page
is never rendered nor read by OCR, so its pages per second are what they were.

Writes bench/results/ocr.json. Needs `tesseract` and Debian's fonts-dejavu-core (`make bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import synthetic_scan  # noqa: E402
from bench.synthetic_pdf import build_pdf, report_pages  # noqa: E402
from extraction import ExtractionLimits  # noqa: E402
from extraction import ocr as ocr_module  # noqa: E402
from extraction.isolation import extract_in_child  # noqa: E402

GOAL_SECONDS_PER_PAGE = 2.0


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def scanned(page_count: int, dpi: int) -> dict:
    pages = [synthetic_scan.paragraphs(5, seed=number) for number in range(page_count)]
    pdf = synthetic_scan.scanned_pdf(pages, dpi=dpi)
    told: list[str] = []
    load_before = os.getloadavg()[0]
    cpu, started = _cpu(), time.perf_counter()
    document = extract_in_child(pdf, "scan.pdf", None, ExtractionLimits(), told.append)
    seconds, cpu_seconds = time.perf_counter() - started, _cpu() - cpu
    original = "\n\n".join("\n\n".join(paragraphs) for paragraphs in pages)
    confidences = [span.confidence for span in document.spans if span.confidence is not None]
    return {
        "file": f"scanned-{page_count}-pages.pdf ({dpi} dpi, image only)",
        "bytes": len(pdf),
        "pages": document.page_count,
        "pages_read_by_ocr": len({span.locator for span in document.spans if span.read_by == "ocr"}),
        "seconds": round(seconds, 2),
        "seconds_per_page": round(seconds / page_count, 2),
        "cpu_seconds_per_page": round(cpu_seconds / page_count, 2),
        "word_recall": round(synthetic_scan.word_recall(original, document.text), 4),
        "mean_confidence": round(statistics.mean(confidences), 1) if confidences else None,
        "progress_reports": len(told),
        "notes": list(document.notes),
        "load_average_before": round(load_before, 2),
        "goal_seconds_per_page": GOAL_SECONDS_PER_PAGE,
    }


def text_pdf(page_count: int = 300, runs: int = 3) -> dict:
    pdf = build_pdf(report_pages(page_count))
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        document = extract_in_child(pdf, "text.pdf", None, ExtractionLimits())
        timings.append(time.perf_counter() - started)
    best = min(timings)
    return {
        "file": f"synthetic-{page_count}-pages.pdf (text layer)",
        "bytes": len(pdf),
        "pages": document.page_count,
        "pages_read_by_ocr": sum(1 for span in document.spans if span.read_by),
        "seconds_best_of_3": round(best, 3),
        "pages_per_second": round(page_count / best, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--dpi", type=int, default=300, help="the scan's resolution (rendered at 200–300 dpi)")
    args = parser.parse_args()
    version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    text = text_pdf()
    scan = scanned(args.pages, args.dpi)
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "tesseract": version},
        "ocr": {"dpi": ocr_module.OCR_DPI, "processes": ocr_module.OCR_PROCESSES, "languages": "eng"},
        "scanned_pdf": scan,
        "text_pdf": text,
    }
    print(f"tesseract: {version}; {os.cpu_count()} CPUs; load average before the scan {scan['load_average_before']}")
    print(
        f"{scan['file']}: {scan['seconds']} s, {scan['seconds_per_page']} s/page wall "
        f"(goal ≤ {GOAL_SECONDS_PER_PAGE:g}), {scan['cpu_seconds_per_page']} CPU s/page, "
        f"word recall {scan['word_recall']}, mean confidence {scan['mean_confidence']}"
    )
    print(
        f"{text['file']}: {text['seconds_best_of_3']} s, {text['pages_per_second']} pages/s, "
        f"{text['pages_read_by_ocr']} spans read by OCR"
    )
    out = ROOT / "bench" / "results" / "ocr.json"
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
