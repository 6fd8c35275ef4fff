"""Users, teams, sessions and an API client that speaks SPEC §2.6 with its headers."""

import itertools
import time
import uuid

from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from llm_platform.models import LLMCall
from workspaces.models import Team

_counter = itertools.count(1)


def wait_until(predicate, timeout: float = 60.0, interval: float = 0.05, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


def extract_uploads() -> int:
    """What the worker does after an upload (extract_stage.extract_file), here and now, for every file
    awaiting it: for tests that run no worker (an upload answers before any extraction)."""
    from django.utils import timezone

    from context_app.models import ContextFile, DigestStatus
    from context_app.pipeline import extract as extract_stage

    pending = ContextFile.objects.filter(digest_status=DigestStatus.PARSING, extracted_text_hash="")
    rows = list(pending.values_list("id", "content_hash"))
    for file_id, content_hash in rows:
        extract_stage.extract_file(file_id, content_hash)
    # A worker running meanwhile (a session-wide test worker) may hold a file's job lease
    # first: extract_file then returns at once, and that worker writes and indexes it.
    ids = [file_id for file_id, _hash in rows]
    wait_until(lambda: not pending.filter(pk__in=ids).exists(), timeout=60, message="the worker's extractions")
    wait_until(_every_text_indexed, timeout=30, message="the library index of every extracted text")

    # ... and that worker's job to end: its tail (after_extraction) parses the set if a parse is wanted
    # by then, so a parse the test asks for next would be that worker's, not the test's.
    def a_job_still_holds_one() -> bool:
        return ContextFile.objects.filter(pk__in=ids, lease_expires_at__gt=timezone.now()).exists()

    wait_until(lambda: not a_job_still_holds_one(), timeout=60, message="the worker's extraction jobs to end")
    return len(rows)


def _every_text_indexed() -> bool:
    from context_app.library import records_from_spans
    from context_app.models import FileText, LibraryRecord

    for version in FileText.objects.current().filter(file__isnull=False).select_related("file"):
        expected = len(records_from_spans(version.file.format, version.spans))
        if LibraryRecord.objects.filter(file_text=version).count() != expected:
            return False
    return True


def make_member(team: Team | None = None, username: str | None = None):
    team = team or Team.objects.create(name=f"team-{next(_counter)}")
    user = get_user_model().objects.create_user(username or f"user-{next(_counter)}", password="pw")
    team.members.add(user)
    return user, team


class ContextApi:
    """Thin client over the HTTP endpoints, adding Idempotency-Key to every mutation."""

    def __init__(self, user):
        self.user = user
        self.token = Token.objects.create(user=user).key
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Token {self.token}")

    def create_session(self, title: str = "Pilot study", **extra) -> str:
        response = self.post("/api/sessions", {"title": title, **extra}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["session_id"]

    def post(self, path, data=None, key: str | None = None, if_match: int | None = None, **kwargs):
        return self.client.post(path, data, **self._headers(key, if_match), **kwargs)

    def put(self, path, data=None, key: str | None = None, if_match: int | None = None, **kwargs):
        return self.client.put(path, data, **self._headers(key, if_match), **kwargs)

    def patch(self, path, data=None, key: str | None = None, if_match: int | None = None, **kwargs):
        return self.client.patch(path, data, **self._headers(key, if_match), **kwargs)

    def delete(self, path, key: str | None = None, if_match: int | None = None):
        return self.client.delete(path, **self._headers(key, if_match))

    def get(self, path, **kwargs):
        return self.client.get(path, **kwargs)

    @staticmethod
    def _headers(key, if_match) -> dict:
        headers = {"HTTP_IDEMPOTENCY_KEY": key or uuid.uuid4().hex}
        if if_match is not None:
            headers["HTTP_IF_MATCH"] = f'"{if_match}"'
        return headers

    # --- context conveniences ------------------------------------------------

    def upload(self, sid: str, files: dict[str, bytes], **kwargs):
        from django.core.files.uploadedfile import SimpleUploadedFile

        uploads = [SimpleUploadedFile(name, content) for name, content in files.items()]
        return self.post(f"/api/sessions/{sid}/context/files", {"files": uploads}, format="multipart", **kwargs)

    def replace(self, sid: str, fid: str, name: str, content: bytes, **kwargs):
        from django.core.files.uploadedfile import SimpleUploadedFile

        return self.put(
            f"/api/sessions/{sid}/context/files/{fid}",
            {"file": SimpleUploadedFile(name, content)},
            format="multipart",
            **kwargs,
        )

    def upload_and_extract(self, sid: str, files: dict[str, bytes], **kwargs) -> dict:
        """Upload, then extract as the worker would (tests without a worker); the manifest after."""
        response = self.upload(sid, files, **kwargs)
        assert response.status_code == 201, response.content
        extract_uploads()
        return self.manifest(sid)

    def extracted(self, sid: str, timeout: float = 60) -> dict:
        """Wait until the worker has extracted every file (none `parsing` without a text); the manifest then."""

        def done():
            manifest = self.manifest(sid)
            waiting = [f for f in manifest["files"] if f["digest_status"] == "parsing" and not f["extracted_text_hash"]]
            return None if waiting else manifest

        return wait_until(done, timeout=timeout, message=f"the files of {sid} to be extracted")

    def manifest(self, sid: str) -> dict:
        response = self.get(f"/api/sessions/{sid}/context")
        assert response.status_code == 200, response.content
        return response.json()

    def parse(self, sid: str):
        response = self.post(f"/api/sessions/{sid}/context/parse")
        assert response.status_code == 202, response.content
        return response

    def settle(self, sid: str, timeout: float = 60) -> dict:
        """Wait until no file is stale or parsing and the aggregate matches the revision."""

        def settled():
            manifest = self.manifest(sid)
            busy = any(f["digest_status"] in ("stale", "parsing") for f in manifest["files"])
            if busy or manifest["aggregate_digest_status"] in ("stale", "parsing"):
                return None
            return manifest

        return wait_until(settled, timeout=timeout, message=f"context of {sid} to settle")

    def file_id(self, sid: str, filename: str) -> str:
        return next(f["file_id"] for f in self.manifest(sid)["files"] if f["filename"] == filename)


def model_calls(sid: str, task: str, attempt: int | None = 1) -> int:
    calls = LLMCall.objects.filter(session_id=sid, task=task)
    if attempt is not None:
        calls = calls.filter(attempt=attempt)
    return calls.count()
