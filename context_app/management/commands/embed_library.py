"""`python manage.py embed_library`: vectors for every library window that has none for the current
embeddings model (after turning GROUNDWORK_EMBEDDINGS on, or changing its model). Workers do the
same in the background when they start; this does it here, file by file, and says how far it got."""

from django.core.management.base import BaseCommand, CommandError

from context_app import meaning
from context_app.models import ContextFile
from llm_platform import embeddings


class Command(BaseCommand):
    help = "Embed the library windows that have no vector for the configured embeddings model."

    def handle(self, *args, **options):
        if not embeddings.enabled():
            raise CommandError("GROUNDWORK_EMBEDDINGS is off: there is nothing to embed")
        pending = meaning.files_to_embed()
        self.stdout.write(f"{len(pending)} file(s) to embed with {embeddings.model_key()}")
        for number, file_id in enumerate(pending, start=1):
            meaning.embed_file(file_id)
            file = ContextFile.objects.get(pk=file_id)
            self.stdout.write(
                f"{number}/{len(pending)} {file.filename}: {file.meaning_embedded}/{file.meaning_windows} windows"
            )
        left = len(meaning.files_to_embed())
        if left:
            raise CommandError(f"{left} file(s) still lack vectors (see the warnings above); run it again later")
