"""A file back to the worker's extraction queue: new bytes, a retry, or a reader that reads its format better now."""

import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from extraction import EXTENSIONS, READER_VERSIONS
from workspaces.claims import move

from .. import library
from ..models import ContextFile, DigestStatus
from . import jobs
from .aggregate_state import lock_set, refresh_aggregate_state

logger = logging.getLogger(__name__)

READ_AGAIN = "read again: its format's reader has improved"


def queue_extraction(file: ContextFile) -> None:
    """The file waits for the worker (status `parsing`, no text hash yet); no request extracts."""
    file.error = None
    file.extracted_text_hash = ""
    file.extraction_progress = ""
    file.extraction_notes = []  # the notes of the text it had; the new bytes get their own
    move(file, "digest_status", DigestStatus.PARSING)
    file.parsing_started_at = timezone.now()
    file.digest = None
    file.digest_hash = ""
    # Queued afresh: a job still working on the old bytes loses its lease (its writes are
    # dropped), and the new extraction takes the lease at once instead of finding it held.
    file.lease_owner = ""
    file.lease_expires_at = None
    if file.pk:
        # The current text version stays until the worker has extracted the new bytes:
        # the same text keeps its version (citations of it stay `current`), another text
        # supersedes it, a failed extraction too (pipeline.extract: apply_extraction / mark_extraction_failed).
        library.forget_file(file.pk)
    transaction.on_commit(lambda: jobs.enqueue_extraction(file.id, file.content_hash))


def reread_by_improved_readers(context_set_id) -> int:
    """The set's extracted files that a former reader of their format read go back to extraction (a DOCX's
    tracked insertions were lost before `docx.2`). The same text keeps its version and its digest, with no
    model call; another text supersedes it, and the reports that cite the old one say "Sources changed"."""
    outdated = Q()
    for file_format, version in READER_VERSIONS.items():
        outdated |= Q(format=file_format) & ~Q(reader_version=version)
    # A file read as plain text because its name's extension had no reader then (a notebook, `.ipynb`, before
    # stop 56). Not a ".pdf" or ".docx" that holds text: that one stays text.
    for suffix, file_format in EXTENSIONS.items():
        if file_format not in ("text", "pdf", "docx"):
            outdated |= Q(format="text", filename__iendswith=suffix)
    candidates = ContextFile.objects.filter(outdated, context_set_id=context_set_id).exclude(extracted_text_hash="")
    if not candidates.exists():  # the parse's usual case: one query, no lock
        return 0
    with transaction.atomic():
        context_set = lock_set(context_set_id)  # the set's row first, then its files'
        if context_set is None:  # its session was deleted meanwhile
            return 0
        files = list(candidates.select_for_update().exclude(digest_status=DigestStatus.PARSING))
        for file in files:
            queue_extraction(file)
            file.requeued_because = READ_AGAIN
            file.save()
        refresh_aggregate_state(context_set)
    if not files:
        return 0
    logger.info("%s files of %s are read again by improved readers", len(files), context_set_id)
    return len(files)
