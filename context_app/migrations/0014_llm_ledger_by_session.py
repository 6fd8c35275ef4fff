"""Model calls, provider batches and spending holds are recorded by session, not by context set.

The model platform (llm_platform, which takes these models over in its 0001) sits
below context_app and knows sessions, not files. Every row keeps its session: it is
read from the row's context set before that column goes (and written back on reverse).
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery

LEDGER_MODELS = ("LLMCall", "LLMBatch", "SpendingHold")


def sessions_from_context_sets(apps, schema_editor):
    context_sets = apps.get_model("context_app", "ContextSet").objects
    for name in LEDGER_MODELS:
        rows = apps.get_model("context_app", name).objects.filter(context_set__isnull=False)
        rows.update(session_id=Subquery(context_sets.filter(pk=OuterRef("context_set_id")).values("session_id")[:1]))


def context_sets_from_sessions(apps, schema_editor):
    context_sets = apps.get_model("context_app", "ContextSet").objects
    for name in LEDGER_MODELS:
        rows = apps.get_model("context_app", name).objects.filter(session__isnull=False)
        rows.update(context_set_id=Subquery(context_sets.filter(session_id=OuterRef("session_id")).values("pk")[:1]))


def session(null: bool, related_name: str, on_delete=django.db.models.deletion.CASCADE):
    return models.ForeignKey(
        null=null, blank=null, on_delete=on_delete, related_name=related_name, to="workspaces.researchsession"
    )


def context_set(related_name: str):
    return models.ForeignKey(
        null=True,
        blank=True,
        on_delete=django.db.models.deletion.CASCADE,
        related_name=related_name,
        to="context_app.contextset",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0013_session_in_workspaces"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            "llmcall", "session", session(True, "llm_calls", on_delete=django.db.models.deletion.SET_NULL)
        ),
        migrations.AddField("llmbatch", "session", session(True, "llm_batches")),
        migrations.AddField("spendinghold", "session", session(True, "+")),
        migrations.AlterField("llmbatch", "context_set", context_set("llm_batches")),
        migrations.AlterField("spendinghold", "context_set", context_set("+")),
        migrations.RunPython(sessions_from_context_sets, context_sets_from_sessions),
        migrations.RemoveField("llmcall", "context_set"),
        migrations.RemoveField("llmbatch", "context_set"),
        migrations.RemoveField("spendinghold", "context_set"),
        migrations.AlterField("llmbatch", "session", session(False, "llm_batches")),
        migrations.AlterField("spendinghold", "session", session(False, "+")),
    ]
