"""FileText becomes the version table of extracted texts (schema; 0004 fills existing rows, 0005 makes versions unique)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0002_library"),
    ]

    operations = [
        migrations.AddField(
            model_name="contextset",
            name="aggregate_versions",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="filetext",
            name="file",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="texts",
                to="context_app.contextfile",
            ),
        ),
        migrations.AddField(
            model_name="filetext",
            name="version",
            field=models.UUIDField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="filetext",
            name="scope",
            field=models.CharField(db_index=True, default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="filetext",
            name="context_set",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="file_texts",
                to="context_app.contextset",
            ),
        ),
        migrations.AddField(
            model_name="filetext",
            name="filename",
            field=models.CharField(default="", max_length=255),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="filetext",
            name="format",
            field=models.CharField(default="", max_length=32),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="filetext",
            name="extracted_text_hash",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="filetext",
            name="spans_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="filetext",
            name="created_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name="filetext",
            name="superseded_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="filetext",
            name="deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="libraryrecord",
            name="file_text",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="library_records",
                to="context_app.filetext",
            ),
        ),
    ]
