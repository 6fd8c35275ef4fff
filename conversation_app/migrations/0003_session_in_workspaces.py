"""Conversation.session points to workspaces.ResearchSession: the same table, so state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversation_app", "0002_message_source_links"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="conversation",
                    name="session",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="conversation",
                        to="workspaces.researchsession",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
