"""Two processes of 25 writers each keep writing while the worker extracts a hostile PDF: no 5xx.

Before issue 17 the upload extracted the PDF inside its transaction and held SQLite's
write lock for over a minute; writers waiting longer than the 30 s busy timeout got
500 "database is locked". Now the upload only stores the bytes, and the worker writes
its result in short transactions. Real daphne (live_server_url), the real worker
(celery_worker_thread), writers in processes of their own.
"""

import json
import subprocess
import sys
import urllib.request
import uuid

import pytest
from rest_framework.authtoken.models import Token

from context_app.models import ContextFile, DigestStatus
from research_app.services import create_session
from tests.context.test_hostile_files import heavy_content_stream_pdf
from tests.factories import make_member, wait_until

# SQLite's one write lock at a time is what this load tests; PostgreSQL's row locks never make a writer wait on it.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.one_database]

PROCESSES = 2
WRITERS_PER_PROCESS = 25

# Each thread PATCHes its own user's preferences until the stop file exists (at least 3 times).
WRITER_PROCESS = r"""
import json, os, sys, threading, urllib.error, urllib.request, uuid

base, stop_file = sys.argv[1], sys.argv[2]
tokens = json.loads(sys.stdin.read())
statuses, lock = [], threading.Lock()


def write(token):
    count = 0
    while count < 3 or not os.path.exists(stop_file):
        request = urllib.request.Request(
            base + "/api/me/preferences",
            data=json.dumps({"ui_debug": count % 2 == 0}).encode(),
            method="PATCH",
            headers={
                "Authorization": "Token " + token,
                "Content-Type": "application/json",
                "Idempotency-Key": uuid.uuid4().hex,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        with lock:
            statuses.append(status)
        count += 1


threads = [threading.Thread(target=write, args=(token,)) for token in tokens]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(statuses))
"""


def upload_over_http(base: str, session_id, token: str, filename: str, data: bytes) -> tuple[int, dict]:
    boundary = uuid.uuid4().hex
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(
        f"{base}/api/sessions/{session_id}/context/files",
        data=body,
        method="POST",
        headers={
            "Authorization": f"Token {token}",
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, json.loads(response.read())


def test_fifty_writers_in_two_processes_get_no_5xx_during_a_heavy_extraction(
    live_server_url, celery_worker_thread, settings, tmp_path
):
    settings.GROUNDWORK_EXTRACT_SECONDS = 8  # the PDF needs ~12 s; the worker stops it at 8 (+ start-up room)
    uploader, team = make_member()
    session = create_session(user=uploader, title="Hostile PDF")
    tokens = [Token.objects.create(user=make_member()[0]).key for _ in range(PROCESSES * WRITERS_PER_PROCESS)]
    stop_file = tmp_path / "stop"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_PROCESS, live_server_url, str(stop_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    for index, writer in enumerate(writers):
        writer.stdin.write(json.dumps(tokens[index * WRITERS_PER_PROCESS : (index + 1) * WRITERS_PER_PROCESS]))
        writer.stdin.close()
    try:
        token = Token.objects.create(user=uploader).key
        status, body = upload_over_http(live_server_url, session.pk, token, "heavy.pdf", heavy_content_stream_pdf())
        heavy = wait_until(
            lambda: ContextFile.objects.filter(context_set__session=session)
            .exclude(digest_status=DigestStatus.PARSING)
            .first(),
            timeout=120,
            message="the heavy PDF to leave parsing",
        )
    finally:
        stop_file.touch()
        outputs = [writer.stdout.read() for writer in writers]
        for writer in writers:
            writer.wait(timeout=60)
    statuses = [status for output in outputs for status in json.loads(output)]
    assert len(statuses) >= PROCESSES * WRITERS_PER_PROCESS * 3
    assert not [status for status in statuses if status >= 500], "no write failed on the database lock"
    assert set(statuses) == {200}
    assert status == 201 and body["files"][0]["digest_status"] == "parsing", body
    assert heavy.digest_status == DigestStatus.ERROR and "GROUNDWORK_EXTRACT_SECONDS" in heavy.error["message"]
