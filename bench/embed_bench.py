"""The `local` embedding model (all-MiniLM-L6-v2 in-process, onnxruntime on the CPU): its speed.

    .venv/bin/python bench/embed_bench.py

Cuts the Python-docs corpus (tests/fixtures/library_corpus) into windows of at most ~240 and
~120 tokens by the model's own tokenizer, then embeds them at several batch sizes (texts per
onnxruntime run), with onnxruntime's threads sleeping between operators (the product's setting)
and spinning. Reports windows per second (best and median of REPEATS passes: other processes on
the machine make single passes noisy, so the share of the CPUs they took is reported too), the
model's load time and the process's RSS. No database or network. Writes bench/results/embed.json.
"""

import os
import resource
import statistics
import time
from html.parser import HTMLParser

import harness  # noqa: I001  (puts the project on the path)
import numpy as np
import onnxruntime
from tokenizers import Tokenizer

from bench.retrieval_quality import corpus_files  # noqa: E402
from llm_platform.embeddings import minilm  # noqa: E402
from llm_platform.embeddings.graph import build_session  # noqa: E402
from llm_platform.embeddings.minilm import load_minilm  # noqa: E402
from llm_platform.embeddings.weights import load_model_files  # noqa: E402

WINDOW_TOKENS = (240, 120)  # content tokens; the model sees 2 more ([CLS], [SEP])
BATCH_SIZES = (1, 4, 8, 16, 32)
WINDOWS_PER_PASS = 64
REPEATS = 3


class TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def corpus_text() -> str:
    parser = TextOnly()
    for data in corpus_files().values():
        parser.feed(data.decode("utf-8"))
    return " ".join(" ".join(parser.parts).split())


def cpu_busy_seconds() -> tuple[float, float]:
    """(seconds every CPU of the machine was busy, seconds this process ran), from /proc/stat and rusage."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    own = resource.getrusage(resource.RUSAGE_SELF)
    return busy, own.ru_utime + own.ru_stime


def rss_now_mib() -> float:
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return round(int(status["VmRSS"].split()[0]) / 1024, 1)


def rss_peak_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def throughput(model: minilm.MiniLM, texts: list[str], tokens_per_batch: int) -> dict:
    """Windows per second over REPEATS passes of `texts`, in onnxruntime runs of `tokens_per_batch`."""
    model.encode(texts[:8], tokens_per_batch=tokens_per_batch)  # warm-up
    rates = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        model.encode(texts, tokens_per_batch=tokens_per_batch)
        rates.append(len(texts) / (time.perf_counter() - started))
    return {"best": round(max(rates), 1), "median": round(statistics.median(rates), 1)}


def by_batch(model: minilm.MiniLM, texts: list[str], size: int) -> dict:
    return {str(batch): throughput(model, texts, batch * (size + 2)) for batch in BATCH_SIZES}


def main() -> None:
    load_average_before = os.getloadavg()
    rss_before = rss_peak_mib()
    started = time.perf_counter()
    model = load_minilm()
    load_seconds = time.perf_counter() - started
    rss_loaded = rss_peak_mib(), rss_now_mib()

    text = corpus_text()
    started = time.perf_counter()
    windows = {size: token_windows(model, text, size) for size in WINDOW_TOKENS}
    windowing_seconds = time.perf_counter() - started
    samples = {size: windows[size][:WINDOWS_PER_PASS] for size in WINDOW_TOKENS}
    mean_tokens = {size: round(float(np.mean([model.count_tokens(t) for t in samples[size]])), 1) for size in samples}

    busy_before, own_before, started = *cpu_busy_seconds(), time.perf_counter()
    default = {size: throughput(model, samples[size], minilm.TOKENS_PER_BATCH)["median"] for size in WINDOW_TOKENS}
    rss_default_runs = rss_peak_mib(), rss_now_mib()  # before the larger batches below grow onnxruntime's arena
    rates = {f"{size}_tokens": {"sleeping": by_batch(model, samples[size], size)} for size in WINDOW_TOKENS}
    busy_after, own_after, wall = *cpu_busy_seconds(), time.perf_counter() - started
    others_share = ((busy_after - busy_before) - (own_after - own_before)) / (wall * os.cpu_count())
    files = load_model_files()  # a second session, with spinning threads, to compare
    spinning = minilm.MiniLM(build_session(files.weights, spinning=True), Tokenizer.from_str(files.tokenizer_json))
    for size in WINDOW_TOKENS:
        rates[f"{size}_tokens"]["spinning"] = by_batch(spinning, samples[size], size)
    best = {size: max(r["median"] for r in rates[f"{size}_tokens"]["sleeping"].values()) for size in WINDOW_TOKENS}

    figures = {
        "model": model.model_name,
        "runtime": f"onnxruntime {onnxruntime.__version__} (CPU)",
        "cpus": os.cpu_count(),
        "load_seconds": round(load_seconds, 2),
        "rss_before_load_mib": rss_before,
        "rss_peak_loading_mib": rss_loaded[0],
        "rss_after_load_mib": rss_loaded[1],
        "rss_peak_mib": rss_default_runs[0],  # default batches; 32 windows of 240 tokens a run take more
        "rss_after_default_runs_mib": rss_default_runs[1],
        "corpus_characters": len(text),
        "windows_240_tokens": len(windows[240]),
        "windows_120_tokens": len(windows[120]),
        "windowing_seconds": round(windowing_seconds, 2),
        "mean_tokens_per_window_240": mean_tokens[240],
        "mean_tokens_per_window_120": mean_tokens[120],
        "windows_per_second_240_best_batch_median": best[240],
        "windows_per_second_120_best_batch_median": best[120],
        "windows_per_second_240_default_batch": default[240],
        "windows_per_second_120_default_batch": default[120],
        "load_average_before": [round(x, 2) for x in load_average_before],
        "other_processes_cpu_share": round(max(others_share, 0.0), 2),  # of both cores, during the figures above
    }
    harness.write_results("embed", figures, windows_per_second=rates, default_tokens_per_batch=minilm.TOKENS_PER_BATCH)
    for size in WINDOW_TOKENS:
        for setting, per_batch in rates[f"{size}_tokens"].items():
            cells = "  ".join(f"b{batch}: {r['median']:>5} ({r['best']})" for batch, r in per_batch.items())
            print(f"{size} tokens, {setting:<8}  windows/s median (best)  {cells}")


def token_windows(model, text: str, size: int) -> list[str]:
    """Consecutive stretches of `text` of `size` tokens each (the tokenizer's offsets)."""
    offsets = model._plain.encode(text, add_special_tokens=False).offsets
    return [text[offsets[i][0] : offsets[min(i + size, len(offsets)) - 1][1]] for i in range(0, len(offsets), size)]


if __name__ == "__main__":
    main()
