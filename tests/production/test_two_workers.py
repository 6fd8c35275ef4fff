"""Two separate Celery worker processes on one broker share the work of a parse and of a run.

`celery -A config worker -n w1@groundwork-test` and `-n w2@…` (threads pool, 2 each)
consume the suite's Redis, open the test database (SQLite file or PostgreSQL) and the
test's S3 bucket, and call the model through the real anthropic SDK, each against its
own fake Messages API on loopback, so every call is counted at the worker that made it.
The test process only takes requests, as daphne would.
"""

import json
import time

import pytest

from config.celery import app
from llm_platform.gateway import reset_providers
from llm_platform.models import LLMCall
from research_app.models import ResearchNode
from tests import session_worker
from tests.factories import ContextApi, make_member, wait_until
from tests.fake_anthropic import API_KEY, FakeAnthropic
from tests.production import databases
from tests.production.celery_workers import Worker, wait_ready
from tests.production.s3_server import use_bucket
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.workers]

MODEL = "claude-test-model"
HOSTS = ("w1@groundwork-test", "w2@groundwork-test")


@pytest.fixture(scope="module")
def stack(django_db_setup, redis_url, s3_server, tmp_path_factory):
    """Two fake model servers, a bucket, and one worker process on each fake."""
    from django.db import connection

    if app.control.ping(timeout=0.5):
        pytest.fail("a Celery worker already consumes the suite's broker; tests marked `workers` run first")
    fakes = [FakeAnthropic(), FakeAnthropic()]
    bucket = s3_server.new_bucket()
    logs = tmp_path_factory.mktemp("workers")
    common = {
        "DATABASE_URL": databases.database_url(connection.settings_dict),
        "REDIS_URL": redis_url,
        "GROUNDWORK_LLM": "anthropic",
        "ANTHROPIC_API_KEY": API_KEY,
        "GROUNDWORK_ANTHROPIC_MODEL": MODEL,
        "GROUNDWORK_LLM_BACKOFF_SECONDS": "0.01",
        # No background lease sweep: these tests kill no worker, and a sweep's reads would
        # meet the teardown's TRUNCATE as the test's own work would (below).
        "GROUNDWORK_LEASE_SWEEP_SECONDS": "0",
        **s3_server.env(bucket),
    }
    workers = [
        Worker(host, {**common, "ANTHROPIC_BASE_URL": fake.url}, logs / f"{host.split('@')[0]}.log")
        for host, fake in zip(HOSTS, fakes, strict=True)
    ]
    try:
        wait_ready(app, workers)
        yield {"workers": workers, "fakes": dict(zip(HOSTS, fakes, strict=True)), "bucket": bucket}
    finally:
        for worker in workers:
            worker.stop()
        for fake in fakes:
            fake.stop()


@pytest.fixture(autouse=True)
def workers_idle_after_test(request, stack):
    """A test ends only once both workers have nothing left to do: a manifest push scheduled half
    a second after the parse's last change (an ETA task), or a task still finishing, would otherwise
    read the tables while the teardown TRUNCATEs them (a deadlock on PostgreSQL)."""
    request.getfixturevalue("_django_db_helper")  # set up first, so the database is torn down after the wait
    yield
    wait_until_idle(HOSTS)


def wait_until_idle(hosts, timeout: float = 60.0) -> None:
    inspect = app.control.inspect(destination=list(hosts), timeout=1.0)
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        busy = [
            task["name"]
            for listing in (inspect.active(), inspect.reserved(), inspect.scheduled())
            for tasks in (listing or {}).values()
            for task in tasks
            for task in [task.get("request", task)]  # a scheduled task's request is nested
        ]
        if not busy and not session_worker.broker_backlog():
            # A message between the broker and a worker is in neither: idle twice running.
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= 0.2:
                return
        else:
            quiet_since = None
        time.sleep(0.1)
    pytest.fail(f"the workers were still busy after {timeout}s: {busy}")


@pytest.fixture
def api(stack, s3_server, settings):
    # The test process is the web side: the same model and bucket as the workers, so
    # cache keys agree; it makes no model call itself.
    settings.GROUNDWORK_LLM = "anthropic"
    settings.ANTHROPIC_API_KEY = API_KEY
    settings.ANTHROPIC_BASE_URL = "http://127.0.0.1:9"  # never called from here
    settings.GROUNDWORK_ANTHROPIC_MODEL = MODEL
    use_bucket(settings, s3_server, stack["bucket"])
    reset_providers()
    for fake in stack["fakes"].values():
        fake.requests.clear()
        fake.script(*[("delay", 0.03)] * 400)  # a model takes a moment: work overlaps
    yield ContextApi(make_member()[0])
    reset_providers()


def tasks_since(stack, offsets: dict) -> list:
    return [task for worker in stack["workers"] for task in worker.tasks(offsets[worker.hostname])]


