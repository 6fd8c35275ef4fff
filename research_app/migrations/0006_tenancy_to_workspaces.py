"""Team, ResearchSession, IdempotencyRecord and UserPreference now live in workspaces.

State only: the tables and rows stay (workspaces 0001 took them over under their old
names); ResearchRun.session points to the moved model.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("research_app", "0005_research_run_model_calls"),
        ("workspaces", "0001_initial"),
        ("context_app", "0013_session_in_workspaces"),
        ("conversation_app", "0003_session_in_workspaces"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="researchrun",
                    name="session",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="runs", to="workspaces.researchsession"
                    ),
                ),
                migrations.DeleteModel(name="UserPreference"),
                migrations.DeleteModel(name="IdempotencyRecord"),
                migrations.DeleteModel(name="ResearchSession"),
                migrations.DeleteModel(name="Team"),
            ],
            database_operations=[],
        ),
    ]
