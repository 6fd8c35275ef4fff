"""Calibration of the grounding check: precision and recall on the hand-labelled set, per threshold.

    python bench/grounding_bench.py     (make bench runs it)

The product's threshold is llm_platform.grounding.SUPPORT_THRESHOLD; the figures
for it and for its neighbours go to bench/results/grounding.json.
"""

import json

import harness  # noqa: F401  (puts the project on the path)

from llm_platform import grounding

LABELLED = harness.ROOT / "tests" / "fixtures" / "grounding" / "labelled.json"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def confusion(examples: list[dict], threshold: float) -> dict:
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for example in examples:
        predicted = grounding.support(example["statement"], example["text"]).passes(threshold)
        key = ("t" if predicted == example["supported"] else "f") + ("p" if predicted else "n")
        counts[key] += 1
    counts["precision"] = round(counts["tp"] / max(counts["tp"] + counts["fp"], 1), 3)
    counts["recall"] = round(counts["tp"] / max(counts["tp"] + counts["fn"], 1), 3)
    return counts


def main() -> None:
    examples = json.loads(LABELLED.read_text(encoding="utf-8"))["examples"]
    table = {str(t): confusion(examples, t) for t in THRESHOLDS}
    chosen = confusion(examples, grounding.SUPPORT_THRESHOLD)
    harness.write_results(
        "grounding",
        {
            "examples": len(examples),
            "supported": sum(e["supported"] for e in examples),
            "threshold": grounding.SUPPORT_THRESHOLD,
            "precision": chosen["precision"],
            "recall": chosen["recall"],
            **{f"at {t}": f"P {c['precision']} R {c['recall']}" for t, c in table.items()},
        },
        per_threshold=table,
    )


if __name__ == "__main__":
    main()
