"""SPEC §2.6 contract details: idempotency, If-Match, ETag, limits, team isolation."""

import json
import uuid
from pathlib import PurePosixPath

import pytest
from django.contrib.auth import get_user_model

from context_app.models import ContextFile
from tests.factories import ContextApi, make_member
from workspaces import idempotency

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = b"The survey covered 412 households in 2023. Results may change after the audit.\n"


@pytest.fixture
def api():
    user, _ = make_member()
    return ContextApi(user)


@pytest.fixture
def session_with_file(api):
    sid = api.create_session()
    fid = api.upload_and_extract(sid, {"survey.txt": TEXT})["files"][0]["file_id"]
    return sid, fid


def test_sessions_create_list_and_snapshot(api):
    response = api.post("/api/sessions", {"title": "Leak study", "question": "Do sensors pay off?"}, format="json")
    assert response.status_code == 201
    sid = response.json()["session_id"]
    listed = api.get("/api/sessions").json()["sessions"]
    assert [s["session_id"] for s in listed] == [sid]
    snapshot = api.get(f"/api/sessions/{sid}").json()
    assert snapshot["question"] == "Do sensors pay off?"
    assert snapshot["context_processing"]["files_total"] == 0
    assert snapshot["runs"] == []
    assert api.post("/api/sessions", {"title": " "}, format="json").status_code == 400


def test_mutations_require_an_idempotency_key(api, session_with_file):
    sid, _ = session_with_file
    response = api.client.post(f"/api/sessions/{sid}/context/parse")
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]


def test_same_key_same_request_replays_byte_for_byte_without_a_second_effect(api):
    sid = api.create_session()
    first = api.upload(sid, {"survey.txt": TEXT}, key="k-1")
    second = api.upload(sid, {"survey.txt": TEXT}, key="k-1")
    assert first.status_code == second.status_code == 201
    assert second.content == first.content
    assert second["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    assert api.manifest(sid)["revision"] == 1


def test_same_key_different_request_is_422(api):
    sid = api.create_session()
    api.upload(sid, {"survey.txt": TEXT}, key="k-2")
    response = api.upload(sid, {"survey.txt": TEXT + b"more"}, key="k-2")
    assert response.status_code == 422
    assert api.manifest(sid)["revision"] == 1


def test_same_key_while_the_first_is_running_is_409(api, session_with_file):
    sid, _ = session_with_file
    path = f"/api/sessions/{sid}/context/parse"
    # The first request has claimed the key and not finished: exactly the state a concurrent retry sees.
    fingerprint = idempotency.request_fingerprint("POST", path, "", {}, [])
    claim = idempotency.claim_key(api.user, "k-3", fingerprint)
    assert claim.record is not None
    response = api.post(path, key="k-3")
    assert response.status_code == 409
    idempotency.complete(claim.record, 202, b'{"ok":true}', {"Content-Type": "application/json"})
    replay = api.post(path, key="k-3")
    assert replay.status_code == 202 and replay.content == b'{"ok":true}'


def test_keys_are_per_user(api, session_with_file):
    sid, _ = session_with_file
    teammate, _ = make_member(team=api.user.teams.first())
    other = ContextApi(teammate)
    assert api.post(f"/api/sessions/{sid}/context/parse", key="shared").status_code == 202
    assert other.post(f"/api/sessions/{sid}/context/parse", key="shared").status_code == 202


def test_manifest_etag_and_if_match(api, session_with_file):
    sid, fid = session_with_file
    response = api.get(f"/api/sessions/{sid}/context")
    assert response["ETag"] == '"1"'
    stale = api.delete(f"/api/sessions/{sid}/context/files/{fid}", if_match=0)
    assert stale.status_code == 412
    assert stale.json()["current_revision"] == 1 and stale.json()["error"]
    assert api.manifest(sid)["files"], "a 412 must not delete anything"
    ok = api.delete(f"/api/sessions/{sid}/context/files/{fid}", if_match=1)
    assert ok.status_code == 200 and ok.json()["revision"] == 2
    bad = api.post(f"/api/sessions/{sid}/context/parse", if_match=None, HTTP_IF_MATCH="yesterday")
    assert bad.status_code == 400


@pytest.mark.parametrize("mutation", ["upload", "replace", "delete", "parse", "retry", "auto_parse"])
def test_every_context_mutation_with_a_stale_if_match_is_412_and_changes_nothing(api, session_with_file, mutation):
    from django.core.files.uploadedfile import SimpleUploadedFile

    sid, fid = session_with_file
    before = api.manifest(sid)
    base = f"/api/sessions/{sid}/context"
    send = {
        "upload": lambda: api.upload(sid, {"new.txt": b"new"}, if_match=0),
        "replace": lambda: api.put(
            f"{base}/files/{fid}", {"file": SimpleUploadedFile("x.txt", b"other")}, format="multipart", if_match=0
        ),
        "delete": lambda: api.delete(f"{base}/files/{fid}", if_match=0),
        "parse": lambda: api.post(f"{base}/parse", if_match=0),
        "retry": lambda: api.post(f"{base}/files/{fid}/retry", if_match=0),
        "auto_parse": lambda: api.patch(base, {"auto_parse": True}, format="json", if_match=0),
    }[mutation]
    response = send()
    assert response.status_code == 412, response.content
    assert response.json()["current_revision"] == before["revision"]
    after = api.manifest(sid)
    assert (after["revision"], after["auto_parse"], after["files"]) == (
        before["revision"],
        before["auto_parse"],
        before["files"],
    )


def test_context_options_are_patched_one_or_both_without_a_new_revision(api, session_with_file):
    sid, _fid = session_with_file
    base = f"/api/sessions/{sid}/context"
    before = api.manifest(sid)
    assert (before["auto_parse"], before["batch_ingest"]) == (False, False)  # batch ingest is opt-in

    opted_in = api.patch(base, {"batch_ingest": True}, format="json").json()
    assert (opted_in["auto_parse"], opted_in["batch_ingest"], opted_in["revision"]) == (False, True, before["revision"])
    both = api.patch(base, {"auto_parse": True, "batch_ingest": False}, format="json").json()
    assert (both["auto_parse"], both["batch_ingest"]) == (True, False)


def test_upload_limit_is_413(api, settings):
    settings.GROUNDWORK_MAX_UPLOAD_BYTES = 1000
    sid = api.create_session()
    response = api.upload(sid, {"big.txt": b"x" * 5000})
    assert response.status_code == 413
    assert "limit" in response.json()["error"]
    assert api.manifest(sid)["files"] == []


def test_an_oversized_body_gets_the_json_413_before_it_is_read(settings):
    """Under daphne the ASGI app answers from Content-Length: nothing waits for or reads the body."""
    from asgiref.sync import async_to_sync
    from asgiref.testing import ApplicationCommunicator

    from config.asgi import application

    settings.GROUNDWORK_MAX_UPLOAD_BYTES = 8 * 1024 * 1024
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/sessions/00000000-0000-0000-0000-000000000000/context/files",
        "raw_path": b"/api/sessions/00000000-0000-0000-0000-000000000000/context/files",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost"), (b"content-length", str(9 * 1024 * 1024).encode())],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }

    async def answer():
        communicator = ApplicationCommunicator(application, scope)  # no body is ever sent
        start = await communicator.receive_output(timeout=5)
        body = await communicator.receive_output(timeout=5)
        return start, body

    start, body = async_to_sync(answer)()
    assert start["status"] == 413 and (b"content-type", b"application/json") in start["headers"]
    assert json.loads(body["body"]) == {
        "error": "the upload is 9.0\xa0MB; the limit is 8.0\xa0MB",
        "limit_bytes": 8 * 1024 * 1024,
    }


def test_more_files_in_one_request_than_django_takes_is_a_json_400(api, settings):
    sid = api.create_session()
    response = api.upload(sid, {f"note-{n:03d}.txt": b"A note." for n in range(150)})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": f"too many files in one request: at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES}; "
        "send the rest in another",
        "limit": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
    }
    assert api.manifest(sid)["files"] == []


