"""Concurrent requests and worker steps, each thread on its own database connection.

Run by both parts of `make test`; the one that matters for production is the
PostgreSQL part, where row locks (select_for_update), conditional UPDATE claims
(workspaces/claims.py) and unique-key inserts (workspaces/idempotency.py)
really run side by side. SQLite serialises writers, so there they are only
ordered. Every test asserts: no lost update, no double claim, no deadlock (a
thread that hangs or raises fails the test).
"""

import random
import threading
import uuid
from collections import Counter

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from rest_framework.test import APIClient

from context_app.models import ContextFile, ContextSet, DigestStatus
from context_app.pipeline import dispatch as dispatch_stage
from context_app.pipeline import jobs
from research_app.models import ResearchRun
from tests.factories import ContextApi, make_member
from workspaces.claims import claim
from workspaces.models import IdempotencyRecord, ResearchSession

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 8
JOIN_SECONDS = 60


def side_by_side(action, count: int = THREADS) -> list:
    """Run action(i) in `count` threads released together; return their results in order.

    Each thread has its own connection (Django's are per thread) and closes it at the end.
    A thread that raises re-raises here; one still running after JOIN_SECONDS is a hang.
    """
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=JOIN_SECONDS)
            results[index] = action(index)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a thread hung: lock wait or deadlock"
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def client_for(api: ContextApi) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api.token}")
    return client


def upload(client: APIClient, sid: str, name: str, data: bytes, key: str, if_match: int | None = None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key}
    if if_match is not None:
        headers["HTTP_IF_MATCH"] = f'"{if_match}"'
    return client.post(
        f"/api/sessions/{sid}/context/files",
        {"files": [SimpleUploadedFile(name, data)]},
        format="multipart",
        **headers,
    )


def note(n: int) -> bytes:
    return f"Note {n}: the pump at station {n} ran {n * 5} hours in week {n}.\n".encode()


# --- claims ----------------------------------------------------------------------------


def test_a_claim_moves_each_row_for_exactly_one_contender():
    session = make_session()
    runs = [
        ResearchRun.objects.create(
            session=session, question=f"Q{n}?", max_depth=1, max_children=2, max_nodes=3, token_budget=1000
        ).pk
        for n in range(30)
    ]

    def contend(index: int) -> list:
        order = runs[:]
        random.Random(index).shuffle(order)  # each contender in its own order: real contention
        return [
            pk
            for pk in order
            if claim(
                ResearchRun.objects.filter(pk=pk),
                from_=ResearchRun.Status.QUEUED,
                to=ResearchRun.Status.BINDING,
                tokens_used=index + 1,
            )
        ]

    won = side_by_side(contend)
    wins = Counter(pk for pks in won for pk in pks)
    assert sorted(wins) == sorted(runs) and set(wins.values()) == {1}, "every row claimed once, by one"
    # What each winner wrote with its claim is what stayed.
    for index, pks in enumerate(won):
        assert set(ResearchRun.objects.filter(pk__in=pks).values_list("tokens_used", flat=True)) <= {index + 1}


def test_parse_dispatched_side_by_side_sends_each_file_once(api, monkeypatch):
    sid = api.create_session()
    api.upload_and_extract(sid, {f"note-{n:02d}.txt": note(n) for n in range(20)})
    context_set = ContextSet.objects.get(session_id=sid)
    ContextSet.objects.filter(pk=context_set.pk).update(parse_requested=True)
    sent, lock = [], threading.Lock()

    def record(*args):
        with lock:
            sent.append(tuple(str(arg) for arg in args))

    monkeypatch.setattr(jobs, "enqueue_digest", record)
    monkeypatch.setattr(jobs, "enqueue_aggregate", record)

    side_by_side(lambda index: dispatch_stage.dispatch_parse(context_set.pk))

    files = dict(ContextFile.objects.filter(context_set=context_set).values_list("id", "extracted_text_hash"))
    assert sorted(sent) == sorted((str(pk), text_hash) for pk, text_hash in files.items()), "each file once"
    assert set(ContextFile.objects.filter(context_set=context_set).values_list("digest_status", flat=True)) == {
        DigestStatus.PARSING
    }


# --- If-Match and the set's row lock -------------------------------------------------------


