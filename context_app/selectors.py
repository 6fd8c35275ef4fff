"""Read paths for context sets: one query for the set, one for its files.

FileText (text and spans, one row per extracted version) lives in its own table, so file lists
never load it; reads here go to a file's current version.
"""

from .models import ContextFile, ContextSet, FileText
from .serializers import serialize_manifest


def files_of(context_set: ContextSet) -> list[ContextFile]:
    return list(context_set.files.order_by("filename"))


def manifest_of(context_set: ContextSet) -> dict:
    return serialize_manifest(context_set, files_of(context_set))


def spans_of(file: ContextFile) -> list[dict]:
    """The spans of the file's current text version ([] before extraction or after a failed one)."""
    text = FileText.objects.current().filter(file=file).only("spans").first()
    return text.spans if text else []


def context_set_id_of(session_id):
    """The id of a session's context set (recorded on its model calls), or None."""
    return ContextSet.objects.filter(session_id=session_id).values_list("pk", flat=True).first()
