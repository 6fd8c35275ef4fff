"""Leases on claimed jobs: which worker process holds a job (a file's digest, a set's aggregate), until when.

A claim (e.g. a file's stale → parsing) queues a job with no owner. The job, when it starts, takes
the lease: one conditional UPDATE writes its owner (`<node>#<boot>#<pid>`) and an
expiry `GROUNDWORK_JOB_LEASE_SECONDS` ahead, which a thread of the holding process
renews every third of that while the job runs. Of two deliveries of one job (a
redelivered message, a job re-queued by recovery) only one takes the lease; the other
returns, so a model call is repeated only when its holder died in the middle of it.

A lease is free when it has no owner (queued), has expired (its process died or
stopped renewing it), or its holder is known dead: a previous instance of this
worker's node name (one live instance per node name, as Celery assumes), or a pool
child of this instance that is gone. Recovery (context_app.pipeline.recovery) puts
the jobs of free leases back in the queue; the job's writes check it still holds
its lease, so a job that lost it writes nothing.
"""

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

from django.conf import settings
from django.db import connections, models
from django.db.models import Q
from django.utils import timezone

from workspaces.claims import claim

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeasedJob:
    """Where a kind of job keeps its status and its lease."""

    model: type[models.Model]
    status: str
    running: str  # the status value of a claimed job: queued for a worker, or held by one
    owner: str
    expires: str
    claimed_at: str | None = None  # when the row was claimed (queued for a worker), where the model keeps it


_BOOT = uuid.uuid4().hex[:12]  # this process tree's start: a pool child inherits it from its worker
BOOTED_AT = timezone.now()  # a dead predecessor of this node claimed its jobs before this moment
# The Celery node name (set by the worker before it forks its pool); elsewhere a name
# no other process has, so no process takes another live one for its dead predecessor.
_node = f"pid{os.getpid()}@{socket.gethostname()}"


def set_node_name(name: str) -> None:
    global _node
    _node = name


def process_owner() -> str:
    """This process: `<node>#<boot>#<pid>`, what tells whether a holder is dead (holder_is_dead)."""
    return f"{_node}#{_BOOT}#{os.getpid()}"


# The leases this context's job holds, {job kind: owner string}. Each hold is this process
# plus a token of its own: two threads of one process (the llm worker's pool) are two
# holders, so one job's end can neither end nor stop renewing another's lease of the row.
_holds: ContextVar[Mapping] = ContextVar("lease_holds", default=MappingProxyType({}))  # replaced, never mutated


def owner(job: LeasedJob | None = None) -> str:
    """The owner string of this context's hold of `job`; else this process (e.g. a node lock's token)."""
    return _holds.get().get(job) or process_owner()


def lease_seconds() -> float:
    return settings.GROUNDWORK_JOB_LEASE_SECONDS


def held_by_predecessor(job: LeasedJob) -> Q:
    """Leases of a previous instance of this node: dead, since this one runs under its name."""
    return Q(**{f"{job.owner}__startswith": f"{_node}#"}) & ~Q(**{f"{job.owner}__startswith": f"{_node}#{_BOOT}#"})


def holder_is_dead(holder: str) -> bool:
    node, _, rest = holder.partition("#")
    boot, _, pid = rest.partition("#")
    pid = pid.partition("#")[0]  # a hold's token follows the pid
    if node != _node or not pid.isdigit():
        return False  # another node's holder: only the lease's expiry tells
    if boot != _BOOT:
        return True
    return int(pid) != os.getpid() and not _process_exists(int(pid))


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_free(holder: str, expires_at: datetime | None, now: datetime) -> bool:
    return not holder or expires_at is None or expires_at <= now or holder_is_dead(holder)


