"""LLMCall, LLMBatch and SpendingHold now live in llm_platform (state only: same tables, same rows)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0014_llm_ledger_by_session"),
        ("llm_platform", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="contextfile",
                    name="llm_batch",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="files",
                        to="llm_platform.llmbatch",
                    ),
                ),
                migrations.DeleteModel(name="LLMCall"),
                migrations.DeleteModel(name="LLMBatch"),
                migrations.DeleteModel(name="SpendingHold"),
            ],
            database_operations=[],
        ),
    ]
