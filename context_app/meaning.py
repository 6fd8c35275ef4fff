"""Search by meaning over the team's library: its windows and their vectors.

After a file's records are written (library.index_file), `embed_file` cuts each record
into windows of a few short paragraphs, each led by its heading path and the document's
lead (its first paragraph: a window of an "OPTIONS" section knows which page it is in and
what that page is for), and asks
llm_platform.embeddings for their vectors, a batch at a time. The file is ready long
before: its chip says "indexing meaning 120/300" meanwhile, and search uses the vectors
that exist. Unchanged text costs no call (the vectors are cached by text hash and model).

Search ranks by these vectors through context_app.library_index.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.db.models import Q

from llm_platform import embeddings
from llm_platform.models import TextEmbedding

from . import library_index
from .models import ContextFile, LibraryRecord, LibraryWindow
from .notify import notify_context_changed_soon

logger = logging.getLogger(__name__)

# Words a window holds at most. A short window says one thing, as the sentences the local model
# was trained on do; 96-word windows mixed two or three options of a manual and matched a
# question by none (bench/retrieval_bench.py: 48 against 96, docs/decisions.md).
WINDOW_WORDS = 48
LEAD_WORDS = 30  # of the document's first paragraph, in every window's header
_WORD = re.compile(r"\S+")
_PARAGRAPH = re.compile(r"[^\n]+(?:\n(?!\n)[^\n]+)*")  # lines up to a blank one
_SENTENCE_END = ".!?:;"


def window_bounds(text: str, size: int = WINDOW_WORDS) -> list[tuple[int, int]]:
    """(start, end) character offsets of the windows of `text`: its paragraphs, a long one cut into
    pieces of at most `size` words, and short neighbours packed together while they fit in `size`."""
    pieces = [
        (paragraph.start() + start, paragraph.start() + end)
        for paragraph in _PARAGRAPH.finditer(text)
        for start, end in _sentence_windows(paragraph.group(), size)
    ]
    packed: list[tuple[int, int]] = []
    for start, end in pieces:
        if packed and len(_WORD.findall(text, packed[-1][0], end)) <= size:
            packed[-1] = (packed[-1][0], end)
        else:
            packed.append((start, end))
    return packed


def _sentence_windows(text: str, size: int) -> list[tuple[int, int]]:
    """Consecutive stretches of at most `size` words, ending early at a sentence's end once two thirds full."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    bounds: list[tuple[int, int]] = []
    first = 0
    for i, (_start, end) in enumerate(words):
        held = i - first + 1
        last = i == len(words) - 1
        at_sentence_end = last or text[end - 1] in _SENTENCE_END or "\n" in text[end : words[i + 1][0]]
        if held >= size or last or (held >= size * 2 // 3 and at_sentence_end):
            bounds.append((words[first][0], end))
            first = i + 1
    return bounds


def document_lead(records: list[LibraryRecord]) -> str:
    """The document's first paragraph that is not a heading, cut at LEAD_WORDS words: what it is about
    ("numfmt - Convert numbers from/to human-readable strings", a report's title or opening line)."""
    for record in records:
        for paragraph in _PARAGRAPH.finditer(record.text):
            if not paragraph.group().lstrip().startswith("#"):
                return " ".join(paragraph.group().split()[:LEAD_WORDS])
    return ""


def window_text(record: LibraryRecord, start: int, end: int, lead: str = "") -> str:
    """What is embedded: the window under its heading path and the document's lead."""
    heading = record.section_path or record.file.filename.rsplit(".", 1)[0]
    return f"{heading}: {lead}\n{record.text[start:end]}" if lead else f"{heading}\n{record.text[start:end]}"


def embed_file(file_id) -> None:
    """Vectors for the file's library windows that have none yet (safe to run twice)."""
    if not embeddings.enabled():
        return
    file = ContextFile.objects.select_related("context_set").filter(pk=file_id).first()
    if file is None:
        return
    key = embeddings.model_key()
    _cut_windows(file, key)
    try:
        _embed_windows(file, key)
    except embeddings.EmbeddingsUnavailable as exc:  # the file stays searchable by its words
        logger.warning("no vectors for %s now: %s", file.filename, exc)
    _count_progress(file.pk, key)


def _cut_windows(file: ContextFile, key: str) -> None:
    records = LibraryRecord.objects.filter(file=file).exclude(windows__model=key).select_related("file")
    LibraryWindow.objects.bulk_create(
        [
            LibraryWindow(record=record, scope=record.scope, model=key, start=start, end=end)
            for record in records
            for start, end in window_bounds(record.text)
        ],
        batch_size=1000,
        ignore_conflicts=True,  # two jobs of the same file (a backfill, a re-extraction) cut the same windows
    )


def _embed_windows(file: ContextFile, key: str) -> None:
    batch_size = settings.GROUNDWORK_EMBEDDINGS_BATCH_SIZE
    lead = document_lead(list(LibraryRecord.objects.filter(file=file).order_by("position")[:5]))
    while True:
        batch = list(
            LibraryWindow.objects.filter(record__file=file, model=key, embedding=None)
            .select_related("record__file")
            .order_by("pk")[:batch_size]
        )
        if not batch:
            return
        texts = [window_text(w.record, w.start, w.end, lead) for w in batch]
        embeddings.embed(texts, subject=f"file:{file.pk}", session_id=file.context_set.session_id)
        hashes = [embeddings.text_hash(text) for text in texts]
        ids = dict(TextEmbedding.objects.filter(model=key, text_hash__in=set(hashes)).values_list("text_hash", "id"))
        for window, text_hash in zip(batch, hashes, strict=True):
            window.embedding_id = ids[text_hash]
        LibraryWindow.objects.bulk_update(batch, ["embedding"])
        library_index.library_changed(file.context_set.cache_scope)
        _count_progress(file.pk, key)
        notify_context_changed_soon(file.context_set_id)  # the chip's "indexing meaning n/m", paced


def _count_progress(file_id, key: str) -> None:
    windows = LibraryWindow.objects.filter(record__file_id=file_id, model=key)
    ContextFile.objects.filter(pk=file_id).update(
        meaning_windows=windows.count(), meaning_embedded=windows.exclude(embedding=None).count()
    )


def files_to_embed() -> list:
    """The files whose windows are not all embedded by the current model (or were never cut)."""
    if not embeddings.enabled():
        return []
    key = embeddings.model_key()
    unfinished = Q(library_records__windows__model=key, library_records__windows__embedding=None)
    uncut = Q(library_records__isnull=False) & ~Q(library_records__windows__model=key)
    return list(ContextFile.objects.filter(unfinished | uncut).values_list("pk", flat=True).distinct())
