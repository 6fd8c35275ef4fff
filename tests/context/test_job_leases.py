"""A job that raised or lost its worker never leaves its file or the aggregate `parsing`.

Eager Celery (the tasks run inline, signals included); the worker-process kills are in
tests/production/test_dead_workers.py.
"""

from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from context_app.models import FILE_JOB, ContextFile, ContextSet, DigestStatus
from context_app.pipeline import aggregate as aggregate_stage
from context_app.pipeline import digest as digest_stage
from context_app.pipeline import recovery as recovery_stage
from tests import session_worker
from tests.factories import ContextApi, make_member, wait_until
from workspaces import leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def parsed_set(api) -> tuple[str, ContextSet]:
    sid = api.create_session()
    api.upload(sid, {"a.txt": b"Site A used 12 MWh in 2022.", "b.txt": b"Site B used 9 MWh in 2023."})
    api.parse(sid)
    manifest = api.settle(sid)
    assert manifest["aggregate_digest_status"] == "ready"
    return sid, ContextSet.objects.get(session_id=sid)


def test_parse_now_requeues_an_aggregate_whose_job_was_lost(api, eager):
    """Item 3 of issue 17: its task died (or its message was lost), the aggregate stayed `parsing` for good."""
    sid, context_set = parsed_set(api)
    # The build over the current files died: still `parsing`, what it stores is of other inputs.
    ContextSet.objects.filter(pk=context_set.pk).update(
        aggregate_digest_status=DigestStatus.PARSING, aggregate_inputs_hash="", aggregate_digest=None
    )

    api.parse(sid)

    manifest = api.settle(sid)
    assert manifest["aggregate_digest_status"] == "ready"
    assert ContextSet.objects.get(pk=context_set.pk).aggregate_digest is not None


