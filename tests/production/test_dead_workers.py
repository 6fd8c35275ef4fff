"""kill -9 of a worker in the middle of Task A and of Task B: every file and the aggregate end ready.

A real worker process (`celery -A config worker`, tests/production/celery_workers.py) on the
suite's Redis and test database calls a fake Messages API on loopback that keeps the
calls of one task in flight. The test kills the process with such a call open (found
from its socket to the fake): a pool child of a prefork worker (its main process
re-queues the message), or the main process of a thread-pool worker, which is then
started again under the same node name, as `make run`'s supervisor loop does. No Parse now, no other step follows.

Leases are made far longer than the test waits (GROUNDWORK_JOB_LEASE_SECONDS), and the
broker's visibility timeout is an hour: only the recovery under test (a dead pool
child's lease is free at once; a restarting worker takes over its predecessor's
leases) can finish the parse in time. Calls are counted per file at the fake: at most
one repeat of each, for the call the kill interrupted.
"""

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from config.celery import app
from llm_platform.gateway import reset_providers
from llm_platform.task_envelope import task_name
from tests.factories import ContextApi, make_member, wait_until
from tests.fake_anthropic import API_KEY, FakeAnthropic, prompt_text
from tests.production import databases
from tests.production.celery_workers import Worker, wait_ready

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.workers]

MODEL = "claude-test-model"
HOST = "dw@groundwork-test"
FILES = {
    f"district-{name}.txt": (
        f"District {name} report.\n\nDistrict {name} lost {n * 3} percent of its water in {2000 + n}.\n\n"
        f"The pump at station {name} ran {n * 7} hours in March.\n"
    ).encode()
    for n, name in enumerate(["north", "south", "east", "west", "upper", "lower"], start=1)
}
TASK_A, TASK_B = "PER_FILE_DIGEST", "AGGREGATE_DIGEST"
SLOW_CALL_SECONDS = 5.0  # the killed call is still in flight when the kill lands


@pytest.fixture
def fake():
    server = FakeAnthropic()
    yield server
    server.stop()


@pytest.fixture
def api(fake, settings):
    # The test process is the web side (it extracts these small files itself); it calls no model.
    settings.GROUNDWORK_LLM = "anthropic"
    settings.ANTHROPIC_API_KEY = API_KEY
    settings.ANTHROPIC_BASE_URL = "http://127.0.0.1:9"
    settings.GROUNDWORK_ANTHROPIC_MODEL = MODEL
    reset_providers()
    yield ContextApi(make_member()[0])
    reset_providers()


@pytest.fixture
def start_worker(fake, redis_url, tmp_path):
    """Start the worker (again) under one node name; every process started is stopped at the end."""
    from django.db import connection

    if app.control.ping(timeout=0.5):
        pytest.fail("a Celery worker already consumes the suite's broker; tests marked `workers` run first")
    env = {
        "DATABASE_URL": databases.database_url(connection.settings_dict),
        "REDIS_URL": redis_url,
        "GROUNDWORK_LLM": "anthropic",
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": fake.url,
        "GROUNDWORK_ANTHROPIC_MODEL": MODEL,
        "GROUNDWORK_LLM_BACKOFF_SECONDS": "0.01",
        "GROUNDWORK_JOB_LEASE_SECONDS": "900",
    }
    started: list[Worker] = []

    def start(pool: str) -> Worker:
        worker = Worker(HOST, env, tmp_path / f"worker-{len(started)}.log", pool=pool)
        started.append(worker)
        wait_ready(app, [worker])
        return worker

    yield start
    for worker in started:
        worker.stop()


def task_of(request: dict) -> str:
    return task_name(prompt_text(request["body"]))


def calls_per_file(fake: FakeAnthropic) -> Counter:
    calls = Counter()
    for request in fake.message_requests():
        if task_of(request) == TASK_A:
            body = json.dumps(request["body"])
            calls.update(name for name in FILES if name in body)
    return calls


def processes_calling(fake: FakeAnthropic, pids: list[int]) -> list[int]:
    """Those of `pids` with a connection open to the fake: a call in flight (it closes each after answering)."""
    port = int(fake.url.rsplit(":", 1)[1])
    sockets = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].split(":")[1], 16) == port and fields[3] == "01":  # remote port, ESTABLISHED
            sockets.add(f"socket:[{fields[9]}]")
    calling = []
    for pid in pids:
        try:
            links = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:  # exited meanwhile
            continue
        if links & sockets:
            calling.append(pid)
    return calling


def children_of(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def a_call_in_flight(fake: FakeAnthropic, task: str, worker: Worker, victim: str) -> int | None:
    """The pid to kill: the pool child, or the main process, with a `task` call open at the fake."""
    if not any(task_of(request) == task for request in fake.message_requests()):
        return None
    if victim == "pool child":
        calling = processes_calling(fake, children_of(worker.process.pid))
    else:
        calling = processes_calling(fake, [worker.process.pid])
    return calling[0] if calling else None


@pytest.mark.parametrize(
    ("pool", "victim", "task"),
    [
        ("prefork", "pool child", TASK_A),
        ("prefork", "pool child", TASK_B),
        ("threads", "worker main", TASK_A),
        ("threads", "worker main", TASK_B),
    ],
    ids=["child-task-a", "child-task-b", "main-task-a", "main-task-b"],
)
def test_a_parse_ends_ready_after_kill_9(api, fake, start_worker, pool, victim, task, capsys):
    fake.slow_down(task, SLOW_CALL_SECONDS)
    worker = start_worker(pool)
    sid = api.create_session()
    assert api.upload(sid, FILES).status_code == 201
    api.parse(sid)
    pid = wait_until(
        lambda: a_call_in_flight(fake, task, worker, victim), timeout=90, message=f"a {task} call in flight"
    )
    if victim == "pool child":
        os.kill(pid, signal.SIGKILL)  # its worker re-queues the message and starts another child
    else:
        worker.kill()
    killed_at = time.monotonic()
    fake.clear_slow_tasks()
    if victim == "worker main":
        start_worker(pool)  # the restart `make run`'s supervisor loop makes

    manifest = api.settle(sid, timeout=120)
    settled_after = time.monotonic() - killed_at  # reported, not asserted
    assert [f["digest_status"] for f in manifest["files"]] == ["ready"] * len(FILES), manifest["files"]
    assert manifest["aggregate_digest_status"] == "ready"

    per_file = calls_per_file(fake)
    aggregate_calls = sum(task_of(request) == TASK_B for request in fake.message_requests())
    assert set(per_file) == set(FILES)
    assert max(per_file.values()) <= 2, f"at most one repeated call per file: {per_file}"
    assert aggregate_calls <= 2, "at most one repeated Task B call"
    repeated = sum(per_file.values()) - len(FILES) if task == TASK_A else aggregate_calls - 1
    assert repeated >= 1, "the kill interrupted a call, which was made again"
    with capsys.disabled():
        print(
            f"\nkill -9 of the {victim} during {task}: all ready {settled_after:.1f} s after the kill; "
            f"calls per file {sorted(per_file.values())}, Task B calls {aggregate_calls}"
        )
