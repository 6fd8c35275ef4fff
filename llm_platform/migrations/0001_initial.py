"""Model calls, provider batches and spending holds move here from context_app.

State only: the tables keep their names (Meta.db_table) and every row stays where it
is; context_app 0014 recorded them by session first, and context_app 0015 drops them
from its own state. The content types (with their permissions and admin log) follow.
"""

import uuid

import django.db.models.deletion
from django.db import migrations, models

MOVED = ("llmcall", "llmbatch", "spendinghold")


def content_types_to(app_label: str, from_label: str):
    def move(apps, schema_editor):
        content_type = apps.get_model("contenttypes", "ContentType")
        db = schema_editor.connection.alias
        content_type.objects.using(db).filter(app_label=from_label, model__in=MOVED).update(app_label=app_label)

    return move


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("context_app", "0014_llm_ledger_by_session"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="LLMBatch",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("provider", models.CharField(max_length=32)),
                        ("model", models.CharField(max_length=128)),
                        ("provider_batch_id", models.CharField(max_length=128, unique=True)),
                        (
                            "status",
                            models.CharField(
                                choices=[("submitted", "Submitted"), ("ended", "Ended")],
                                db_index=True,
                                default="submitted",
                                max_length=16,
                            ),
                        ),
                        ("requests", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("ended_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "session",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="llm_batches",
                                to="workspaces.researchsession",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "LLM batch",
                        "db_table": "context_app_llmbatch",
                    },
                ),
                migrations.CreateModel(
                    name="LLMCall",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("task", models.CharField(db_index=True, max_length=64)),
                        ("attempt", models.PositiveSmallIntegerField(default=1)),
                        ("provider", models.CharField(max_length=32)),
                        ("model", models.CharField(max_length=128)),
                        ("prompt_version", models.CharField(blank=True, max_length=32)),
                        ("input_tokens", models.PositiveIntegerField(default=0)),
                        ("output_tokens", models.PositiveIntegerField(default=0)),
                        ("cache_read_input_tokens", models.PositiveIntegerField(default=0)),
                        ("cache_creation_input_tokens", models.PositiveIntegerField(default=0)),
                        ("batch", models.BooleanField(default=False)),
                        ("latency_ms", models.PositiveIntegerField(default=0)),
                        ("retries", models.PositiveSmallIntegerField(default=0)),
                        (
                            "outcome",
                            models.CharField(
                                choices=[
                                    ("ok", "Ok"),
                                    ("retried", "Retried"),
                                    ("invalid", "Invalid"),
                                    ("failed", "Failed"),
                                    ("throttled", "Throttled"),
                                    ("transient", "Transient"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("error", models.TextField(blank=True)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("waited_ms", models.PositiveIntegerField(default=0)),
                        ("subject", models.CharField(blank=True, max_length=128)),
                        ("run_id", models.UUIDField(blank=True, db_index=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        (
                            "session",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="llm_calls",
                                to="workspaces.researchsession",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "LLM call",
                        "db_table": "context_app_llmcall",
                        "ordering": ["-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="SpendingHold",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("amount_usd", models.DecimalField(decimal_places=6, max_digits=12)),
                        ("expires_at", models.DateTimeField(db_index=True)),
                        (
                            "session",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="workspaces.researchsession",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "context_app_spendinghold",
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_to("llm_platform", "context_app"), content_types_to("context_app", "llm_platform")
        ),
    ]
