"""Every model in Django admin: the changelist and a change page render with data in them."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse

from research_app.models import ResearchNode
from tests.factories import ContextApi, make_member, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

EXPECTED = {
    "workspaces": {"team", "researchsession", "idempotencyrecord", "userpreference"},
    "research_app": {
        "researchrun",
        "researchnode",
        "nodecontextslice",
        "runevent",
    },
    "context_app": {
        "contextset",
        "contextfile",
        "storeddigest",
        "digestcacheentry",
        "digestcachehit",
        "libraryrecord",
    },
    "llm_platform": {"llmcall"},
    "conversation_app": {"conversation", "chatmessage", "contextrequest", "contextsupply"},
}


def test_admin_lists_every_model_with_rows(client):
    api = ContextApi(make_member()[0])
    sid = api.create_session()
    api.upload(sid, {"notes.md": b"# Valves\n\nGate valves were replaced in 2022."})
    api.parse(sid)
    api.settle(sid)
    # The same file in another session is answered by the digest cache: a hit to list.
    api.upload(api.create_session(title="Again"), {"notes.md": b"# Valves\n\nGate valves were replaced in 2022."})
    # A completed run, so runs, nodes, their context slices and events have rows to show.
    response = api.post(f"/api/sessions/{sid}/runs", {"question": "When were the valves replaced?"}, format="json")
    assert response.status_code == 201, response.content
    rid = response.json()["run_id"]

    def finished():
        status = api.get(f"/api/runs/{rid}").json()["status"]
        return status if status in ("completed", "failed", "cancelled") else None

    assert wait_until(finished, message="the run to finish") == "completed"
    # A chat turn that asked for context and got it: messages, a request and a supply.
    chat = {"session_id": sid, "message": "How did maintenance staffing change in the workshop?"}
    asked = api.post("/api/research/conversation", chat, format="json").json()
    assert asked["status"] == "context_required", asked
    supply = {"session_id": sid, "request_id": asked["request_id"], "payloads": [{"slot": "s1", "kind": "skip"}]}
    assert api.post("/api/research/conversation/context-supply", supply, format="json").status_code == 200
    client.force_login(api.user)
    client.get(f"/sessions/{sid}/")  # the session page creates the member's preferences
    staff = get_user_model().objects.create_superuser("admin", "admin@example.org", "pw")
    client.force_login(staff)

    registered = {(m._meta.app_label, m._meta.model_name) for m in admin.site._registry}
    for app_label, models in EXPECTED.items():
        for model_name in models:
            assert (app_label, model_name) in registered
            response = client.get(reverse(f"admin:{app_label}_{model_name}_changelist"))
            assert response.status_code == 200, (model_name, response.status_code)
            model = next(m for m in admin.site._registry if m._meta.model_name == model_name)
            first = model.objects.first()
            assert first is not None, f"no {model_name} row to show"
            change = client.get(reverse(f"admin:{app_label}_{model_name}_change", args=[first.pk]))
            assert change.status_code == 200, (model_name, change.status_code)

    # The run's page links to its nodes, and a node's page carries its context slice.
    root = ResearchNode.objects.get(run_id=rid, path="1")
    run_page = client.get(reverse("admin:research_app_researchrun_change", args=[rid])).content.decode()
    assert reverse("admin:research_app_researchnode_change", args=[root.pk]) in run_page
    node_page = client.get(reverse("admin:research_app_researchnode_change", args=[root.pk])).content.decode()
    assert '<option value="root_full" selected>' in node_page