def log_offsets(stack) -> dict:
    return {worker.hostname: worker.log_size() for worker in stack["workers"]}


def calls_per_worker(stack) -> dict[str, list[dict]]:
    return {host: fake.message_requests() for host, fake in stack["fakes"].items()}


def assert_each_call_made_once(stack) -> dict[str, int]:
    requests = calls_per_worker(stack)
    bodies = [json.dumps(r["body"], sort_keys=True) for calls in requests.values() for r in calls]
    assert len(bodies) == len(set(bodies)), "a model call was made twice"
    assert len(bodies) == LLMCall.objects.count(), "every call recorded once, every recorded call made once"
    assert LLMCall.objects.exclude(outcome=LLMCall.Outcome.OK).count() == 0
    return {host: len(calls) for host, calls in requests.items()}


def test_a_30_file_parse_is_shared_by_both_workers(api, stack, capsys):
    files = {
        f"meter-{n:02d}.txt": (
            f"Meter {n} report.\n\nDistrict {n} lost {n * 3} percent of its water in {2000 + n}.\n\n"
            f"The pump at station {n} ran {n * 7} hours in March.\n"
        ).encode()
        for n in range(1, 31)
    }
    offsets = log_offsets(stack)
    sid = api.create_session()
    assert api.upload(sid, files).status_code == 201
    wait_until(
        lambda: all(f["digest_status"] == "stale" for f in api.manifest(sid)["files"]),
        timeout=120,
        message="the workers to extract 30 files from the bucket",
    )
    api.parse(sid)
    manifest = api.settle(sid, timeout=180)
    assert [f["digest_status"] for f in manifest["files"]] == ["ready"] * 30
    assert manifest["aggregate_digest_status"] == "ready"

    # A file reads ready when its task commits; the task logs "succeeded" a moment later.
    def all_digested():
        ran = tasks_since(stack, offsets)
        return ran if sum(task.name == "context.digest_file" for task in ran) >= 30 else None

    ran = wait_until(all_digested, timeout=30, message="30 digest_file successes in the worker logs")
    by_name: dict[str, dict[str, int]] = {}
    for task in ran:
        by_name.setdefault(task.name, {}).setdefault(task.hostname, 0)
        by_name[task.name][task.hostname] += 1
    assert sum(by_name["context.extract_file"].values()) == 30
    assert sum(by_name["context.digest_file"].values()) == 30
    assert set(by_name["context.digest_file"]) == set(HOSTS), by_name
    assert set(by_name["context.extract_file"]) == set(HOSTS), by_name

    calls = assert_each_call_made_once(stack)
    assert LLMCall.objects.filter(task="per_file_digest").count() == 30
    assert LLMCall.objects.filter(task="per_file_digest").values("subject").distinct().count() == 30
    assert all(count > 0 for count in calls.values()), calls
    with capsys.disabled():
        print(f"\n30-file parse: tasks per worker {by_name}; model calls per worker {calls}")


def test_a_research_run_is_shared_by_both_workers(api, stack, capsys):
    sid = api.create_session(question=QUESTION)
    assert api.upload(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()}).status_code == 201
    offsets = log_offsets(stack)
    response = api.post(f"/api/sessions/{sid}/runs", {"max_depth": 1, "max_children": 3}, format="json")
    assert response.status_code == 201, response.content
    rid = response.json()["run_id"]

    def finished():
        snapshot = api.get(f"/api/runs/{rid}").json()
        return snapshot if snapshot["status"] in ("completed", "failed", "cancelled") else None

    run = wait_until(finished, timeout=180, message=f"run {rid} to finish")
    assert run["status"] == "completed", run
    nodes = ResearchNode.objects.filter(run_id=rid).count()
    assert nodes >= 3, "the root and its children"

    # The run reads completed as soon as write_report commits; its task logs "succeeded" a moment later.
    def reported():
        ran = tasks_since(stack, offsets)
        return ran if any(task.name == "research.write_report" for task in ran) else None

    ran = wait_until(reported, timeout=30, message="write_report's success in a worker log")
    research = [task for task in ran if task.name.startswith("research.")]
    hosts = {task.hostname for task in research}
    assert hosts == set(HOSTS), [(task.name, task.hostname) for task in research]
    explored = [task for task in research if task.name == "research.explore_node"]
    assert len(explored) == nodes, "each node explored once"
    assert len([task for task in research if task.name == "research.write_report"]) == 1

    calls = assert_each_call_made_once(stack)
    assert LLMCall.objects.filter(task="report").count() == 1
    with capsys.disabled():
        per_host = {host: sorted(t.name for t in research if t.hostname == host) for host in HOSTS}
        print(f"\nresearch run ({nodes} nodes): tasks per worker {per_host}; model calls per worker {calls}")
