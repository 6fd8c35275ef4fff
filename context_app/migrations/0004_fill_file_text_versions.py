"""Every existing FileText becomes its file's current version; library records point at it."""

import uuid

from django.db import migrations


def fill_versions(apps, schema_editor):
    FileText = apps.get_model("context_app", "FileText")
    LibraryRecord = apps.get_model("context_app", "LibraryRecord")
    texts = FileText.objects.select_related("file__context_set").filter(version__isnull=True)
    for text in texts.iterator(chunk_size=200):
        file = text.file
        text.version = uuid.uuid4()
        if file is not None:
            text.scope = file.context_set.cache_scope
            text.context_set_id = file.context_set_id
            text.filename = file.filename
            text.format = file.format
            text.extracted_text_hash = file.extracted_text_hash
            text.spans_hash = file.spans_hash
            text.created_at = file.uploaded_at
        text.save(
            update_fields=[
                "version",
                "scope",
                "context_set",
                "filename",
                "format",
                "extracted_text_hash",
                "spans_hash",
                "created_at",
            ]
        )
        if file is not None:
            LibraryRecord.objects.filter(file_id=file.pk).update(file_text=text)


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0003_file_text_versions"),
    ]

    operations = [
        migrations.RunPython(fill_versions, migrations.RunPython.noop),
    ]
