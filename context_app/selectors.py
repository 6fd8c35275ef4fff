"""Read paths for context sets: one query for the set, one for its files.

FileText (text and spans, one row per extracted version) lives in its own table, so file lists
never load it; reads here go to a file's current version.
"""

from collections.abc import Iterable

from django.db import transaction
from django.db.models import F

from .models import ContextFile, ContextSet, DigestStatus, FileText
from .serializers import serialize_manifest


def files_of(context_set: ContextSet) -> list[ContextFile]:
    return list(context_set.files.order_by("filename"))


def manifest_of(context_set: ContextSet) -> dict:
    """The set's manifest as it is now, numbered (`manifest_seq`) in the order of reading.

    Statuses change in several workers and each pushes the manifest it read; a push
    read earlier can reach a page after one read later and move a chip backwards
    (Ready → Parsing → Ready). Reading happens under the set's row lock, taken by
    bumping the counter, so a higher number is always a later (or the same) state;
    the page ignores any manifest numbered below the one it shows. The one write
    of this read path is that counter.
    """
    with transaction.atomic():
        ContextSet.objects.filter(pk=context_set.pk).update(manifest_seq=F("manifest_seq") + 1)
        current = ContextSet.objects.get(pk=context_set.pk)
        return serialize_manifest(current, files_of(current), current.manifest_seq)


def spans_of(file: ContextFile) -> list[dict]:
    """The spans of the file's current text version ([] before extraction or after a failed one)."""
    text = FileText.objects.current().filter(file=file).only("spans").first()
    return text.spans if text else []


def context_set_id_of(session_id):
    """The id of a session's context set, or None."""
    return ContextSet.objects.filter(session_id=session_id).values_list("pk", flat=True).first()


def digest_facts_of(texts: Iterable[FileText]) -> dict[str, list[dict]]:
    """{version: the facts of its file's digest} for each text version whose file's digest is ready and was
    made from that version's text (none while its file is parsing again). One query."""
    texts = {text.file_id: text for text in texts if text.file_id}
    files = ContextFile.objects.filter(pk__in=texts, digest_status=DigestStatus.READY).select_related("digest")
    return {
        str(texts[file.pk].version): list(file.digest.content.get("facts", []))
        for file in files
        if file.digest is not None and file.extracted_text_hash == texts[file.pk].extracted_text_hash
    }
