"""The chat's answer/ask decision on the hand-labelled set (bench/chat_quality.py).

    make bench        # or: .venv/bin/python bench/chat_bench.py

Uploads the files and parses them (digests, offline provider) into a throwaway
database, asks every labelled question through the real chat service, and writes
bench/results/chat.json: the share of answerable questions whose answer cites the
answering span, and the share of unanswerable ones that get a context request
(goal: both ≥ 0.9), for the tuning part and the held-out part, and both rates on the
tuning part for thresholds around the product's (conversation_app.offline.answering:
ANSWER_SCORE, and ANSWER_SIMILARITY with embeddings), which were chosen on it alone.
The embeddings are the configured ones (GROUNDWORK_EMBEDDINGS, `local` by default;
`off` for term overlap alone).
"""

import harness  # noqa: I001  (sets Django up before the project's imports)

harness.setup_django()

from bench.chat_quality import evaluate, labelled, session_files  # noqa: E402
from context_app import services  # noqa: E402
from conversation_app.offline import answering  # noqa: E402
from llm_platform import embeddings  # noqa: E402
from research_app.services import create_session  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.6)  # ANSWER_SCORE
SIMILARITIES = (0.3, 0.35, 0.4, 0.45, 0.5)  # ANSWER_SIMILARITY (with embeddings)
RATES = ("answered_with_span", "asked_when_unanswerable")


def main() -> None:
    user, _team = ensure_demo_user("bench", "bench", "Bench")
    session = create_session(user=user, title="Chat bench")
    services.upload_files(session.context_set, [services.Upload(n, d) for n, d in session_files().items()])
    services.request_parse(session.context_set)
    tuning = evaluate(session, user, labelled(held_out=False))
    held_out = evaluate(session, user, labelled(held_out=True))
    calibration = {}
    chosen = answering.ANSWER_SCORE, answering.ANSWER_SIMILARITY
    for score, similarity in [(t, chosen[1]) for t in THRESHOLDS] + [(chosen[0], s) for s in SIMILARITIES]:
        answering.ANSWER_SCORE, answering.ANSWER_SIMILARITY = score, similarity
        rates = evaluate(session, user, labelled(held_out=False))
        calibration[f"score {score}, similarity {similarity}"] = {k: rates[k] for k in RATES}
    answering.ANSWER_SCORE, answering.ANSWER_SIMILARITY = chosen
    harness.write_results(
        "chat",
        {
            "embeddings": embeddings.model_key() if embeddings.enabled() else "off",
            "answer threshold": answering.ANSWER_SCORE,
            "similarity threshold": answering.ANSWER_SIMILARITY,
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


if __name__ == "__main__":
    main()
