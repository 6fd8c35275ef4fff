"""Does the aggregate still match the files? Decided inside every mutation's transaction."""

import json

from digests.generate import prompt_version
from extraction import sha256_hex
from workspaces.claims import move

from ..models import ContextFile, ContextSet, DigestStatus


def aggregate_inputs(context_set: ContextSet) -> list[ContextFile]:
    return list(
        context_set.files.filter(digest_status=DigestStatus.READY, digest__isnull=False)
        .select_related("digest")
        .order_by("filename")
    )


def aggregate_inputs_hash(files: list[ContextFile]) -> str:
    return _inputs_hash([(f.filename, f.format, f.digest_hash) for f in files])


def current_inputs_hash(context_set: ContextSet) -> str:
    """aggregate_inputs_hash of the set as it is now, without loading a digest (three columns a file)."""
    ready = context_set.files.filter(digest_status=DigestStatus.READY, digest__isnull=False).order_by("filename")
    return _inputs_hash(ready.values_list("filename", "format", "digest_hash"))


def _inputs_hash(inputs) -> str:
    rows = [list(row) for row in inputs]
    return sha256_hex(json.dumps([prompt_version(), rows], separators=(",", ":")))


def lock_set(context_set_id) -> ContextSet | None:
    """The set's row, locked until the transaction ends (None when its session was deleted meanwhile). Taken
    before any of its files' rows, as a request's mutation takes them (context_app.services._lock): a worker
    that wrote its file's row first and then waited for the set's deadlocked with a replace or a delete of
    that file holding the set's."""
    return ContextSet.objects.select_for_update().filter(pk=context_set_id).first()


def refresh_aggregate_state(context_set: ContextSet) -> None:
    """Decide, inside the mutation's transaction, whether the aggregate still matches the files.

    Runs after every change: if the ready files and their digests are what the
    current aggregate was built from, it simply becomes current for the new
    revision (no Task B); otherwise it is stale until rebuilt.
    """
    statuses = set(context_set.files.order_by().values_list("digest_status", flat=True).distinct())
    fields = [
        "aggregate_digest_status",
        "aggregate_revision",
        "aggregate_digest",
        "aggregate_inputs_hash",
        "aggregate_error",
        "aggregate_versions",
    ]
    if not statuses:
        context_set.aggregate_digest = None
        context_set.aggregate_versions = {}
        context_set.aggregate_inputs_hash = ""
        move(context_set, "aggregate_digest_status", DigestStatus.READY)
        context_set.aggregate_revision = context_set.revision
        context_set.aggregate_error = None
    elif statuses == {DigestStatus.ERROR}:
        context_set.aggregate_digest = None
        context_set.aggregate_versions = {}
        context_set.aggregate_inputs_hash = ""
        move(context_set, "aggregate_digest_status", DigestStatus.ERROR)
        context_set.aggregate_error = {"message": "no usable context: every file failed to parse"}
    else:
        # Runs in the write transaction of every file's digest: the inputs hash is read
        # (three columns a file, no digest) only once no file is left to parse.
        settled = not statuses & {DigestStatus.STALE, DigestStatus.PARSING}
        if (
            settled
            and context_set.aggregate_digest_id is not None
            and context_set.aggregate_inputs_hash == current_inputs_hash(context_set)
        ):
            move(context_set, "aggregate_digest_status", DigestStatus.READY)
            context_set.aggregate_revision = context_set.revision
            context_set.aggregate_error = None
        elif context_set.aggregate_digest_status != DigestStatus.PARSING:
            move(context_set, "aggregate_digest_status", DigestStatus.STALE)
    context_set.save(update_fields=fields)
