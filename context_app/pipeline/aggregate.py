"""Task B: the set's aggregate digest, as a tree of cached calls over the files' digests.

Its first level is built while Task A still runs (prebuild_first_level), one worker
a node (a Redis lock per node), the uncached nodes of a level in parallel threads.
"""

import contextvars
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import redis
from django.conf import settings
from django.db import connections, transaction
from redis.exceptions import LockError

from digests.generate import generate_aggregate_digest, prompt_version
from extraction import sha256_hex
from llm_platform import limiter
from llm_platform.model_task import TaskFailed
from workspaces import leases, shared_redis
from workspaces.claims import move

from .. import digest_cache, provenance
from ..models import AGGREGATE_JOB, ContextFile, ContextSet, DigestStatus, StoredDigest
from ..notify import notify_context_changed
from .aggregate_state import aggregate_inputs, aggregate_inputs_hash, current_inputs_hash, refresh_aggregate_state
from .dispatch import schedule_aggregate_if_due, settle

logger = logging.getLogger(__name__)


AGGREGATE_THREADS = 8  # Task B nodes of one level built at once when the provider has no in-flight limit


NODE_WAIT_POLL_SECONDS = 0.2  # how often a worker waiting for another's Task B node looks for it


@limiter.bulk()
def build_aggregate(context_set_id) -> None:
    """Task B over the ready files' digests, as a tree of cached calls when the set is large."""
    with leases.holding(AGGREGATE_JOB, context_set_id) as held:
        if held:  # else: not parsing any more, or another worker holds it
            _build_held_aggregate(context_set_id)


def _build_held_aggregate(context_set_id) -> None:
    context_set = ContextSet.objects.get(pk=context_set_id)
    files = aggregate_inputs(context_set)
    inputs_hash = aggregate_inputs_hash(files)
    stored, error = None, None
    if context_set.aggregate_digest_id and context_set.aggregate_inputs_hash == inputs_hash:
        stored = context_set.aggregate_digest
    elif files:
        try:
            stored = aggregate_tree(context_set, files)
        except TaskFailed as exc:
            error = {"message": exc.reason}
    status = _write_aggregate(context_set_id, inputs_hash, stored, error)
    if status is None:
        return
    notify_context_changed(context_set_id)
    if status == DigestStatus.STALE:
        schedule_aggregate_if_due(context_set_id)  # the files changed while it was built
    else:
        # A failed aggregate waits for the next Parse now, Retry or change: rebuilding
        # it from here would loop for as long as the cause (a model outage) lasts.
        settle(context_set_id)


def _write_aggregate(
    context_set_id, inputs_hash: str, stored: StoredDigest | None, error: dict | None
) -> DigestStatus | None:
    """The built (or failed) aggregate, written if its job still holds the lease; None if not."""
    with transaction.atomic():
        context_set = ContextSet.objects.select_for_update().get(pk=context_set_id)
        if context_set.aggregate_digest_status != DigestStatus.PARSING or (
            context_set.aggregate_lease_owner != leases.owner(AGGREGATE_JOB)
        ):
            logger.info("dropped aggregate of %s: its job lost its lease to another worker", context_set_id)
            return None
        if current_inputs_hash(context_set) != inputs_hash:
            logger.info("dropped aggregate of %s: files changed while it was built", context_set_id)
            move(context_set, "aggregate_digest_status", DigestStatus.STALE)
        elif stored is not None:
            context_set.aggregate_digest = stored
            context_set.aggregate_inputs_hash = inputs_hash
            context_set.aggregate_error = None
            move(context_set, "aggregate_digest_status", DigestStatus.PARSING)  # refresh decides ready vs stale
            # Its SourceRefs cite the texts of its inputs, as current now (the inputs hash was just checked).
            inputs = {f.filename for f in aggregate_inputs(context_set)}
            versions = provenance.current_versions(context_set_id)
            context_set.aggregate_versions = {name: version for name, version in versions.items() if name in inputs}
            context_set.save(
                update_fields=[
                    "aggregate_digest",
                    "aggregate_inputs_hash",
                    "aggregate_error",
                    "aggregate_digest_status",
                    "aggregate_versions",
                ]
            )
            refresh_aggregate_state(context_set)
            if context_set.aggregate_digest_status == DigestStatus.PARSING:
                move(context_set, "aggregate_digest_status", DigestStatus.STALE)
        else:
            move(context_set, "aggregate_digest_status", DigestStatus.ERROR)
            context_set.aggregate_error = error or {"message": "no usable context: every file failed to parse"}
        context_set.save(update_fields=["aggregate_digest_status", "aggregate_error"])
        return context_set.aggregate_digest_status


