"""Context set mutations: upload, replace, delete, Parse now, retry, auto-parse.

Every mutation runs in one transaction holding the set's row, bumps `revision`,
records the diff for the banner, and after commit pushes `context.updated` and
(when parsing is wanted) hands work to the worker. No model is called here, and
no file is read: an upload stores the bytes and its file is `parsing` until the
worker has extracted it (pipeline.extract.extract_file).
"""

import hashlib
import io
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import BinaryIO

from django.conf import settings
from django.core.files.base import File
from django.db import transaction
from django.utils import timezone

from extraction import clean_filename, detect_format
from workspaces.claims import move
from workspaces.errors import ApplicationError
from workspaces.selectors import parse_uuid

from . import library_index, provenance
from .models import Change, ContextFile, ContextSet, DigestStatus
from .pipeline import jobs
from .pipeline.aggregate_state import refresh_aggregate_state
from .pipeline.dispatch import after_change
from .pipeline.extraction_queue import queue_extraction
from .selectors import manifest_of

logger = logging.getLogger(__name__)

HASH_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Upload:
    """One uploaded file: its bytes, or a seekable file of them (a request's upload, spooled to disk)."""

    filename: str
    data: bytes | BinaryIO
    content_type: str | None = None

    def open(self) -> BinaryIO:
        handle = io.BytesIO(self.data) if isinstance(self.data, bytes | bytearray) else self.data
        handle.seek(0)
        return handle


@dataclass
class MutationResult:
    context_set: ContextSet
    # The manifest as committed, before any worker could move on.
    manifest: dict
    diff: list[dict] = field(default_factory=list)


def create_context_set(session_id, cache_scope: str) -> ContextSet:
    context_set, _ = ContextSet.objects.get_or_create(session_id=session_id, defaults={"cache_scope": cache_scope})
    return context_set


def upload_files(
    context_set: ContextSet, uploads: list[Upload], *, expected_revision: int | None = None
) -> MutationResult:
    if not uploads:
        raise ApplicationError("no files in the request (multipart field 'files')")
    named = _named_uploads(uploads)
    staged = _stage_all(named)
    with _discarding_unused(staged), transaction.atomic():
        context_set = _lock(context_set, expected_revision)
        existing = {f.filename: f for f in context_set.files.filter(filename__in=named)}
        new_count = sum(1 for name in named if name not in existing)
        limit = settings.GROUNDWORK_MAX_FILES_PER_SET
        if context_set.files.count() + new_count > limit:
            raise ApplicationError(f"a context set holds at most {limit} files")
        diff = [_store_upload(context_set, name, staged[name], existing.get(name)) for name in named]
        return _commit_mutation(context_set, diff)


def replace_file(
    context_set: ContextSet, file_id, upload: Upload, *, expected_revision: int | None = None
) -> MutationResult:
    staged = _stage_all({upload.filename: upload})
    with _discarding_unused(staged), transaction.atomic():
        context_set = _lock(context_set, expected_revision)
        current = _file_in(context_set, file_id)
        diff = [_store_upload(context_set, current.filename, staged[upload.filename], current)]
        return _commit_mutation(context_set, diff)


def delete_file(context_set: ContextSet, file_id, *, expected_revision: int | None = None) -> MutationResult:
    with transaction.atomic():
        context_set = _lock(context_set, expected_revision)
        doomed = _file_in(context_set, file_id)
        diff = [{"file_id": str(doomed.id), "filename": doomed.filename, "change": Change.DELETED.value}]
        blob_name = doomed.blob.name
        provenance.mark_deleted([doomed.pk])  # its text stays readable while something cites it
        doomed.delete()
        library_index.library_changed(context_set.cache_scope)
        transaction.on_commit(lambda: doomed.blob.storage.delete(blob_name), robust=True)
        return _commit_mutation(context_set, diff)


def retry_file(context_set: ContextSet, file_id, *, expected_revision: int | None = None) -> MutationResult:
    with transaction.atomic():
        context_set = _lock(context_set, expected_revision)
        retried = _file_in(context_set, file_id)
        if retried.digest_status != DigestStatus.ERROR:
            raise ApplicationError(
                f"{retried.filename} is {retried.digest_status}, only files in error can be retried", 409
            )
        retried.error = None
        if retried.is_extracted:
            move(retried, "digest_status", DigestStatus.STALE)
        else:
            queue_extraction(retried)
        retried.save()
        context_set.parse_requested = True
        diff = [{"file_id": str(retried.id), "filename": retried.filename, "change": Change.CHANGED.value}]
        return _commit_mutation(context_set, diff)


