"""`/ws/sessions/{sid}/context/` over the real ASGI app and the Redis channel layer."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from config.asgi import application
from tests.factories import ContextApi, make_member

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

HEADERS = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def connect(sid: str, token: str) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, f"/ws/sessions/{sid}/context/?token={token}", headers=HEADERS)


def test_member_receives_context_updated_after_an_upload():
    user, _ = make_member()
    api = ContextApi(user)
    sid = api.create_session()

    async def scenario():
        communicator = connect(sid, api.token)
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        response = await sync_to_async(api.upload)(sid, {"notes.txt": b"Pumps were replaced in May 2023."})
        assert response.status_code == 201
        message = await communicator.receive_json_from(timeout=10)
        await communicator.disconnect()
        return message

    message = async_to_sync(scenario)()
    assert message["type"] == "context.updated"
    assert message["revision"] == 1
    assert [f["filename"] for f in message["files"]] == ["notes.txt"]
    assert message["last_diff"]["new"] == 1
    assert message["aggregate_digest_status"] == "stale"


def test_statuses_stream_while_parsing(scripted_llm):
    # Each push carries the state at the time it is sent: with an instant model the
    # "parsing" push can already read "ready". A 0.3 s model call keeps parsing visible.
    scripted_llm.delay = 0.3
    user, _ = make_member()
    api = ContextApi(user)
    sid = api.create_session()
    api.upload(sid, {"notes.txt": b"Pumps were replaced in May 2023. Costs may rise."})

    async def scenario():
        communicator = connect(sid, api.token)
        assert (await communicator.connect(timeout=10))[0]
        await sync_to_async(api.parse)(sid)
        seen = []
        while True:
            message = await communicator.receive_json_from(timeout=20)
            seen.append((message["files"][0]["digest_status"], message["aggregate_digest_status"]))
            if seen[-1] == ("ready", "ready"):
                break
        await communicator.disconnect()
        return seen

    seen = async_to_sync(scenario)()
    assert ("parsing", "stale") in seen
    assert seen[-1] == ("ready", "ready")
    assert {r.task for r in scripted_llm.requests} == {"per_file_digest", "aggregate_digest"}, "the slow calls"


def test_non_members_and_anonymous_are_refused():
    owner, _ = make_member()
    sid = ContextApi(owner).create_session()
    stranger = ContextApi(make_member()[0])

    async def attempt(token: str):
        communicator = connect(sid, token)
        connected, code = await communicator.connect(timeout=10)
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(attempt)(stranger.token) == (False, 4404)
    assert async_to_sync(attempt)("not-a-token")[0] is False


def _handshake(path: str, headers: list) -> bool:
    async def scenario():
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await communicator.connect(timeout=10)
        # Disconnect even when refused, as a server does: a consumer left running is cancelled by the event
        # loop's shutdown instead, and a cancelled channel-layer receive could then hang it (seen under load).
        await communicator.disconnect()
        return connected

    return async_to_sync(scenario)()


def test_a_token_connects_without_an_origin_header():
    """API clients often send no Origin; the README offers them ?token=."""
    user, _ = make_member()
    api = ContextApi(user)
    sid = api.create_session()
    assert _handshake(f"/ws/sessions/{sid}/context/?token={api.token}", [(b"host", b"localhost")])
    assert not _handshake(f"/ws/sessions/{sid}/context/?token=not-a-token", [(b"host", b"localhost")])


def test_a_session_cookie_from_a_foreign_origin_is_refused():
    from django.test import Client

    user, _ = make_member()
    sid = ContextApi(user).create_session()
    browser = Client()
    browser.force_login(user)
    cookie = (b"cookie", f"sessionid={browser.cookies['sessionid'].value}".encode())
    path = f"/ws/sessions/{sid}/context/"
    assert _handshake(path, [cookie, (b"origin", b"http://localhost"), (b"host", b"localhost")])
    assert not _handshake(path, [cookie, (b"origin", b"https://evil.example"), (b"host", b"localhost")])
    assert not _handshake(path, [cookie, (b"host", b"localhost")])
