"""A database made before the strict stack keeps every row when it migrates.

Tenancy moved to workspaces, and the model calls' ledger to llm_platform (recorded by
session rather than by context set).

The schema is rolled back to where main stood before the move (research_app 0005,
context_app 0012, conversation_app 0002), filled through the historical models, and
migrated forward again; the moved models must then read the same rows. Runs on SQLite
and on PostgreSQL (`make test` runs the suite on both).
"""

import uuid

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

# Main's last migrations before the moves; workspaces and llm_platform did not exist yet.
MAIN_BEFORE_THE_MOVE = [
    ("research_app", "0005_research_run_model_calls"),
    ("context_app", "0012_job_leases"),
    ("conversation_app", "0002_message_source_links"),
]


def migrate(targets, unapplied=()):
    executor = MigrationExecutor(connection)
    executor.migrate([*((app, None) for app in unapplied), *targets])
    return MigrationExecutor(connection).loader.project_state(targets).apps


def latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_its_sessions_files_versions_runs_and_chat():
    old = migrate(MAIN_BEFORE_THE_MOVE, unapplied=["workspaces", "llm_platform"])
    user = old.get_model("auth", "User").objects.create(username="ada")
    team = old.get_model("research_app", "Team").objects.create(name="Lab")
    team.members.add(user)
    session = old.get_model("research_app", "ResearchSession").objects.create(
        id=uuid.uuid4(), team=team, title="Valves", question="Why do valves fail?", created_by=user
    )
    old.get_model("research_app", "UserPreference").objects.create(user=user, ui_debug=False)
    old.get_model("research_app", "IdempotencyRecord").objects.create(
        user=user, key="k-1", request_fingerprint="f" * 64, response_status=201
    )
    context_set = old.get_model("context_app", "ContextSet").objects.create(session=session, cache_scope="team:1")
    file = old.get_model("context_app", "ContextFile").objects.create(
        context_set=context_set,
        filename="valves.md",
        mime_type="text/markdown",
        format="md",
        size_bytes=12,
        uploaded_at=timezone.now(),
        blob="context/valves.md",
        content_hash="c" * 64,
    )
    version = old.get_model("context_app", "FileText").objects.create(
        file=file,
        context_set=context_set,
        scope="team:1",
        filename="valves.md",
        format="md",
        extracted_text_hash="t" * 64,
        text="Valves fail.",
        spans=[{"span_id": "S1", "text": "Valves fail.", "locator": "", "start": 0, "end": 12}],
    )
    run = old.get_model("research_app", "ResearchRun").objects.create(
        session=session, question="Why?", max_depth=1, max_children=1, max_nodes=1, token_budget=1000
    )
    call = old.get_model("context_app", "LLMCall").objects.create(
        context_set=context_set, task="per_file_digest", provider="offline", model="extractive", outcome="ok"
    )
    conversation = old.get_model("conversation_app", "Conversation").objects.create(session=session)
    old.get_model("conversation_app", "ChatMessage").objects.create(
        conversation=conversation, role="user", content="Why do valves fail?", author=user
    )
    moved_types = ContentType.objects.filter(app_label="research_app", model__in=["team", "researchsession"])
    moved_type_ids = set(moved_types.values_list("pk", flat=True))

    new = migrate(latest())

    new_session = new.get_model("workspaces", "ResearchSession").objects.get(pk=session.pk)
    assert (new_session.title, new_session.team.name) == ("Valves", "Lab")
    assert list(new_session.team.members.values_list("username", flat=True)) == ["ada"]
    assert new.get_model("workspaces", "UserPreference").objects.get(user_id=user.pk).ui_debug is False
    assert new.get_model("workspaces", "IdempotencyRecord").objects.get(key="k-1").response_status == 201
    new_set = new.get_model("context_app", "ContextSet").objects.get(session=new_session)
    assert list(new_set.files.values_list("filename", flat=True)) == ["valves.md"]
    assert new.get_model("context_app", "FileText").objects.get(pk=version.pk).text == "Valves fail."
    assert new.get_model("research_app", "ResearchRun").objects.get(pk=run.pk).session_id == session.pk
    assert new.get_model("llm_platform", "LLMCall").objects.get(pk=call.pk).session_id == session.pk
    messages = new.get_model("conversation_app", "ChatMessage").objects.filter(conversation__session=new_session)
    assert list(messages.values_list("content", flat=True)) == ["Why do valves fail?"]
    # The content types (and the permissions and admin log tied to them) followed the models.
    assert set(
        ContentType.objects.filter(app_label="workspaces", model__in=["team", "researchsession"]).values_list(
            "pk", flat=True
        )
    ) == moved_type_ids
