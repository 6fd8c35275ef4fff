"""Bad input gets a clear answer, never a 500: every endpoint of the API and of the pages, with every
method, given bodies a careless or hostile client sends (not JSON, the wrong JSON type, wrong field
types, huge and NUL-laden strings, ids that are not ids, numbers out of range, mangled form indexes)."""

import itertools
import json
import uuid

import pytest
from django.test import Client

from context_app import services as context_services
from research_app.services import create_session
from tests.factories import make_member

# On SQLite alone: what is checked is the views' handling of their input, which no database changes.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.one_database]

JSON_BODIES = [
    b"",
    b"not json",
    b'{"a":',
    b"[]",
    b"null",
    b"1",
    b'"x"',
    b"{}",
    json.dumps({"question": None}).encode(),
    json.dumps({"question": ["a"]}).encode(),
    json.dumps({"question": "x" * 200_000}).encode(),
    json.dumps({"title": 5, "question": {"a": 1}}).encode(),
    json.dumps({"question": "\u0000"}).encode(),
    json.dumps({"message": None}).encode(),
    json.dumps({"message": "hi", "request_id": "zz"}).encode(),
    json.dumps({"auto_parse": "yes"}).encode(),
    json.dumps({"ui_debug": "no"}).encode(),
    json.dumps({"payloads": "x"}).encode(),
    json.dumps({"payloads": [None, 1, {"kind": 5}]}).encode(),
    json.dumps({"max_depth": -1, "max_nodes": "a", "question": "q"}).encode(),
    json.dumps({"max_depth": 10**30, "question": "q"}).encode(),
    json.dumps({"session_id": "nope", "message": "x"}).encode(),
    json.dumps({"session_id": str(uuid.uuid4()), "message": "x"}).encode(),
    json.dumps({"request_id": str(uuid.uuid4()), "payloads": []}).encode(),
]
CONTENT_TYPES = ["application/json", "text/plain", "multipart/form-data; boundary=x"]
FORMS = [
    {},
    {"question": ""},
    {"question": "x" * 100_000},
    {"message": ""},
    {"revision": "abc"},
    {"revision": "-1"},
    {"auto_parse": "maybe"},
    {"max_depth": "-5", "question": "q"},
    {"max_depth": "1e99", "question": "q"},
    {"request_id": "nope", "payloads.0.kind": "zz"},
    {"payloads.x.kind": "text"},
    {"payloads.99999999999.kind": "text"},
    {"payloads.0.kind": "text", "payloads.0.text": ""},
    {"run": "zz"},
    {"tab": "preview", "version": "zz", "span": "S1", "json": "1"},
    {"tab": "preview", "version": str(uuid.uuid4()), "span": "S999"},
    {"tab": "file", "file": "zz"},
]


@pytest.fixture
def member_client():
    user, _team = make_member()
    session = create_session(user=user, title="Sweep", question="Did the valves pay off?")
    upload = context_services.Upload("notes.md", b"# Valves\n\nThe valves cut losses by 12 percent.\n")
    [file] = context_services.upload_files(session.context_set, [upload]).manifest["files"]
    client = Client()
    client.force_login(user)
    return client, str(session.pk), file["file_id"]


def server_errors(client, requests) -> list:
    """The requests (method, path, keyword arguments) answered with a 5xx or an exception."""
    failed = []
    for method, path, kwargs in requests:
        try:
            status = getattr(client, method)(path, **kwargs).status_code
        except Exception as error:  # the test client re-raises what the view raised
            failed.append((method, path, kwargs.get("data"), repr(error)[:200]))
            continue
        if status >= 500:
            failed.append((method, path, kwargs.get("data"), status))
    return failed


def test_no_api_endpoint_answers_bad_input_with_a_server_error(member_client):
    client, sid, fid = member_client
    paths = [
        "/api/sessions",
        f"/api/sessions/{sid}",
        f"/api/sessions/{sid}/runs",
        f"/api/sessions/{sid}/usage",
        f"/api/sessions/{sid}/context",
        f"/api/sessions/{sid}/context/parse",
        f"/api/sessions/{sid}/context/digest",
        f"/api/sessions/{sid}/context/files",
        f"/api/sessions/{sid}/context/files/not-an-id",
        f"/api/sessions/{sid}/context/files/{fid}",
        f"/api/sessions/{sid}/context/files/{fid}/retry",
        f"/api/sessions/{sid}/context/files/{fid}/preview",
        f"/api/sessions/{sid}/context/files/{fid}/digest",
        f"/api/sessions/{sid}/context/files/{uuid.uuid4()}/retry",
        "/api/me/preferences",
        "/api/research/conversation",
        "/api/research/conversation/context-supply",
        "/api/runs/not-an-id/cancel",
        f"/api/runs/{uuid.uuid4()}/update",
        "/api/sources/not-an-id/S1",
    ]
    headers = {"HTTP_IF_MATCH": '"not-a-revision"'}
    requests = [("get", path, headers) for path in paths]
    # Every body as JSON; a JSON object and a non-JSON body under the other content types.
    bodies = [(body, "application/json") for body in JSON_BODIES]
    bodies += [(body, content_type) for body in (b"{}", b"not json") for content_type in CONTENT_TYPES[1:]]
    for path, method, (body, content_type) in itertools.product(paths, ["post", "patch", "put", "delete"], bodies):
        kwargs = {"data": body, "content_type": content_type, "HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4()), **headers}
        requests.append((method, path, kwargs))
    assert server_errors(client, requests) == []


def test_no_page_answers_bad_input_with_a_server_error(member_client):
    client, sid, fid = member_client
    paths = [
        "/",
        "/sessions/not-an-id/",
        f"/sessions/{sid}/",
        f"/sessions/{sid}/chat/",
        f"/sessions/{sid}/chat/supply/",
        f"/sessions/{sid}/runs/",
        f"/sessions/{sid}/runs/not-an-id/cancel/",
        f"/sessions/{sid}/runs/{uuid.uuid4()}/update/",
        "/sources/not-an-id/S1/",
        f"/sessions/{sid}/context/files/",
        f"/sessions/{sid}/context/options/",
        f"/sessions/{sid}/context/parse/",
        f"/sessions/{sid}/context/pane/",
        f"/sessions/{sid}/context/view/",
        f"/sessions/{sid}/context/files/{uuid.uuid4()}/",
        f"/sessions/{sid}/context/files/not-an-id/retry/",
        f"/sessions/{sid}/context/files/{fid}/",
        f"/sessions/{sid}/context/files/{fid}/retry/",
        f"/sessions/{sid}/context/files/{uuid.uuid4()}/delete/",
    ]
    requests = [
        (method, path, {"data": form}) for path, form, method in itertools.product(paths, FORMS, ["get", "post"])
    ]
    assert server_errors(client, requests) == []