def take(job: LeasedJob, pk, **conditions) -> str | None:
    """Take the lease of a running job whose row also matches `conditions`: the hold's owner string,
    renewed until `end`; None when it is not running any more, does not match, or another live
    process holds it."""
    row = (
        job.model.objects.filter(pk=pk, **{job.status: job.running}, **conditions)
        .values(job.owner, job.expires)
        .first()
    )
    now = timezone.now()
    if row is None or not is_free(row[job.owner], row[job.expires], now):
        return None
    hold = f"{process_owner()}#{uuid.uuid4().hex[:8]}"
    # Compare-and-swap on the owner and expiry read: of two deliveries one moves the row.
    taken = claim(
        job.model.objects.filter(pk=pk, **conditions, **{job.owner: row[job.owner], job.expires: row[job.expires]}),
        field=job.status,
        from_=job.running,
        to=job.running,
        **{job.owner: hold, job.expires: now + timedelta(seconds=lease_seconds())},
    )
    if not taken:
        return None
    _renewer.add(job, pk, hold)
    return hold


ENDED = "#ended"  # marks the owner string of a hold whose job is over


def end(job: LeasedJob, pk, hold: str) -> None:
    """The job is over: its lease expires now (a row still running is recovered at once). The owner
    string is marked ended too: a renewal the renewer thread read before this (its UPDATE still to
    come) matches owner strings of live holds only, so it cannot revive the lease for another term."""
    _renewer.discard(job, pk, hold)
    try:
        job.model.objects.filter(pk=pk, **{job.owner: hold}).update(
            **{job.expires: timezone.now(), job.owner: f"{hold}{ENDED}"}
        )
    except Exception:  # noqa: BLE001 - not renewed any more, it expires on its own
        logger.warning("lease of %s %s not ended; it expires on its own", job.model.__name__, pk, exc_info=True)


@contextmanager
def holding(job: LeasedJob, pk, **conditions) -> Iterator[bool]:
    """`with holding(FILE_JOB, id, …) as held:` the lease for the block (held False: not taken).

    A block may hold another job of the same kind inside it (eager tasks in tests: an extraction's
    parse digests the set's files inline); when the inner one ends, the outer hold is this
    context's again, and ends as its own."""
    hold = take(job, pk, **conditions)
    if hold is None:
        yield False
        return
    outer = _holds.set(MappingProxyType({**_holds.get(), job: hold}))
    try:
        yield True
    finally:
        _holds.reset(outer)
        end(job, pk, hold)


def held_by_me(job: LeasedJob) -> Q:
    """The condition a job's write adds: it still holds its lease."""
    return Q(**{job.owner: owner(job)})


class _Renewer:
    """One thread per process renews the leases its running jobs hold, in one UPDATE a kind."""

    def __init__(self) -> None:
        self._held: dict[LeasedJob, dict] = {}  # {job kind: {pk: owner string}}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def after_fork(self) -> None:
        """A pool child holds none of its parent's leases, nor its lock, nor its thread."""
        self._held = {}
        self._lock = threading.Lock()
        self._thread = None

    def add(self, job: LeasedJob, pk, hold: str) -> None:
        with self._lock:
            self._held.setdefault(job, {})[pk] = hold
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lease-renewer", daemon=True)
                self._thread.start()

    def discard(self, job: LeasedJob, pk, hold: str) -> None:
        with self._lock:
            if self._held.get(job, {}).get(pk) == hold:
                del self._held[job][pk]

    def _run(self) -> None:
        while True:
            time.sleep(lease_seconds() / 3)
            with self._lock:
                held = {job: dict(holds) for job, holds in self._held.items() if holds}
            if held:
                self.renew(held)

    def renew(self, held: dict[LeasedJob, dict]) -> None:
        expires = timezone.now() + timedelta(seconds=lease_seconds())
        try:
            for job, holds in held.items():
                # Owner strings are unique to a hold: the pair can only match the rows held.
                mine = job.model.objects.filter(pk__in=list(holds), **{f"{job.owner}__in": set(holds.values())})
                mine.update(**{job.expires: expires})
        except Exception:  # noqa: BLE001 - tried again in a third of the lease
            logger.warning("leases not renewed", exc_info=True)
        finally:
            connections.close_all()


_renewer = _Renewer()
os.register_at_fork(after_in_child=_renewer.after_fork)
