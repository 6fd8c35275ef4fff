"""Windows are cut again: a few short paragraphs each, under the document's lead (context_app/meaning.py).

The windows of the former cut (96 words, heading path alone) are deleted; the worker's start
queues every file without windows (meaning.files_to_embed), so each library is cut and embedded
again in the background, its chip counting, while search ranks by keywords until its vectors exist.
The vectors themselves stay in llm_platform's cache (TextEmbedding).
"""

from django.db import migrations


def delete_windows(apps, schema_editor):
    apps.get_model("context_app", "LibraryWindow").objects.all().delete()
    apps.get_model("context_app", "ContextFile").objects.update(meaning_windows=0, meaning_embedded=0)


class Migration(migrations.Migration):
    dependencies = [("context_app", "0017_file_extraction_progress_and_notes")]

    operations = [migrations.RunPython(delete_windows, migrations.RunPython.noop)]
