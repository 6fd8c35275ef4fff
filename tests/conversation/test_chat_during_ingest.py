"""A big ingest shares the model-call budget with the chat, and does not starve it (issue 13)."""

import pytest

from context_app.models import ContextFile, ContextSet, DigestStatus
from llm_platform.models import LLMCall
from tests.factories import ContextApi, make_member, wait_until
from tests.research.test_research_runs import VALVES

# SQLite alone: its one writer at a time is the harder case for a reply that must get through a parse.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker_thread"),
    pytest.mark.one_database,
]


def test_a_chat_reply_arrives_while_a_hundred_files_are_parsing(scripted_llm, settings):
    # One call in flight for everyone: the ingest's digests and the chat compete for it.
    settings.GROUNDWORK_LLM_MAX_IN_FLIGHT = 1
    api = ContextApi(make_member()[0])
    sid = api.create_session(question="Did the valve programme pay off?")
    api.upload(sid, {"valves.md": VALVES.encode()})
    api.parse(sid)
    api.settle(sid)

    scripted_llm.delay = 0.05  # slow model calls: 100 files take 5 s one at a time, past any chat turn
    # The most files Django takes in a request (DATA_UPLOAD_MAX_NUMBER_FILES).
    ingest = {f"site-{i:03d}.txt": f"Site {i} replaced {i % 9 + 2} pumps in 2021.\n".encode() for i in range(100)}
    assert api.upload(sid, ingest).status_code == 201
    api.parse(sid)
    context_set = ContextSet.objects.get(session_id=sid)
    wait_until(
        lambda: LLMCall.objects.filter(session_id=sid, task="per_file_digest").count() >= 5,
        timeout=180,  # each file is extracted in a child process first: minutes on a loaded machine
        message="the ingest's digests to be under way",
    )

    response = api.post(
        "/api/research/conversation",
        {"session_id": sid, "message": "How much did the valve programme cost?"},
        format="json",
    )

    parsed = ContextFile.objects.filter(context_set=context_set, digest_status=DigestStatus.READY).count()
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["status"] == "ok" and "1.2 million euros" in answer["message"]["content"]
    assert parsed < 101, "the reply came while files were still parsing"
    context_set.refresh_from_db()
    assert context_set.aggregate_digest_status != DigestStatus.READY
    chat = LLMCall.objects.get(task="chat_turn")
    assert chat.outcome == "ok"

    manifest = api.settle(sid, timeout=180)  # the ingest still finishes, every file ready
    assert {f["digest_status"] for f in manifest["files"]} == {"ready"}
    assert manifest["aggregate_digest_status"] == "ready"
