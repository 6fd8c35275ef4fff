"""Does the chat answer when the files answer, and ask when they do not? (issue 12, item 4)

The labelled set (tests/fixtures/chat/labelled.json) is ours: questions many in other
words than the files use, each with words its answering span holds, and questions the
files cannot answer, several near misses ("Who chaired the board meeting in May?" when
the minutes of that meeting name no chair). The files are the Python-docs corpus
(tests/fixtures/library_corpus) and four small operations documents of our own. The
tuning part (115 questions) is what the answer rules and thresholds were fitted on; the
held-out part (44: 28 answerable, half of them in a colleague's words, 16 not) was
written afterwards by someone who never saw the answering code and is frozen
(tests/conversation/test_chat_quality.py holds its hash and guards both rates on it).

A question counts as answered when the turn answers and one of its citations is a span
whose text holds the labelled words; as asked when the turn returns a context request.
Each question is asked in a fresh conversation (an open request would queue the next).
Used by bench/chat_bench.py (the figures) and the test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from bench.retrieval_quality import corpus_files

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "chat"


@dataclass(frozen=True)
class LabelledQuestion:
    question: str
    answers: tuple[str, ...]  # words an answering span holds (one of them); (): the files cannot answer it
    held_out: bool

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def labelled(*, held_out: bool | None = None) -> list[LabelledQuestion]:
    items = json.loads((FIXTURES / "labelled.json").read_text(encoding="utf-8"))["questions"]
    questions = [LabelledQuestion(i["question"], tuple(i["answers"]), i["held_out"]) for i in items]
    return [q for q in questions if held_out is None or q.held_out == held_out]


def session_files() -> dict[str, bytes]:
    """The Python-docs pages and our operations documents, as a session's uploads."""
    own = {path.name: path.read_bytes() for path in sorted(FIXTURES.iterdir()) if path.suffix in (".md", ".txt")}
    return {**corpus_files(), **own}


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).casefold()


def ask(session, user, question: str) -> dict:
    """One turn in a fresh conversation: the service's result, and the texts of the spans it cites."""
    from context_app import provenance
    from conversation_app import services
    from conversation_app.artifacts import source_versions
    from conversation_app.models import Conversation

    Conversation.objects.filter(session=session).delete()
    with mock.patch.object(services, "_schedule_sla"):  # the SLA's timers are not what is measured
        result = services.post_message(session, user, question)
    cited = result.get("message", {}).get("citations", []) if result["status"] == "ok" else []
    texts = provenance.span_texts(cited, source_versions(session))
    return {**result, "cited_texts": list(texts.values())}


def evaluate(session, user, questions: list[LabelledQuestion]) -> dict:
    """Both rates over `questions`, and what each turn did."""
    rows = []
    for item in questions:
        result = ask(session, user, item.question)
        if not item.answerable:
            correct = result["status"] == "context_required"
        else:
            texts = [_normal(text) for text in result["cited_texts"]]
            correct = result["status"] == "ok" and any(_normal(a) in t for a in item.answers for t in texts)
        rows.append(
            {
                "question": item.question,
                "answerable": item.answerable,
                "correct": correct,
                "status": result["status"],
                "answer": result.get("message", {}).get("content", ""),
            }
        )
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    return {
        "answered_with_span": round(sum(r["correct"] for r in answerable) / max(len(answerable), 1), 3),
        "asked_when_unanswerable": round(sum(r["correct"] for r in unanswerable) / max(len(unanswerable), 1), 3),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "per_question": rows,
    }
