"""Request bodies (research_app/api/bodies.py): values only as sent, the same messages as before, refusals replayed."""

import pytest
from django.test import Client

from tests.factories import ContextApi, make_member
from workspaces.api.bodies import AsSent, Body, Boolean, Text, check

pytestmark = pytest.mark.django_db(transaction=True)


class Probe(Body):
    refuse_unknown = True
    name = Text(error_messages={"invalid": "name must be a string"})
    flag = Boolean(required=False, default=False, error_messages={"invalid": "flag must be true or false"})
    extra = AsSent(required=False, allow_null=True)


def test_values_only_as_sent_and_the_first_error_in_field_order():
    assert check(Probe, {"name": "a", "extra": [1]}) == ({"name": "a", "flag": False, "extra": [1]}, None)
    assert check(Probe, {"name": 3, "flag": "true"}) == ({}, "name must be a string")
    assert check(Probe, {"name": "a", "flag": 1}) == ({}, "flag must be true or false")
    assert check(Probe, {"name": "a", "zeta": 1, "alpha": 2}) == ({}, "unknown field(s): alpha, zeta")
    assert check(Probe, ["name"]) == ({}, "body must be a JSON object")
    assert check(Probe, None) == ({}, "body must be a JSON object")


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def test_bad_bodies_keep_their_messages(api):
    for body in ({"ui_debug": "true"}, {"ui_debug": 1}, {}, []):
        response = api.patch("/api/me/preferences", body, format="json")
        assert response.status_code == 400 and response.json() == {"error": 'body must be {"ui_debug": true|false}'}
    sid = api.create_session()
    for body in ({"auto_parse": "yes"}, {"batch_ingest": 1}, {}):
        response = api.patch(f"/api/sessions/{sid}/context", body, format="json")
        assert response.json() == {"error": 'body must be {"auto_parse"?: true|false, "batch_ingest"?: true|false}'}
    for body in ({}, [], {"title": " "}, {"title": None}, {"title": 7}):
        response = api.post("/api/sessions", body, format="json")
        assert response.status_code == 400 and response.json() == {"error": "title is required"}, body
    assert api.post(f"/api/sessions/{sid}/runs", [], format="json").json() == {"error": "body must be a JSON object"}
    chat = {"session_id": sid, "message": "hi", "force": "yes"}
    response = api.post("/api/research/conversation", chat, format="json")
    assert response.json() == {"error": 'body must be {"session_id", "message": "…", "force"?: true|false}'}


def test_a_refused_body_is_replayed_like_any_answer_the_view_returns(api):
    first = api.patch("/api/me/preferences", {"ui_debug": "x"}, key="same-key", format="json")
    again = api.patch("/api/me/preferences", {"ui_debug": "x"}, key="same-key", format="json")
    assert first.status_code == again.status_code == 400
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/api/nope"), ("post", "/api/sessions/x/y/z"), ("get", "/api/"), ("delete", "/api/runs/1/2/3/4")],
)
def test_an_unknown_api_path_answers_a_json_404(method, path):
    # CSRF checks on, as for a real client: a POST without a cookie is still told the path is unknown.
    response = getattr(Client(enforce_csrf_checks=True), method)(path)
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {"error": f"no such API endpoint: {path}"}
