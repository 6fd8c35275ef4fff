"""The chat's answer/ask decision on the hand-labelled set (bench/chat_quality.py).

    make bench        # or: .venv/bin/python bench/chat_bench.py [--no-sweep] [--tuning-only]

Uploads the files and parses them (digests, offline provider) into a throwaway
database, asks every labelled question through the real chat service, and writes
bench/results/chat.json: the share of answerable questions whose answer cites the
answering span, and the share of unanswerable ones that get a context request
(goal: both ≥ 0.9), for the tuning part and the held-out part, and both rates on the
tuning part for values around the product's (conversation_app.offline.answering:
MEANING_SCORE, ANSWER_SIMILARITY, MEANING_WEIGHT, ANSWER_BLEND and SECOND_RATIO with embeddings,
ANSWER_SCORE without), which were chosen
on it alone (`--no-sweep` leaves the sweep out), and the mean time of a turn.
The embeddings are the configured ones (GROUNDWORK_EMBEDDINGS, `local` by default;
`off` for term overlap alone).
"""

import argparse
import time

import harness  # noqa: I001  (sets Django up before the project's imports)

parser = argparse.ArgumentParser()
parser.add_argument("--no-sweep", action="store_true", help="only the product's values, no sweep on the tuning part")
parser.add_argument(
    "--tuning-only", action="store_true", help="the tuning part alone, for trying a change (writes chat_tuning.json)"
)
args = parser.parse_args()
harness.setup_django()

from bench.chat_quality import evaluate, labelled, session_files  # noqa: E402
from context_app import services  # noqa: E402
from conversation_app.offline import answering  # noqa: E402
from llm_platform import embeddings  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.6)  # ANSWER_SCORE (embeddings off)
# With embeddings, each varied alone around the product's value.
MEANING_VALUES = {
    "MEANING_SCORE": (0.35, 0.4, 0.45, 0.5, 0.55),
    "ANSWER_SIMILARITY": (0.35, 0.4, 0.45, 0.5, 0.55),
    "MEANING_ALONE": (0.5, 0.55, 0.6, 0.65, 1.0),
    "MEANING_WEIGHT": (0.2, 0.3, 0.5, 0.7),
    "ANSWER_BLEND": (0.0, 0.5, 0.52, 0.54, 0.56),
    "SECOND_RATIO": (0.0, 0.8, 0.9, 0.95),
    "PROXIMITY_WEIGHT": (0.0, 0.05, 0.1, 0.2),
}
RATES = ("answered_with_span", "asked_when_unanswerable")


def main() -> None:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Chat bench")
    services.upload_files(session.context_set, [services.Upload(n, d) for n, d in session_files().items()])
    services.request_parse(session.context_set)
    started = time.perf_counter()
    evaluate(session, user, labelled()[:1])  # loads the model and embeds the session's digests: timed apart
    first_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    tuning = evaluate(session, user, labelled(held_out=False))
    if args.tuning_only:
        harness.write_results(
            "chat_tuning",
            {"tuning " + rate: tuning[rate] for rate in RATES},
            missed=[r["question"] for r in tuning["per_question"] if not r["correct"]],
        )
        return
    held_out = evaluate(session, user, labelled(held_out=True))
    turns = sum(part["answerable"] + part["unanswerable"] for part in (tuning, held_out))
    turn_ms = (time.perf_counter() - started) * 1000 / turns
    calibration = {}
    if not args.no_sweep:
        calibration = sweep(session, user)
    harness.write_results(
        "chat",
        {
            "embeddings": embeddings.model_key() if embeddings.enabled() else "off",
            **{name.lower(): getattr(answering, name) for name in MEANING_VALUES},
            "answer threshold (embeddings off)": answering.ANSWER_SCORE,
            "first turn ms": round(first_ms),
            "mean ms per turn after it": round(turn_ms),
            "tuning questions": f"{tuning['answerable']} answerable, {tuning['unanswerable']} not",
            "tuning answered_with_span": tuning["answered_with_span"],
            "tuning asked_when_unanswerable": tuning["asked_when_unanswerable"],
            "held-out questions": f"{held_out['answerable']} answerable, {held_out['unanswerable']} not",
            "held-out answered_with_span": held_out["answered_with_span"],
            "held-out asked_when_unanswerable": held_out["asked_when_unanswerable"],
        },
        tuning_part_thresholds=calibration,
        held_out_missed=[r["question"] for r in held_out["per_question"] if not r["correct"]],
        per_question=tuning["per_question"] + held_out["per_question"],
    )


def sweep(session, user) -> dict:
    """Both rates on the tuning part for other values of the product's constants, one varied at a time."""
    calibration = {}
    if embeddings.enabled():
        for name, values in MEANING_VALUES.items():
            chosen = getattr(answering, name)
            for value in values:
                setattr(answering, name, value)
                rates = evaluate(session, user, labelled(held_out=False))
                calibration[f"{name} {value}"] = {k: rates[k] for k in RATES}
            setattr(answering, name, chosen)
        return calibration
    chosen = answering.ANSWER_SCORE
    for score in THRESHOLDS:
        answering.ANSWER_SCORE = score
        rates = evaluate(session, user, labelled(held_out=False))
        calibration[f"score {score}"] = {k: rates[k] for k in RATES}
    answering.ANSWER_SCORE = chosen
    return calibration


if __name__ == "__main__":
    main()
