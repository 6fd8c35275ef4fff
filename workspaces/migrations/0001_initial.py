"""Teams, sessions, preferences and idempotency records move here from research_app.

State only: the tables keep their names (Meta.db_table) and every row stays where it
is. research_app 0006 drops the models from its own state once context_app and
conversation_app point their foreign keys here. The content types (and with them the
permissions and admin log) follow the models to this app.
"""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ("team", "researchsession", "idempotencyrecord", "userpreference")


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
        ("research_app", "0005_research_run_model_calls"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Team",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=120, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "members",
                            models.ManyToManyField(blank=True, related_name="teams", to=settings.AUTH_USER_MODEL),
                        ),
                    ],
                    options={"db_table": "research_app_team"},
                ),
                migrations.CreateModel(
                    name="ResearchSession",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("title", models.CharField(max_length=200)),
                        ("question", models.TextField(blank=True)),
                        (
                            "spending_cap_usd",
                            models.DecimalField(blank=True, decimal_places=4, max_digits=12, null=True),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="sessions",
                                to="workspaces.team",
                            ),
                        ),
                    ],
                    options={"db_table": "research_app_researchsession", "ordering": ["-created_at"]},
                ),
                migrations.CreateModel(
                    name="IdempotencyRecord",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("key", models.CharField(max_length=255)),
                        ("request_fingerprint", models.CharField(max_length=64)),
                        ("response_status", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("response_body", models.BinaryField(blank=True, null=True)),
                        ("response_headers", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "research_app_idempotencyrecord",
                        "constraints": [
                            models.UniqueConstraint(fields=("user", "key"), name="unique_idempotency_key_per_user")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="UserPreference",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("ui_debug", models.BooleanField(default=True)),
                        (
                            "user",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="preference",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={"db_table": "research_app_userpreference"},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_to("workspaces", "research_app"), content_types_to("research_app", "workspaces")
        ),
    ]