def test_one_revision_two_writers_one_wins_the_others_get_412(api):
    sid = api.create_session()
    assert api.upload(sid, {"base.txt": note(0)}).status_code == 201
    revision = api.manifest(sid)["revision"]

    responses = side_by_side(
        lambda i: upload(client_for(api), sid, f"tab-{i}.txt", note(i + 1), uuid.uuid4().hex, if_match=revision)
    )
    statuses = Counter(r.status_code for r in responses)
    assert statuses == Counter({201: 1, 412: THREADS - 1}), statuses
    assert {r.json()["current_revision"] for r in responses if r.status_code == 412} == {revision + 1}
    manifest = api.manifest(sid)
    assert manifest["revision"] == revision + 1 and len(manifest["files"]) == 2


def test_writers_without_if_match_all_land_one_revision_each(api):
    sid = api.create_session()
    before = api.manifest(sid)["revision"]

    responses = side_by_side(lambda i: upload(client_for(api), sid, f"tab-{i}.txt", note(i), uuid.uuid4().hex))
    assert [r.status_code for r in responses] == [201] * THREADS
    # Serialised by the set's row lock: each write saw the one before it, none was lost.
    assert sorted(r.json()["revision"] for r in responses) == list(range(before + 1, before + THREADS + 1))
    manifest = api.manifest(sid)
    assert manifest["revision"] == before + THREADS
    assert sorted(f["filename"] for f in manifest["files"]) == sorted(f"tab-{i}.txt" for i in range(THREADS))


def test_replace_and_delete_of_one_file_side_by_side(api):
    sid = api.create_session()
    assert api.upload(sid, {"shared.txt": note(0)}).status_code == 201
    fid = api.file_id(sid, "shared.txt")

    def act(index: int):
        client = client_for(api)
        headers = {"HTTP_IDEMPOTENCY_KEY": uuid.uuid4().hex}
        if index % 2:
            return client.delete(f"/api/sessions/{sid}/context/files/{fid}", **headers)
        return client.put(
            f"/api/sessions/{sid}/context/files/{fid}",
            {"file": SimpleUploadedFile("shared.txt", note(index + 10))},
            format="multipart",
            **headers,
        )

    statuses = Counter(r.status_code for r in side_by_side(act))
    # Once a delete wins, later writers find no file; no write fails any other way.
    assert set(statuses) <= {200, 404} and statuses[200] >= 1, statuses
    assert ContextFile.objects.filter(pk=fid).count() == 0, "a delete ran, and nothing recreated the row"


# --- Idempotency-Key -----------------------------------------------------------------------


def test_one_key_sent_side_by_side_runs_the_request_once(api):
    key = uuid.uuid4().hex

    def create(index: int):
        return client_for(api).post("/api/sessions", {"title": "Leak study"}, format="json", HTTP_IDEMPOTENCY_KEY=key)

    responses = side_by_side(create)
    statuses = Counter(r.status_code for r in responses)
    assert set(statuses) <= {201, 409}, statuses
    assert ResearchSession.objects.filter(title="Leak study").count() == 1
    originals = [r for r in responses if r.status_code == 201 and r.headers.get("Idempotent-Replayed") != "true"]
    assert len(originals) == 1
    replays = [r for r in responses if r.headers.get("Idempotent-Replayed") == "true"]
    assert all(r.content == originals[0].content for r in replays)
    assert IdempotencyRecord.objects.filter(key=key).count() == 1


def test_one_key_for_an_upload_side_by_side_stores_once(api):
    sid = api.create_session()
    before = api.manifest(sid)["revision"]
    key = uuid.uuid4().hex
    responses = side_by_side(lambda i: upload(client_for(api), sid, "once.txt", note(1), key))
    assert set(r.status_code for r in responses) <= {201, 409}
    manifest = api.manifest(sid)
    assert manifest["revision"] == before + 1, "the upload ran once"
    assert [f["filename"] for f in manifest["files"]] == ["once.txt"]


def test_a_key_freed_by_a_failing_request_is_never_a_500(api):
    """The first request raises (stale If-Match → 412) and frees its key while the others look it up."""
    sid = api.create_session()
    assert api.upload(sid, {"base.txt": note(0)}).status_code == 201
    stale = api.manifest(sid)["revision"] - 1
    key = uuid.uuid4().hex
    for _ in range(10):  # the race is narrow: several rounds
        responses = side_by_side(lambda i: upload(client_for(api), sid, "late.txt", note(2), key, if_match=stale))
        assert set(r.status_code for r in responses) <= {409, 412}, Counter(r.status_code for r in responses)
    assert IdempotencyRecord.objects.filter(key=key).count() == 0


def make_session():
    from research_app.services import create_session

    return create_session(user=make_member()[0], title="Concurrency")
