"""STORAGE_BACKEND=s3 against a real S3-compatible server on loopback (moto in server mode).

Uploads, downloads, replacements and deletes go through the API; extraction of a large
file happens in the worker, which reads the object back from the bucket. The database
keeps only object keys, a delete removes the object, and an object gone from the bucket
gives its file an error status instead of a crash.
"""

import base64
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from context_app.models import ContextFile, FileText
from context_app.pipeline import jobs
from tests.factories import ContextApi, make_member, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTES = b"# Field notes\n\nNight flow in district 3 dropped to 210 m3/h after the valve works.\n"
# Extracted by the worker, from the bucket (as every file is).
LARGE = ("Pressure log, district 3.\n\n" + "Line pressure held at 4.2 bar during the night survey. " * 60).encode()


@pytest.fixture
def api(s3_bucket):
    return ContextApi(make_member()[0])


def files_of(api, sid) -> dict[str, dict]:
    return {f["filename"]: f for f in api.manifest(sid)["files"]}


def settled_file(api, sid, name, timeout=30) -> dict:
    return wait_until(
        lambda: (f := files_of(api, sid)[name])["digest_status"] != "parsing" and f,
        timeout=timeout,
        message=f"{name} to leave parsing",
    )


def download(api, sid, fid):
    return api.get(f"/api/sessions/{sid}/context/files/{fid}/download")


def test_files_live_in_the_bucket_and_the_worker_extracts_from_it(api, s3_server, s3_bucket, settings):
    pdf = (FIXTURES / "report.pdf").read_bytes()
    sid = api.create_session()
    response = api.upload(sid, {"notes.md": NOTES, "report.pdf": pdf, "pressure.txt": LARGE})
    assert response.status_code == 201, response.content

    stored = {f.filename: f.blob.name for f in ContextFile.objects.filter(context_set__session_id=sid)}
    objects = s3_server.keys(s3_bucket)
    assert {objects[key] for key in stored.values()} == {NOTES, pdf, LARGE}, "each file is its own object"
    assert len(objects) == 3

    # The large files were stored unread; the worker fetched the objects and extracted them.
    pressure = settled_file(api, sid, "pressure.txt")
    assert pressure["digest_status"] == "stale", pressure
    assert FileText.objects.get(file_id=pressure["file_id"]).text.startswith("Pressure log, district 3.")
    assert settled_file(api, sid, "report.pdf")["digest_status"] == "stale"

    # Nothing on local disk, and no file's bytes in any table (a dump of every row, binary fields base64).
    assert not Path(settings.MEDIA_ROOT).exists()
    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    dump = dump.getvalue()
    assert "%PDF" not in dump and base64.b64encode(pdf[:60]).decode() not in dump
    assert stored["report.pdf"] in dump, "the database holds the object's key"

    for name, data in (("notes.md", NOTES), ("report.pdf", pdf), ("pressure.txt", LARGE)):
        answer = download(api, sid, files_of(api, sid)[name]["file_id"])
        assert answer.status_code == 200 and b"".join(answer.streaming_content) == data


def test_replace_and_delete_manage_their_objects(api, s3_server, s3_bucket):
    first, second = api.create_session(), api.create_session(title="Second")
    for sid in (first, second):
        assert api.upload(sid, {"notes.md": NOTES}).status_code == 201
    # One name in two sessions: two objects, never one overwritten by the other.
    assert len(s3_server.keys(s3_bucket)) == 2

    fid = api.file_id(first, "notes.md")
    old_key = ContextFile.objects.get(pk=fid).blob.name
    revised = NOTES + b"\nThe meter at the district inlet was recalibrated in May.\n"
    revision = api.manifest(first)["revision"]
    assert api.replace(first, fid, "notes.md", revised, if_match=revision).status_code == 200
    new_key = ContextFile.objects.get(pk=fid).blob.name
    objects = s3_server.keys(s3_bucket)
    assert new_key != old_key and old_key not in objects and objects[new_key] == revised
    assert b"".join(download(api, first, fid).streaming_content) == revised

    # Deleting the first session's file removes its object and leaves the second's.
    assert api.delete(f"/api/sessions/{first}/context/files/{fid}").status_code == 200
    objects = s3_server.keys(s3_bucket)
    assert new_key not in objects and list(objects.values()) == [NOTES]
    other = api.file_id(second, "notes.md")
    assert b"".join(download(api, second, other).streaming_content) == NOTES


def test_a_missing_object_gives_the_file_an_error_status(api, s3_server, s3_bucket, monkeypatch):
    # The worker would extract at once; hold the job back until the object is gone.
    held = []
    monkeypatch.setattr(jobs, "enqueue_extraction", lambda file_id, content_hash: held.append(file_id))
    sid = api.create_session()
    assert api.upload(sid, {"pressure.txt": LARGE}).status_code == 201
    fid = api.file_id(sid, "pressure.txt")
    key = ContextFile.objects.get(pk=fid).blob.name
    s3_server.client().delete_object(Bucket=s3_bucket, Key=key)
    monkeypatch.undo()

    from context_app import tasks

    file = ContextFile.objects.get(pk=fid)
    tasks.extract_file.delay(str(fid), file.content_hash)  # the worker's own extraction job
    failed = settled_file(api, sid, "pressure.txt")
    assert failed["digest_status"] == "error"
    assert failed["error"]["code"] == "storage" and "missing" in failed["error"]["message"], failed

    # Downloading it is a 404 that says why, not a 500.
    answer = download(api, sid, fid)
    assert answer.status_code == 404 and "missing" in answer.json()["error"]
    # Retrying reads the bucket again: still missing, still an error, still no crash.
    revision = api.manifest(sid)["revision"]
    assert api.post(f"/api/sessions/{sid}/context/files/{fid}/retry", if_match=revision).status_code == 202
    assert settled_file(api, sid, "pressure.txt")["error"]["code"] == "storage"


def test_retrying_a_small_file_whose_object_is_gone(api, s3_server, s3_bucket):
    sid = api.create_session()
    broken = b"%PDF-1.4\nnot really a pdf\n"
    assert api.upload(sid, {"broken.pdf": broken}).status_code == 201
    fid = api.file_id(sid, "broken.pdf")
    assert settled_file(api, sid, "broken.pdf")["digest_status"] == "error"
    s3_server.client().delete_object(Bucket=s3_bucket, Key=ContextFile.objects.get(pk=fid).blob.name)
    response = api.post(f"/api/sessions/{sid}/context/files/{fid}/retry")
    assert response.status_code == 202, response.content
    failed = settled_file(api, sid, "broken.pdf")
    assert failed["digest_status"] == "error" and failed["error"]["code"] == "storage", failed


def test_healthz_checks_the_bucket(client, s3_server, s3_bucket, settings):
    assert client.get("/healthz").json() == {
        "status": "ok",
        "checks": {"database": "ok", "redis": "ok", "storage": "ok"},
    }
    settings.AWS_STORAGE_BUCKET_NAME = "groundwork-no-such-bucket"
    settings.STORAGES = {**settings.STORAGES}  # rebuild the storage with the new bucket
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"].startswith("error") and response.json()["checks"]["redis"] == "ok"