def test_a_digest_job_failing_on_a_locked_database_ends_its_file_in_error(api, eager, monkeypatch):
    """Item 4: files whose job failed on "database is locked" stayed `parsing` 17 minutes."""

    def locked(**_kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(digest_stage, "generate_file_digest", locked)
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    api.parse(sid)

    manifest = api.settle(sid)
    (file,) = manifest["files"]
    assert file["digest_status"] == "error"
    assert "database is locked" in ContextFile.objects.get().error["message"]
    assert manifest["aggregate_digest_status"] == "error"


def test_an_aggregate_job_failing_on_an_unexpected_error_ends_in_error(api, eager, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug in Task B")

    monkeypatch.setattr(aggregate_stage, "aggregate_tree", broken)
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    api.parse(sid)

    manifest = api.settle(sid)
    assert manifest["files"][0]["digest_status"] == "ready"
    assert manifest["aggregate_digest_status"] == "error"
    assert "a bug in Task B" in ContextSet.objects.get(session_id=sid).aggregate_error["message"]


def test_a_running_job_keeps_its_lease_and_frees_it_when_it_ends(api, settings, monkeypatch):
    settings.GROUNDWORK_JOB_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    # A session-wide worker started by an earlier test gets the upload's extraction message too,
    # and takes the lease for a moment to find the text already there.
    session_worker.wait_until_idle()
    file = ContextFile.objects.get()
    ContextFile.objects.filter(pk=file.pk).update(digest_status=DigestStatus.PARSING)  # claimed, queued
    # A renewer of its own, once the worker is idle: the process's may be asleep for a third of the
    # default lease (15 s) before it sees the short one.
    monkeypatch.setattr(leases, "_renewer", leases._Renewer())

    with leases.holding(FILE_JOB, file.pk) as held:
        assert held
        taken = ContextFile.objects.get().lease_expires_at
        wait_until(lambda: ContextFile.objects.get().lease_expires_at > taken, timeout=30, message="a renewal")
        assert not leases.take(FILE_JOB, file.pk), "a second delivery finds it held"
        assert recovery_stage.recover_unheld_jobs(queued=True) == set(), "held by a live process: not re-queued"

    assert recovery_stage.recover_unheld_jobs() == {file.context_set_id}, "ended while parsing: re-queued at once"
    assert ContextFile.objects.get().digest_status == DigestStatus.STALE


def test_a_renewal_read_before_the_job_ended_does_not_revive_its_lease(api):
    """The renewer thread reads the holds, then UPDATEs their rows: a job that ended in between had its
    lease renewed for another term (seen: a test waited 60 s for an extraction job that had ended)."""
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    session_worker.wait_until_idle()
    file = ContextFile.objects.get()
    ContextFile.objects.filter(pk=file.pk).update(digest_status=DigestStatus.PARSING)
    renewer = leases._Renewer()
    with leases.holding(FILE_JOB, file.pk) as held:
        assert held
        read_by_the_renewer = {FILE_JOB: {file.pk: leases.owner(FILE_JOB)}}
    renewer.renew(read_by_the_renewer)  # its UPDATE, after the job's end
    assert ContextFile.objects.get().lease_expires_at <= timezone.now(), "the ended lease stays ended"


def test_a_hold_inside_a_hold_of_the_same_kind_gives_the_outer_one_back(api):
    """Eager tasks nest jobs: an extraction's parse digests the set's files inline, each under its own
    lease. The inner one's end left the outer job writing as nobody, and its lease renewed for good."""
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022.", "b.txt": b"Site B used 9 MWh."})
    session_worker.wait_until_idle()
    ContextFile.objects.update(digest_status=DigestStatus.PARSING)
    outer_file, inner_file = ContextFile.objects.order_by("filename")

    def mine(file) -> bool:  # a write of this context's job would find its lease
        return ContextFile.objects.filter(leases.held_by_me(FILE_JOB), pk=file.pk).exists()

    with leases.holding(FILE_JOB, outer_file.pk) as outer_held:
        with leases.holding(FILE_JOB, inner_file.pk) as inner_held:
            assert outer_held and inner_held
            assert mine(inner_file) and not mine(outer_file)
        assert mine(outer_file), "the outer job's writes still find its lease"

    assert not any(leases._renewer._held.values()), "no lease is renewed after its job"
    now = timezone.now()
    assert all(file.lease_expires_at <= now for file in ContextFile.objects.all()), "both leases ended"


def test_a_queued_file_is_re_queued_only_once_it_has_waited_a_lease(api, settings):
    settings.GROUNDWORK_JOB_LEASE_SECONDS = 30
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    session_worker.wait_until_idle()
    file = ContextFile.objects.get()
    queued = ContextFile.objects.filter(pk=file.pk)
    # Claimed a moment ago, no worker has taken it yet: its message is on its way.
    queued.update(digest_status=DigestStatus.PARSING, lease_owner="", parsing_started_at=timezone.now())
    assert recovery_stage.recover_unheld_jobs(queued=True) == set()
    # Claimed longer than a lease ago and still not taken: its message was lost.
    queued.update(parsing_started_at=timezone.now() - timedelta(seconds=31))
    assert recovery_stage.recover_unheld_jobs(queued=True) == {file.context_set_id}


def test_a_starting_worker_re_queues_what_was_claimed_before_it_started_and_never_taken(api, settings, monkeypatch):
    """Its dead predecessor may have received the job's message and died before the job took its
    lease (or between claiming a set's files and queuing them): that message comes back only
    after the broker's visibility timeout, an hour."""
    settings.GROUNDWORK_JOB_LEASE_SECONDS = 900
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    session_worker.wait_until_idle()
    file = ContextFile.objects.get()
    claimed_at = timezone.now()
    ContextFile.objects.filter(pk=file.pk).update(
        digest_status=DigestStatus.PARSING, lease_owner="", parsing_started_at=claimed_at
    )
    monkeypatch.setattr(leases, "BOOTED_AT", claimed_at - timedelta(seconds=1))
    assert recovery_stage.recover_unheld_jobs(worker_starting=True) == set(), "claimed after the start: on its way"

    monkeypatch.setattr(leases, "BOOTED_AT", claimed_at + timedelta(seconds=1))
    assert recovery_stage.recover_unheld_jobs(worker_starting=True) == {file.context_set_id}
    assert ContextFile.objects.get().digest_status == DigestStatus.STALE


def test_a_worker_locks_the_files_set_before_the_file_as_a_request_does(api):
    """A file's digest written, then its set's row locked: a replace or a delete of that file, holding the set's
    row and waiting for the file's, deadlocked with it on PostgreSQL (CI). The set's row comes first now."""
    sid = api.create_session()
    api.upload_and_extract(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    session_worker.wait_until_idle()
    file = ContextFile.objects.get()
    ContextFile.objects.filter(pk=file.pk).update(digest_status=DigestStatus.PARSING)
    with leases.holding(FILE_JOB, file.pk) as held, CaptureQueriesContext(connection) as queries:
        assert held
        failure = {"code": "model_error", "message": "the model did not answer"}
        digest_stage.finish_file_digest(file, file.extracted_text_hash, None, failure)
    statements = [query["sql"] for query in queries.captured_queries]
    set_read = next(i for i, sql in enumerate(statements) if 'FROM "context_app_contextset"' in sql)
    file_write = next(i for i, sql in enumerate(statements) if sql.startswith('UPDATE "context_app_contextfile"'))
    assert set_read < file_write, statements[: file_write + 1]
