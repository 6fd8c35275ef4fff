"""The chat's answer/ask decision on the hand-labelled set (bench/chat_quality.py).

    make bench        # or: .venv/bin/python bench/chat_bench.py

Uploads the files and parses them (digests, offline provider) into a throwaway
database, asks every labelled question through the real chat service, and writes
bench/results/chat.json: the share of answerable questions whose answer cites the
answering span, and the share of unanswerable ones that get a context request
(goal: both ≥ 0.9), for the whole set and its held-out third, and both rates on the
calibration part (the other two thirds) for thresholds around the product's
(conversation_app.offline.answering.ANSWER_SCORE), which was chosen on that part alone.
"""

import harness  # noqa: I001  (sets Django up before the project's imports)

harness.setup_django()

from bench.chat_quality import evaluate, labelled, session_files  # noqa: E402
from context_app import services  # noqa: E402
from conversation_app.offline import answering  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65)


def main() -> None:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Chat bench")
    services.upload_files(session.context_set, [services.Upload(n, d) for n, d in session_files().items()])
    services.request_parse(session.context_set)
    everything = evaluate(session, user, labelled())
    held_out = evaluate(session, user, labelled(held_out=True))
    fresh = evaluate(session, user, labelled(fresh=True))
    missed = [r["question"] for r in everything["per_question"] if not r["correct"]]
    calibration = {}
    chosen = answering.ANSWER_SCORE
    for threshold in THRESHOLDS:
        answering.ANSWER_SCORE = threshold
        rates = evaluate(session, user, labelled(held_out=False))
        calibration[str(threshold)] = {k: rates[k] for k in ("answered_with_span", "asked_when_unanswerable")}
    answering.ANSWER_SCORE = chosen
    harness.write_results(
        "chat",
        {
            "answerable questions": everything["answerable"],
            "unanswerable questions": everything["unanswerable"],
            "answer threshold": answering.ANSWER_SCORE,
            "answered_with_span": everything["answered_with_span"],
            "asked_when_unanswerable": everything["asked_when_unanswerable"],
            "held-out answered_with_span": held_out["answered_with_span"],
            "held-out asked_when_unanswerable": held_out["asked_when_unanswerable"],
            "fresh answered_with_span": fresh["answered_with_span"],
            "fresh asked_when_unanswerable": fresh["asked_when_unanswerable"],
            "missed": len(missed),
        },
        calibration_part=calibration,
        missed=missed,
        per_question=everything["per_question"],
    )


if __name__ == "__main__":
    main()