def request_parse(context_set: ContextSet, *, expected_revision: int | None = None) -> MutationResult:
    """Parse now: Task A for stale files, then Task B if the aggregate is behind or failed."""
    with transaction.atomic():
        context_set = _lock(context_set, expected_revision)
        context_set.parse_requested = True
        context_set.save(update_fields=["parse_requested", "updated_at"])
        # A failed aggregate over usable files becomes stale again: Parse now is its retry.
        refresh_aggregate_state(context_set)
        # Parse now also re-queues the jobs no worker holds (their message may be lost).
        transaction.on_commit(lambda: jobs.enqueue_parse(context_set.id, requeue_unheld=True))
        return MutationResult(context_set=context_set, manifest=manifest_of(context_set))


def set_options(
    context_set: ContextSet,
    *,
    auto_parse: bool | None = None,
    batch_ingest: bool | None = None,
    expected_revision: int | None = None,
) -> MutationResult:
    """Auto-parse, and batch ingest (Task A of a large parse as one provider batch: batch_ingest), where given."""
    given = {"auto_parse": auto_parse, "batch_ingest": batch_ingest}
    options = {name: value for name, value in given.items() if value is not None}
    # A settings change, not a content change: the revision stays (see docs/decisions.md).
    with transaction.atomic():
        context_set = _lock(context_set, expected_revision)
        for name, value in options.items():
            setattr(context_set, name, value)
        context_set.save(update_fields=[*options, "updated_at"])
        transaction.on_commit(lambda: after_change(context_set.id))
        return MutationResult(context_set=context_set, manifest=manifest_of(context_set))


# --- internals ---------------------------------------------------------------


def _lock(context_set: ContextSet, expected_revision: int | None) -> ContextSet:
    locked = ContextSet.objects.select_for_update().get(pk=context_set.pk)
    if expected_revision is not None and expected_revision != locked.revision:
        raise ApplicationError(
            "This context changed since you loaded it (revision "
            f"{expected_revision} → {locked.revision}); reload and try again",
            412,
            current_revision=locked.revision,
        )
    return locked


def _file_in(context_set: ContextSet, file_id) -> ContextFile:
    """The set's file, its row locked: the worker's indexing writes its records holding the same
    row (library.index_file), so a delete sees every record it must remove with the file."""
    file_uuid = parse_uuid(file_id)
    file = context_set.files.select_for_update().filter(pk=file_uuid).first() if file_uuid else None
    if file is None:
        raise ApplicationError("file not found", 404)
    return file


def _named_uploads(uploads: list[Upload]) -> dict[str, Upload]:
    named: dict[str, Upload] = {}
    for upload in uploads:
        try:
            name = clean_filename(upload.filename)
        except ValueError as exc:
            raise ApplicationError(f"bad filename {upload.filename!r}: {exc}") from None
        named[name] = upload  # the same name twice in one request: the last one wins
    return named


def _content_hash_and_size(handle: BinaryIO) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    handle.seek(0)
    while chunk := handle.read(HASH_CHUNK_BYTES):
        digest.update(chunk)
        size += len(chunk)
    handle.seek(0)
    return digest.hexdigest(), size


@dataclass
class _Staged:
    """An upload hashed, sniffed and stored before the mutation's transaction (no lock held meanwhile)."""

    content_hash: str
    size: int
    format: str
    mime_type: str
    blob_name: str
    used: bool = False


def _stage_all(named: dict[str, Upload]) -> dict[str, _Staged]:
    staged: dict[str, _Staged] = {}
    with _discarding_unused(staged, only_on_error=True):
        for name, upload in named.items():
            staged[name] = _stage(name, upload)
    return staged


def _stage(filename: str, upload: Upload) -> _Staged:
    handle = upload.open()
    content_hash, size = _content_hash_and_size(handle)
    file_format, mime_type = detect_format(filename, handle, upload.content_type)
    handle.seek(0)
    blob = ContextFile._meta.get_field("blob")
    # A new object every time (objects are never overwritten), copied in chunks, never whole in memory.
    name = _stored_name(filename)
    blob_name = blob.storage.save(blob.generate_filename(None, name), File(handle, name=name))
    return _Staged(content_hash, size, file_format, mime_type, blob_name)


STORED_NAME_BYTES = 120  # far below a file system's 255 bytes a name, with room for the suffix a clash adds