def test_uploaded_bytes_are_stored_before_the_transaction_and_unused_objects_removed(api, monkeypatch):
    """Copying a 50 MB upload to storage (S3, say) must not hold the set's row or SQLite's write lock."""
    from django.db import connection

    from context_app.models import ContextFile

    storage = ContextFile._meta.get_field("blob").storage
    real_save, saved = storage.save, []

    def save(name, content, *args, **kwargs):
        stored = real_save(name, content, *args, **kwargs)
        saved.append((stored, connection.in_atomic_block))
        return stored

    monkeypatch.setattr(storage, "save", save)
    sid = api.create_session()
    assert api.upload(sid, {"survey.txt": TEXT}).status_code == 201
    again = api.upload(sid, {"survey.txt": TEXT})
    assert again.json()["diff"][0]["change"] == "unchanged"
    refused = api.upload(sid, {"other.txt": b"Another text."}, if_match=0)
    assert refused.status_code == 412
    assert [in_transaction for _name, in_transaction in saved] == [False, False, False]
    kept = ContextFile.objects.get().blob.name
    assert [storage.exists(name) for name, _ in saved] == [True, False, False], "only the file's object stays"
    assert saved[0][0] == kept


def test_too_many_files_is_refused(api, settings):
    settings.GROUNDWORK_MAX_FILES_PER_SET = 2
    sid = api.create_session()
    response = api.upload(sid, {"a.txt": b"one", "b.txt": b"two", "c.txt": b"three"})
    assert response.status_code == 400 and "at most 2 files" in response.json()["error"]


