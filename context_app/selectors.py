"""Read paths for context sets: one query for the set, one for its files.

FileText (text and spans) lives in its own table, so file lists never load it.
"""

from .digests.validation import split_ref
from .models import ContextFile, ContextSet, FileText
from .serializers import serialize_manifest


def files_of(context_set: ContextSet) -> list[ContextFile]:
    return list(context_set.files.order_by("filename"))


def manifest_of(context_set: ContextSet) -> dict:
    return serialize_manifest(context_set, files_of(context_set))


def spans_of(file: ContextFile) -> list[dict]:
    text = FileText.objects.filter(file=file).only("spans").first()
    return text.spans if text else []


def context_set_id_of(session_id):
    """The id of a session's context set (recorded on its model calls), or None."""
    return ContextSet.objects.filter(session_id=session_id).values_list("pk", flat=True).first()


def span_texts(session_id, refs: set[str]) -> dict[str, str]:
    """The text of each SourceRef (`file::S4`, hint allowed) among the session's files, as extracted now."""
    wanted: dict[str, set[tuple[str, str]]] = {}
    for ref in refs:
        parts = split_ref(ref)
        if parts:
            wanted.setdefault(parts[0], set()).add((parts[1], ref))
    texts: dict[str, str] = {}
    rows = FileText.objects.filter(file__context_set__session_id=session_id, file__filename__in=wanted)
    for filename, spans in rows.values_list("file__filename", "spans"):
        by_id = {span["span_id"]: span["text"] for span in spans}
        texts |= {ref: by_id[span_id] for span_id, ref in wanted[filename] if span_id in by_id}
    return texts
