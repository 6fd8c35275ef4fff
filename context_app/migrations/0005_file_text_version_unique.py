"""Versions are unique; a file has at most one current version."""

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0004_fill_file_text_versions"),
    ]

    operations = [
        migrations.AlterField(
            model_name="filetext",
            name="version",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AddConstraint(
            model_name="filetext",
            constraint=models.UniqueConstraint(
                condition=models.Q(("deleted_at__isnull", True), ("superseded_at__isnull", True)),
                fields=("file",),
                name="one_current_text_per_file",
            ),
        ),
    ]