def _stored_name(filename: str) -> str:
    """The name a file's bytes are stored under: its display name (up to 255 characters, up to 4 bytes each)
    cut to STORED_NAME_BYTES of UTF-8, its extension kept. The display name itself is the ContextFile's."""
    suffix = PurePosixPath(filename).suffix
    suffix = suffix if len(suffix.encode()) <= 16 else ""
    stem = filename[: len(filename) - len(suffix)].encode()[: STORED_NAME_BYTES - len(suffix.encode())]
    return stem.decode(errors="ignore") + suffix


@contextmanager
def _discarding_unused(staged: dict[str, _Staged], only_on_error: bool = False):
    """Stored objects no file took (the same bytes again, a refused or failed mutation) are deleted."""
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        if failed or not only_on_error:
            storage = ContextFile._meta.get_field("blob").storage
            for item in staged.values():
                if failed or not item.used:
                    _delete_quietly(storage, item.blob_name)


def _delete_quietly(storage, name: str) -> None:
    try:
        storage.delete(name)
    except Exception:  # noqa: BLE001 - an orphan object is logged, never a failed request
        logger.warning("stored object %s could not be deleted", name, exc_info=True)


def _store_upload(context_set: ContextSet, filename: str, staged: _Staged, current: ContextFile | None) -> dict:
    if current is not None and current.content_hash == staged.content_hash:
        current.last_change = Change.UNCHANGED
        current.save(update_fields=["last_change", "updated_at"])
        return _diff_item(current, Change.UNCHANGED)

    file = current or ContextFile(context_set=context_set, filename=filename)
    file.requeued_because = ""  # parsed again for a change of its own now
    if current is not None:
        old_blob = current.blob.name
        # robust: a storage outage leaves an orphan object (logged), never a failed request after commit.
        transaction.on_commit(lambda: current.blob.storage.delete(old_blob), robust=True)
    file.format = staged.format
    file.mime_type = staged.mime_type
    file.size_bytes = staged.size
    file.uploaded_at = timezone.now()
    file.content_hash = staged.content_hash
    file.blob.name = staged.blob_name
    staged.used = True
    queue_extraction(file)
    # New bytes are `changed` even when the worker then finds the same text: the digest
    # cache makes such a file ready again without a model call (docs/decisions.md).
    change = Change.NEW if current is None else Change.CHANGED
    file.last_change = change
    file.save()
    return _diff_item(file, change)


def _diff_item(file: ContextFile, change: Change) -> dict:
    return {"file_id": str(file.id), "filename": file.filename, "change": change.value}


def _commit_mutation(context_set: ContextSet, diff: list[dict]) -> MutationResult:
    since_parse = _changes_since_parse(context_set, diff)
    context_set.revision += 1
    context_set.last_diff = _banner_counts(since_parse, context_set.revision)
    context_set.save()
    refresh_aggregate_state(context_set)
    transaction.on_commit(lambda: after_change(context_set.id))
    return MutationResult(context_set=context_set, manifest=manifest_of(context_set), diff=diff)


def _changes_since_parse(context_set: ContextSet, diff: list[dict]) -> list[dict]:
    """This mutation's diff added to every change the digests have not caught up with (seed 000 §8).

    The banner sums the changes since the last parse: three uploads and then one
    more read "+4 new" while the four parse. The recorded diff is settled once the
    aggregate has matched the files at (or after) its revision; the next change then
    starts a new one. Changes to one filename combine into their net effect
    against the parsed state: new then deleted is nothing, deleted then uploaded is
    changed, new then replaced is still new.
    """
    recorded = context_set.last_diff or {}
    settled = context_set.aggregate_revision >= recorded.get("revision", 0)
    combined = {} if settled else {item["filename"]: item for item in recorded.get("items", [])}
    for item in diff:
        before = combined.get(item["filename"])
        change = _net_change(before["change"] if before else None, item["change"])
        if change is None:
            combined.pop(item["filename"], None)
        else:
            combined[item["filename"]] = {**item, "change": change}
    return list(combined.values())


def _net_change(before: str | None, after: str) -> str | None:
    """The net change of a file changed `before` (since the last parse) and now `after`; None: no change at all."""
    if before in (None, Change.UNCHANGED):
        return after
    if before == Change.NEW:
        return None if after == Change.DELETED else Change.NEW.value
    if before == Change.DELETED:
        return Change.CHANGED.value  # deleted, then a file of that name uploaded again
    return Change.DELETED.value if after == Change.DELETED else Change.CHANGED.value


def _banner_counts(diff: list[dict], revision: int) -> dict:
    counts = {change.value: 0 for change in Change}
    for item in diff:
        counts[item["change"]] += 1
    return {"revision": revision, **counts, "items": diff}
