"""Context IR speed: build an envelope of 10 sources, estimate 10,000 characters, fit a budget.

    .venv/bin/python bench/ir_bench.py

Pure Python, no database or network. Prints median timings over repeated runs
and writes bench/results/ir.json.
"""

import harness  # noqa: I001  (puts the project on the path)

from llm_platform.ir import (  # noqa: E402
    ProviderCapabilities,
    build_envelope,
    estimate_tokens,
    fit_to_budget,
    render_text,
    sources_from_spans,
    stage_costs,
    to_anthropic,
)

SOURCES = 10
SPANS_PER_SOURCE = 20
SENTENCE = "Revenue in the third quarter rose by fifteen percent, driven by enterprise renewals in Europe. "


def make_spans(source_number: int) -> list[dict]:
    spans = []
    for i in range(1, SPANS_PER_SOURCE + 1):
        text = f"Source {source_number}, part {i}. " + SENTENCE * 10
        spans.append({"span_id": f"S{i}", "text": text, "locator": f"p. {i}", "start": 0, "end": len(text)})
    return spans


def main() -> None:
    span_sets = [make_spans(n) for n in range(SOURCES)]
    caps = ProviderCapabilities.of_class("D1")

    def build():
        sources = [sources_from_spans(f"file{n}.pdf", "pdf", spans) for n, spans in enumerate(span_sets)]
        return build_envelope("Summarise revenue.", sources, capabilities=caps)

    envelope = build()
    text_10k = (SENTENCE * 200)[:10_000]
    costs = stage_costs(envelope)
    limits = {f"stage_{k}_limit": costs[k] for k in (1, 2, 3)}
    results = {
        "sources": SOURCES,
        "chunks": len(envelope.chunks),
        "rendered_chars": len(render_text(envelope)),
        "envelope_tokens_estimate": costs[0],
        "build_envelope_10_sources_ms": harness.median_ms(build, 20),
        "estimate_tokens_10000_chars_ms": harness.median_ms(lambda: estimate_tokens(text_10k), 200),
        "estimate_tokens_10000_chars": estimate_tokens(text_10k),
        "render_text_ms": harness.median_ms(lambda: render_text(envelope), 20),
        "to_anthropic_ms": harness.median_ms(
            lambda: to_anthropic(envelope, system="s", model="m", max_tokens=1024), 20
        ),
    }
    for name, limit in limits.items():
        results[f"fit_to_budget_{name}_ms"] = harness.median_ms(lambda limit=limit: fit_to_budget(envelope, limit), 10)
    results["fit_to_budget_stage_5_ms"] = harness.median_ms(lambda: fit_to_budget(envelope, costs[5]), 10)

    harness.write_results("ir", results)


if __name__ == "__main__":
    main()
