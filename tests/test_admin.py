"""Every admin registered in Django admin: its changelist lists a real row and that row's change page renders."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.urls import reverse

from llm_platform.models import LLMBatch
from research_app.models import ResearchNode
from tests.factories import ContextApi, make_member, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

# The project's admins, named here so that one unregistered by mistake fails the test too.
PROJECT_ADMINS = {
    "workspaces": {"team", "researchsession", "idempotencyrecord", "userpreference"},
    "research_app": {"researchrun", "researchnode", "nodecontextslice", "runevent"},
    "context_app": {"contextset", "contextfile", "storeddigest", "digestcacheentry", "digestcachehit", "libraryrecord"},
    "llm_platform": {"llmcall", "llmbatch"},
    "conversation_app": {"conversation", "chatmessage", "contextrequest", "contextsupply"},
}


def admin_pages_render(client, model) -> None:
    """The changelist lists the model's first row, linked to its change page, which renders."""
    opts = model._meta
    row = model.objects.order_by("pk").first()
    assert row is not None, f"no {opts.label} row to show: the test must make one"
    changelist = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert changelist.status_code == 200, (opts.label, changelist.status_code)
    change_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
    assert change_url in changelist.content.decode(), f"the {opts.label} changelist does not list its row"
    change = client.get(change_url)
    assert change.status_code == 200, (opts.label, change.status_code)


def test_every_registered_admin_lists_and_shows_a_real_row(client):
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

    # What no flow above makes: a batch of Task A calls (batch ingest is opt-in) and a group of users.
    LLMBatch.objects.create(
        session_id=sid, provider="anthropic", model="claude-test-model", provider_batch_id="msgbatch_admin_test"
    )
    Group.objects.create(name="Reviewers")

    registered = {(m._meta.app_label, m._meta.model_name) for m in admin.site._registry}
    expected = {(app_label, name) for app_label, names in PROJECT_ADMINS.items() for name in names}
    assert expected - registered == set(), "project admins that are no longer registered"
    for model in admin.site._registry:  # every registered admin, Django's own (users, groups, tokens) as well
        admin_pages_render(client, model)

    # The run's page links to its nodes, and a node's page carries its context slice.
    root = ResearchNode.objects.get(run_id=rid, path="1")
    run_page = client.get(reverse("admin:research_app_researchrun_change", args=[rid])).content.decode()
    assert reverse("admin:research_app_researchnode_change", args=[root.pk]) in run_page
    node_page = client.get(reverse("admin:research_app_researchnode_change", args=[root.pk])).content.decode()
    assert '<option value="root_full" selected>' in node_page
