"""ContextSet.session points to workspaces.ResearchSession: the same table, so state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0012_job_leases"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="contextset",
                    name="session",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="context_set",
                        to="workspaces.researchsession",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