def aggregate_tree(context_set: ContextSet, files: list[ContextFile]) -> StoredDigest:
    """One Task B for up to FANOUT files; above that, buckets aggregated level by level.

    Bucket boundaries depend only on the entries' names (content-defined), so
    changing one file changes one bucket per level and every other node is a
    cache hit: O(log N) calls for one changed file. The nodes of a level that are
    not cached are built in parallel, each call under the provider's limits.
    """
    entries = [{"manifest": [{"filename": f.filename, "format": f.format}], "digest": f.digest} for f in files]
    fanout = max(2, settings.GROUNDWORK_AGGREGATE_FANOUT)
    while len(entries) > fanout:
        entries = _aggregate_level(context_set, _buckets(entries, fanout))
    return _aggregate_level(context_set, [entries])[0]["digest"]


def _buckets(entries: list[dict], fanout: int) -> list[list[dict]]:
    """Content-defined buckets of about `fanout` entries: each level of the tree is ~fanout times smaller.

    A bucket ends after an entry whose name hashes to 0 modulo `fanout` (probability
    1/fanout) once it holds fanout/2 entries, and at 1.5 × fanout at the latest: the
    buckets average close to the fan-out (8.6 for 8) where boundaries alone, cut at
    the fan-out, averaged 2.7. An entry's name is its first file's, so a changed
    file never moves a boundary; an added or removed name moves only the
    boundaries near it.
    """
    smallest, largest = max(1, fanout // 2), fanout + fanout // 2
    buckets: list[list[dict]] = [[]]
    for entry in entries:
        buckets[-1].append(entry)
        size = len(buckets[-1])
        boundary = size >= smallest and int(sha256_hex(entry["manifest"][0]["filename"])[:8], 16) % fanout == 0
        if boundary or size >= largest:
            buckets.append([])
    return [b for b in buckets if b]


def _aggregate_level(context_set: ContextSet, buckets: list[list[dict]], *, wait: bool = True) -> list[dict | None]:
    """One node per bucket: cached nodes at once, the others built in parallel threads.

    A node another worker is building is waited for, unless `wait` is False (then it is None).
    """
    nodes: list[dict | None] = []
    missing: list[tuple[int, list[dict], list[dict], str]] = []
    for index, entries in enumerate(buckets):
        manifest = [item for entry in entries for item in entry["manifest"]]
        input_hashes = [entry["digest"].digest_hash for entry in entries]
        cache_key = digest_cache.aggregate_cache_key(manifest, input_hashes, prompt_version())
        stored = digest_cache.cached_aggregate(context_set.cache_scope, cache_key)
        nodes.append({"manifest": manifest, "digest": stored} if stored else None)
        if stored is None:
            missing.append((index, entries, manifest, cache_key))
    # Threads cannot see rows of a transaction still open in this one (a test's, a caller's).
    parallel = len(missing) > 1 and not transaction.get_connection().in_atomic_block
    if not parallel:
        for index, entries, manifest, cache_key in missing:
            nodes[index] = _build_node(context_set, entries, manifest, cache_key, wait=wait)
        return nodes
    workers = min(len(missing), settings.GROUNDWORK_LLM_MAX_IN_FLIGHT or AGGREGATE_THREADS)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aggregate") as pool:
        futures = {
            pool.submit(_in_thread, contextvars.copy_context(), context_set, entries, manifest, cache_key): index
            for index, entries, manifest, cache_key in missing
        }
        try:
            for future, index in futures.items():
                nodes[index] = future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return nodes


def _in_thread(context: contextvars.Context, *args) -> dict | None:
    """A node built in a pool thread: the caller's context (bulk priority), its own DB connection."""
    try:
        return context.run(_build_node, *args)
    finally:
        connections.close_all()


def _build_node(
    context_set: ContextSet, entries: list[dict], manifest: list[dict], cache_key: str, *, wait: bool = True
) -> dict | None:
    """One Task B node, built by one worker at a time: another that needs it waits for its cache entry."""
    scope = context_set.cache_scope
    lock = _node_lock(scope, cache_key)
    while not _acquire(lock):
        if not wait:
            return None
        stored = digest_cache.cached_aggregate(scope, cache_key)
        if stored is not None:
            return {"manifest": manifest, "digest": stored}
        _break_if_holder_dead(lock)
        time.sleep(NODE_WAIT_POLL_SECONDS)
    try:
        stored = digest_cache.cached_aggregate(scope, cache_key)  # built while this one waited
        if stored is None:
            generated = generate_aggregate_digest(
                manifest=manifest,
                digests=[entry["digest"].content for entry in entries],
                subject=f"aggregate:{context_set.id}",
                session_id=context_set.session_id,
            )
            stored = digest_cache.store_digest(
                scope=scope, cache_key=cache_key, kind=StoredDigest.Kind.AGGREGATE, generated=generated
            )
    finally:
        _release(lock)
    return {"manifest": manifest, "digest": stored}


def _node_lock(scope: str, cache_key: str):
    # Expires on its own if its worker dies: one node is at most a call and its repair, with retries.
    seconds = 2 * settings.GROUNDWORK_LLM_TIMEOUT_SECONDS + settings.GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS
    return shared_redis.client().lock(f"groundwork:aggregate-node:{scope}:{cache_key}", timeout=seconds)


def _acquire(lock) -> bool:
    try:
        # The holder's process as the token: a waiter can tell when it died (leases.holder_is_dead).
        return lock.acquire(blocking=False, token=leases.process_owner())
    except redis.RedisError:
        return True  # no Redis: build it (at worst twice)


def _break_if_holder_dead(lock) -> None:
    """A node lock whose holder was killed (a pool child, a restarted worker's predecessor) is
    released now, not at its expiry: the job re-queued after the kill builds the node."""
    try:
        holder = lock.redis.get(lock.name)
        if holder and leases.holder_is_dead(holder.decode()):
            lock.do_release(holder)  # only if it is still that holder's
            logger.warning("released the aggregate node lock of dead %s", holder.decode())
    except (redis.RedisError, LockError):
        pass


def _release(lock) -> None:
    try:
        lock.release()
    except (redis.RedisError, LockError):
        pass


_bucket_cache: dict[tuple, dict[str, tuple[str, ...]]] = {}  # (set, revision) → filename → its bucket


def prebuild_first_level(file: ContextFile) -> None:
    """Build the first-level Task B node of this file's bucket now when every file of it is ready.

    The aggregate waits for every file, but its first level (about 1/fan-out of all
    calls) need not: a bucket whose files are all ready is built here and cached while
    other files are still being digested, and build_aggregate finds it cached (or
    waits for it: one worker builds a node at a time, see _build_node). A failure is
    left to build_aggregate. Buckets are those of the files expected to be inputs
    (extracted, not failed); a file failing later can move later boundaries, and a
    node built for a bucket that moved is not used.
    """
    fanout = max(2, settings.GROUNDWORK_AGGREGATE_FANOUT)
    bucket = _first_level_bucket(file.context_set_id, file.filename, fanout)
    if bucket is None:
        return
    files = {
        f.filename: f
        for f in ContextFile.objects.filter(context_set_id=file.context_set_id, filename__in=bucket).select_related(
            "digest"
        )
    }
    ready = [f for f in files.values() if f.digest_status == DigestStatus.READY and f.digest is not None]
    if len(ready) != len(bucket):
        return
    entries = [
        {"manifest": [{"filename": name, "format": files[name].format}], "digest": files[name].digest}
        for name in bucket
    ]
    try:
        _aggregate_level(file.context_set, [entries], wait=False)
    except TaskFailed as exc:
        logger.info("first-level aggregate of %s not built early: %s", file.filename, exc.reason)


def _first_level_bucket(context_set_id, filename: str, fanout: int) -> tuple[str, ...] | None:
    """The filenames of `filename`'s first-level bucket (None: the set needs no tree), per revision."""
    revision = ContextSet.objects.filter(pk=context_set_id).values_list("revision", flat=True).first()
    key = (context_set_id, revision, fanout, prompt_version())
    if key not in _bucket_cache:
        names = list(
            ContextFile.objects.filter(context_set_id=context_set_id)
            .exclude(digest_status=DigestStatus.ERROR)
            .exclude(extracted_text_hash="")
            .order_by("filename")
            .values_list("filename", flat=True)
        )
        of_name: dict[str, tuple[str, ...]] = {}
        if len(names) > fanout:
            entries = [{"manifest": [{"filename": name}]} for name in names]
            for bucket in _buckets(entries, fanout):
                members = tuple(entry["manifest"][0]["filename"] for entry in bucket)
                of_name.update(dict.fromkeys(members, members))
        if len(_bucket_cache) >= 16:
            _bucket_cache.pop(next(iter(_bucket_cache)))
        _bucket_cache[key] = of_name
    return _bucket_cache[key].get(filename)
