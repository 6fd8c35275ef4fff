"""Every /api/ endpoint, tried by a member of another team against the first team's session, file, text
version, run, chat message and context request: a JSON 404, and not one row of the first team changed.

The endpoints and their methods are read from Django's URL resolver: an endpoint or a method this
table does not name fails the test, so a new one cannot go untried. Every request is resolved to the
route it stands for (a mistyped path would answer the API's catch-all 404 and prove nothing), and
every read is answered 200 to the first team's own member, so each 404 is the team check.
"""

from dataclasses import dataclass, field

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLResolver, get_resolver, resolve

from research_app.models import ResearchRun
from tests.factories import ContextApi, make_member
from tests.research.test_research_runs import QUESTION, VALVES
from workspaces.api.errors import unknown_endpoint

pytestmark = pytest.mark.django_db(transaction=True)  # jobs queued on commit run inline (eager)

PROJECT_APPS = ("workspaces", "context_app", "research_app", "conversation_app", "llm_platform")
UNCOVERED_QUESTION = "How did maintenance staffing change in the workshop?"  # the session cannot answer: a card


@dataclass
class Attempt:
    """One request, and the 404 message the endpoint gives for another team's object."""

    path: str
    not_found: str
    data: dict = field(default_factory=dict)
    multipart: bool = False

    def send(self, api: ContextApi, method: str):
        if method == "GET":
            return api.get(self.path, data=self.data)
        kwargs = {"format": "multipart" if self.multipart else "json"}
        if method == "DELETE":
            return api.delete(self.path)
        return getattr(api, method.lower())(self.path, self.data, **kwargs)


def upload(name: str) -> dict:
    # A new object each time: an upload is read once.
    return {"files": [SimpleUploadedFile(name, b"Pumps were replaced in 2021.\n")]}


def replacement() -> dict:
    return {"file": SimpleUploadedFile("valves.md", b"# Valves\n\nNothing was replaced.\n")}


NO_SESSION = "session not found"
NO_RUN = "run not found"
SESSION = "api/sessions/<str:sid>"
CONTEXT = f"{SESSION}/context"
FILE = f"{CONTEXT}/files/<str:fid>"
RUN = "api/runs/<str:rid>"

# {route: {method: the attempt against the first team's objects (ids)}}
ATTEMPTS = {
    SESSION: {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}", NO_SESSION),
        "PATCH": lambda ids: Attempt(f"/api/sessions/{ids['sid']}", NO_SESSION, {"spending_cap_usd": "0.01"}),
    },
    f"{SESSION}/usage": {"GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/usage", NO_SESSION)},
    f"{SESSION}/runs": {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/runs", NO_SESSION),
        "POST": lambda ids: Attempt(
            f"/api/sessions/{ids['sid']}/runs", NO_SESSION, {"question": "Anything?", "max_depth": 0}
        ),
    },
    CONTEXT: {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context", NO_SESSION),
        "PATCH": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context", NO_SESSION, {"auto_parse": True}),
    },
    f"{CONTEXT}/digest": {"GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/digest", NO_SESSION)},
    f"{CONTEXT}/parse": {"POST": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/parse", NO_SESSION)},
    f"{CONTEXT}/files": {
        "POST": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files", NO_SESSION, upload("pumps.txt"), True)
    },
    FILE: {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}", NO_SESSION),
        "PUT": lambda ids: Attempt(
            f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}", NO_SESSION, replacement(), True
        ),
        "DELETE": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}", NO_SESSION),
    },
    f"{FILE}/retry": {
        "POST": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}/retry", NO_SESSION)
    },
    f"{FILE}/preview": {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}/preview", NO_SESSION)
    },
    f"{FILE}/download": {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}/download", NO_SESSION)
    },
    f"{FILE}/digest": {
        "GET": lambda ids: Attempt(f"/api/sessions/{ids['sid']}/context/files/{ids['fid']}/digest", NO_SESSION)
    },
    "api/sources/<str:version>/<str:span>": {
        "GET": lambda ids: Attempt(f"/api/sources/{ids['version']}/{ids['span']}", "source not found")
    },
    RUN: {"GET": lambda ids: Attempt(f"/api/runs/{ids['rid']}", NO_RUN)},
    f"{RUN}/events": {"GET": lambda ids: Attempt(f"/api/runs/{ids['rid']}/events", NO_RUN)},
    f"{RUN}/report": {"GET": lambda ids: Attempt(f"/api/runs/{ids['rid']}/report", NO_RUN)},
    f"{RUN}/report.md": {"GET": lambda ids: Attempt(f"/api/runs/{ids['rid']}/report.md", NO_RUN)},
    f"{RUN}/report.docx": {"GET": lambda ids: Attempt(f"/api/runs/{ids['rid']}/report.docx", NO_RUN)},
    f"{RUN}/report.pdf": {"GET": lambda ids: Attempt(f"/api/runs/{ids['rid']}/report.pdf", NO_RUN)},
    f"{RUN}/cancel": {"POST": lambda ids: Attempt(f"/api/runs/{ids['rid']}/cancel", NO_RUN)},
    f"{RUN}/resume": {"POST": lambda ids: Attempt(f"/api/runs/{ids['rid']}/resume", NO_RUN)},
    f"{RUN}/update": {"POST": lambda ids: Attempt(f"/api/runs/{ids['rid']}/update", NO_RUN)},
    "api/research/conversation": {
        # The chat's history, named by the session in the query.
        "GET": lambda ids: Attempt("/api/research/conversation", NO_SESSION, {"session_id": ids["sid"]}),
        "POST": lambda ids: Attempt(
            "/api/research/conversation", NO_SESSION, {"session_id": ids["sid"], "message": "What did the valves cost?"}
        ),
    },
    "api/research/conversation/context-supply": {
        "POST": lambda ids: Attempt(
            "/api/research/conversation/context-supply",
            NO_SESSION,
            {
                "session_id": ids["sid"],
                "request_id": ids["request_id"],
                "payloads": [{"slot": "s1", "kind": "note", "text": "Staff fell from 6 to 4."}],
            },
        )
    },
    # A new session in the first team's name.
    "api/sessions": {
        "POST": lambda ids: Attempt("/api/sessions", "team not found", {"title": "Mine", "team": ids["team"]})
    },
}
# Endpoints that name no object of a team; what another team may not see through them is asserted apart.
NAMES_NO_TEAMS_OBJECT = {
    ("api/sessions", "GET"): "the caller's own sessions (the first team's must not be listed)",
    ("api/me/preferences", "GET"): "the caller's own preferences",
    ("api/me/preferences", "PATCH"): "the caller's own preferences",
}


