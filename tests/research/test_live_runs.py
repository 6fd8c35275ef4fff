"""A session's runs, live for every member watching it: `/ws/sessions/{sid}/runs/` (run.created, run.status)."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from config.asgi import application
from tests.factories import ContextApi, extract_uploads, make_member
from tests.research.test_research_runs import SURVEY, VALVES, events_of, finished, session_with_files, start
from tests.research.test_research_runs_stack import HEADERS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

ORDER = ["queued", "binding", "running", "reporting", "completed"]


def connect(sid: str, token: str | None) -> WebsocketCommunicator:
    query = f"?token={token}" if token is not None else ""
    return WebsocketCommunicator(application, f"/ws/sessions/{sid}/runs/{query}", headers=HEADERS)


def test_a_teammate_watching_the_session_sees_a_run_start_and_change_status():
    """Regression: only the browser that started a run learnt of it; a teammate saw it after a reload."""
    starter, team = make_member()
    alice, bob = ContextApi(starter), ContextApi(make_member(team, username="bob-the-teammate")[0])
    sid = session_with_files(alice, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})

    async def watch():
        communicator = connect(sid, bob.token)
        assert (await communicator.connect(timeout=10))[0]
        rid = await sync_to_async(start)(alice, sid, max_depth=1)
        received = []
        while not received or received[-1]["run"]["status"] != "completed":
            received.append(await communicator.receive_json_from(timeout=60))
        await communicator.disconnect()
        return rid, received

    rid, received = async_to_sync(watch)()
    created = received[0]
    assert created["type"] == "run.created" and created["by"] == starter.username
    assert created["run"]["run_id"] == rid and created["run"]["status"] == "queued"
    assert created["run"] == alice.get(f"/api/sessions/{sid}/runs").json()["runs"][0] | {
        "status": "queued",
        "finished_at": None,
    }
    statuses = [m["run"]["status"] for m in received[1:]]
    assert all(m["type"] == "run.status" and m["run"]["run_id"] == rid for m in received[1:])
    # One message per change of status; each says the status the run had when it was sent
    # (sent by different workers, two may arrive the other way round: a page keeps the later one).
    assert len(statuses) == 4 and set(statuses) <= set(ORDER) and "completed" in statuses
    assert [e["type"] for e in events_of(alice, rid)[-2:]] == ["run_completed", "coverage_recorded"]


def test_only_the_sessions_members_may_watch_its_runs():
    user, _team = make_member()
    api = ContextApi(user)
    sid = api.create_session()
    stranger = ContextApi(make_member()[0])

    async def attempt(session_id, token):
        communicator = connect(session_id, token)
        connected, code = await communicator.connect(timeout=10)
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(attempt)(sid, stranger.token) == (False, 4404)
    assert async_to_sync(attempt)(sid, None) == (False, 4404)
    assert async_to_sync(attempt)("not-a-uuid", api.token) == (False, 4404)
    assert async_to_sync(attempt)(sid, api.token)[0] is True


def test_a_teammate_watching_the_session_is_offered_an_update_like_a_new_run():
    """Update report (issue 25): the update run is announced on the session's runs group as run.created,
    naming the run it updates, and told through to its report."""
    starter, team = make_member()
    alice, bob = ContextApi(starter), ContextApi(make_member(team, username="bob-the-teammate")[0])
    sid = alice.create_session(question="Did the valve programme reduce water losses in district 3?")
    alice.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(alice, sid, max_depth=0)
    assert finished(alice, rid)["status"] == "completed"
    alice.replace(
        sid, alice.file_id(sid, "valves.md"), "valves.md", VALVES.replace("18 percent", "11 percent").encode()
    )
    extract_uploads()

    async def watch():
        communicator = connect(sid, bob.token)
        assert (await communicator.connect(timeout=10))[0]
        response = await sync_to_async(alice.post)(f"/api/runs/{rid}/update")
        assert response.status_code == 202, response.content
        received = []
        while not received or received[-1]["run"]["status"] != "completed":
            received.append(await communicator.receive_json_from(timeout=60))
        await communicator.disconnect()
        return response.json()["run_id"], received

    new_rid, received = async_to_sync(watch)()
    created = received[0]
    assert created["type"] == "run.created" and created["by"] == starter.username
    assert created["run"]["run_id"] == new_rid and created["run"]["updates_run"] == rid
    assert received[-1]["run"]["status"] == "completed"
    assert bob.get(f"/api/runs/{new_rid}").json()["report"]["update"]["updates_run"] == rid