def test_filenames_are_cleaned_and_unique(api):
    sid = api.create_session()
    body = api.upload(sid, {"../../etc/notes::v2.txt": TEXT}).json()
    assert body["files"][0]["filename"] == "notes_v2.txt"
    again = api.upload(sid, {"notes_v2.txt": TEXT + b"x"}).json()
    assert again["diff"][0]["change"] == "changed"
    assert len(api.manifest(sid)["files"]) == 1


def test_long_filenames_are_stored_and_shown_whole(api):
    """A name of 255 characters of up to 4 bytes each is stored under a shorter one (file systems take 255
    bytes a name) and shown as given."""
    sid = api.create_session()
    names = ["a" * 251 + ".txt", "報告" * 100 + ".md", "x" * 300 + ".json"]
    response = api.upload(sid, {name: TEXT for name in names})
    assert response.status_code == 201, response.content
    shown = sorted(f["filename"] for f in response.json()["files"])
    assert shown == sorted([names[0], names[1], "x" * 250 + ".json"])
    for file in ContextFile.objects.all():
        assert len(PurePosixPath(file.blob.name).name.encode()) <= 160
        assert file.blob.read() == TEXT


def test_preview_download_and_digest_endpoints(api, session_with_file):
    sid, fid = session_with_file
    meta = api.get(f"/api/sessions/{sid}/context/files/{fid}").json()
    assert meta["preview_url"].endswith("/preview") and meta["download_url"].endswith("/download")
    spans = api.get(meta["preview_url"]).json()["spans"]
    assert spans[0]["span_id"] == "S1" and "412 households" in spans[0]["text"]
    assert {"span_id", "text", "locator", "start", "end"} <= set(spans[0])
    download = api.get(meta["download_url"])
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == TEXT
    assert download["Content-Disposition"].startswith("attachment")
    missing = api.get(f"/api/sessions/{sid}/context/files/{fid}/digest")
    assert missing.status_code == 404 and "stale" in missing.json()["error"]
    assert api.get(f"/api/sessions/{sid}/context/digest").status_code == 404


def test_other_teams_get_404_on_every_endpoint(api, session_with_file):
    sid, fid = session_with_file
    stranger = ContextApi(make_member()[0])
    base = f"/api/sessions/{sid}"
    reads = [
        base,
        f"{base}/context",
        f"{base}/context/digest",
        f"{base}/context/files/{fid}",
        f"{base}/context/files/{fid}/preview",
        f"{base}/context/files/{fid}/download",
        f"{base}/context/files/{fid}/digest",
    ]
    for path in reads:
        assert stranger.get(path).status_code == 404, path
    assert stranger.upload(sid, {"x.txt": b"x"}).status_code == 404
    assert stranger.replace(sid, fid, "survey.txt", b"x").status_code == 404
    assert stranger.delete(f"{base}/context/files/{fid}").status_code == 404
    assert stranger.patch(f"{base}/context", {"auto_parse": True}, format="json").status_code == 404
    assert stranger.post(f"{base}/context/parse").status_code == 404
    assert stranger.post(f"{base}/context/files/{fid}/retry").status_code == 404
    assert sid not in str(stranger.get("/api/sessions").json())
    assert api.manifest(sid)["files"][0]["content_hash"], "the owner's data is untouched"


def test_unknown_ids_are_404_not_500(api):
    sid = api.create_session()
    assert api.get(f"/api/sessions/{uuid.uuid4()}").status_code == 404
    assert api.get("/api/sessions/not-a-uuid/context").status_code == 404
    assert api.get(f"/api/sessions/{sid}/context/files/not-a-uuid").status_code == 404
    assert api.delete(f"/api/sessions/{sid}/context/files/{uuid.uuid4()}").status_code == 404


def test_staff_see_every_session(api, session_with_file):
    sid, _ = session_with_file
    staff = get_user_model().objects.create_user("auditor", password="pw", is_staff=True)
    assert ContextApi(staff).get(f"/api/sessions/{sid}/context").status_code == 200


def test_anonymous_is_refused(api, session_with_file):
    sid, _ = session_with_file
    from rest_framework.test import APIClient

    assert APIClient().get(f"/api/sessions/{sid}/context").status_code in (401, 403)


def test_manifest_and_session_list_queries_do_not_grow_with_files(api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sid = api.create_session()

    def queries(path):
        with CaptureQueriesContext(connection) as captured:
            assert api.get(path).status_code == 200
        return len(captured)

    api.upload(sid, {"a.txt": b"One file about 3 pumps."})
    few = queries(f"/api/sessions/{sid}/context"), queries("/api/sessions"), queries(f"/api/sessions/{sid}")
    api.upload(sid, {f"f{i}.txt": f"File {i} about {i} pumps.".encode() for i in range(12)})
    api.create_session("Second")
    many = queries(f"/api/sessions/{sid}/context"), queries("/api/sessions"), queries(f"/api/sessions/{sid}")
    assert many == few