def api_endpoints() -> set[tuple[str, str]]:
    """(route, method) of every view under /api/ (not the catch-all JSON 404 of unknown paths).

    OPTIONS is left out: DRF answers it from the view's class alone, before any object is loaded."""
    endpoints = set()

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif route.startswith("api/") and pattern.callback is not unknown_endpoint:
                methods = pattern.callback.cls.http_method_names  # every API view is DRF's @api_view
                endpoints.update((route, method.upper()) for method in methods if method != "options")

    walk(get_resolver().url_patterns, "")
    return endpoints


def rows_of_everyone_but(user) -> dict[str, list[dict]]:
    """Every row of the project's tables except the user's own (their idempotency records, their
    preferences): what another team's requests must leave as it was."""
    rows = {}
    for model in apps.get_models():
        if model._meta.app_label not in PROJECT_APPS:
            continue
        queryset = model.objects.all()
        if any(f.name == "user" for f in model._meta.fields):
            queryset = queryset.exclude(user=user)
        rows[model._meta.label] = list(queryset.order_by("pk").values())
    return rows


@pytest.fixture
def first_team(eager, monkeypatch):
    """A session of the first team with a parsed file, a completed run with its report and a chat
    question waiting on its request card; the ids another team will name."""
    from conversation_app import services as chat_services

    # Eager, the card's SLA jobs would run at once and expire it: it stays open, as a person would see it.
    monkeypatch.setattr(chat_services, "_schedule_sla", lambda request: None)
    owner, team = make_member()
    api = ContextApi(owner)
    sid = api.create_session(question=QUESTION)
    api.upload(sid, {"valves.md": VALVES.encode()})
    api.parse(sid)
    manifest = api.manifest(sid)
    assert manifest["aggregate_digest_status"] == "ready", manifest
    fid = manifest["files"][0]["file_id"]
    digest = api.get(f"/api/sessions/{sid}/context/files/{fid}/digest").json()
    citation = next(iter(digest["source_links"].values()))
    run = api.post(f"/api/sessions/{sid}/runs", {"max_depth": 0}, format="json").json()
    assert ResearchRun.objects.get(pk=run["run_id"]).status == "completed"
    asked = api.post("/api/research/conversation", {"session_id": sid, "message": UNCOVERED_QUESTION}, format="json")
    assert asked.json()["status"] == "context_required", asked.content
    ids = {
        "sid": sid,
        "fid": fid,
        "version": citation["version"],
        "span": citation["span"],
        "rid": run["run_id"],
        "request_id": asked.json()["request_id"],
        "team": team.pk,
    }
    return api, ids


def test_the_table_names_every_api_endpoint_and_method():
    named = {(route, method) for route, methods in ATTEMPTS.items() for method in methods}
    assert not named & set(NAMES_NO_TEAMS_OBJECT), "an endpoint is both tried and left out"
    endpoints = api_endpoints()
    assert len(endpoints) > 25, "the resolver was read"
    assert endpoints - named - set(NAMES_NO_TEAMS_OBJECT) == set(), "endpoints another team is never tried on"
    assert named - endpoints == set(), "the table names endpoints that no longer exist"


def attempts(ids: dict) -> list[tuple[str, str, Attempt]]:
    return [
        (route, method, attempt_for(ids))
        for route, methods in ATTEMPTS.items()
        for method, attempt_for in methods.items()
    ]


def test_another_team_gets_a_json_404_from_every_endpoint_and_changes_nothing(first_team):
    owner, ids = first_team
    for route, method, attempt in attempts(ids):
        assert resolve(attempt.path).route == route, attempt.path
        if method == "GET":  # the ids name what the endpoint serves its own team
            owners = attempt.send(owner, method)
            assert owners.status_code == 200, (route, owners.status_code, owners.content[:200])

    stranger_user, _other_team = make_member()
    stranger = ContextApi(stranger_user)
    before = rows_of_everyone_but(stranger_user)
    wrong = []
    for _route, method, attempt in attempts(ids):
        response = attempt.send(stranger, method)
        body = response.json() if response["Content-Type"] == "application/json" else None
        if response.status_code != 404 or body != {"error": attempt.not_found}:
            wrong.append((method, attempt.path, response.status_code, response.content[:120]))
    assert wrong == []
    # The endpoints that name no team's object: the stranger's own sessions and preferences.
    listed = stranger.get("/api/sessions").json()["sessions"]
    assert listed == [] and ids["sid"] not in str(listed)
    assert stranger.get("/api/me/preferences").status_code == 200
    assert stranger.patch("/api/me/preferences", {"ui_debug": False}, format="json").json() == {"ui_debug": False}

    after = rows_of_everyone_but(stranger_user)
    assert [table for table in before if after[table] != before[table]] == [], "another team changed these"
