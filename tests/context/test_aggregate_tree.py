"""The aggregate tree at scale: balanced content-defined buckets, Task B counted through the real pipeline."""

import math
import random
import re
from pathlib import Path

import pytest

from context_app import services
from context_app.models import ContextFile, ContextSet, DigestStatus
from context_app.pipeline import aggregate as aggregate_stage
from llm_platform.models import LLMCall
from research_app.services import create_session
from tests.factories import make_member

FANOUT = 8


def minimum_task_b(files: int, fanout: int = FANOUT) -> int:
    """⌈N/8⌉ + ⌈N/64⌉ + … + 1: every Task B holding exactly the fan-out."""
    total, level = 0, files
    while level > 1:
        level = math.ceil(level / fanout)
        total += level
    return total


def tree_of(names: list[str], fanout: int = FANOUT) -> list[list[list[str]]]:
    """The levels of the tree _buckets builds over these names (each node: the filenames it covers)."""
    entries = [{"manifest": [{"filename": name}]} for name in names]
    levels = []
    while len(entries) > fanout:
        buckets = aggregate_stage._buckets(entries, fanout)
        entries = [{"manifest": [item for entry in bucket for item in entry["manifest"]]} for bucket in buckets]
        levels.append([[item["filename"] for item in entry["manifest"]] for entry in entries])
    levels.append([[item["filename"] for entry in entries for item in entry["manifest"]]])
    return levels


def nodes(levels) -> set[tuple]:
    return {tuple(node) for level in levels for node in level}


def test_buckets_average_close_to_the_fan_out_and_stay_content_defined():
    random.seed(13)
    names = sorted(f"{random.getrandbits(40):010x}-notes.md" for _ in range(1000))
    levels = tree_of(names)
    first = levels[0]
    sizes = [len(node) for node in first]
    assert max(sizes) <= FANOUT + FANOUT // 2
    assert 7 <= len(names) / len(first) <= 10, "buckets average close to the fan-out"
    assert sum(len(level) for level in levels) <= 1.15 * minimum_task_b(len(names)) == 1.15 * 144
    assert len(levels) <= math.ceil(math.log(len(names), FANOUT))

    # One more file moves only the boundaries near it: most nodes of the tree are unchanged.
    added = sorted([*names, "7fff-added.md"])
    assert len(nodes(tree_of(added)) - nodes(levels)) <= 3 * len(levels)


def calls(task: str) -> int:
    """Answered calls (a retried attempt is a row of its own, not a call answered)."""
    return LLMCall.objects.filter(task=task, attempt=1).exclude(outcome__in=["throttled", "transient"]).count()


@pytest.mark.stack  # a thousand files through the whole pipeline (eager): with the slow tests, not test-fast
@pytest.mark.figure  # counts model calls, which the database does not change
# Four minutes alone on two cores (about forty queries a file, each file extracted in a child
# process), more beside the SQLite pass: past the suite's 300 s hang guard on a slow machine, and a
# test stopped mid-query leaves PostgreSQL's connection busy for the tests after it.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_a_thousand_files_cost_close_to_the_minimum_and_one_change_costs_its_path(eager, settings):
    settings.GROUNDWORK_CONTEXT_PUSH_SECONDS = 5  # nobody watches: fewer manifests of 1,000 files
    user, _team = make_member()
    context_set = create_session(user=user, title="A thousand files").context_set
    uploads = [
        services.Upload(f"site-{i:04d}.txt", f"Site {i} replaced {i % 40 + 3} pumps in {2010 + i % 15}.\n".encode())
        for i in range(1000)
    ]
    for start in range(0, len(uploads), 100):
        services.upload_files(context_set, uploads[start : start + 100])

    services.request_parse(context_set)  # eager: every Task A, then the tree, in this test
    context_set = ContextSet.objects.get(pk=context_set.pk)
    assert context_set.aggregate_digest_status == DigestStatus.READY
    assert not ContextFile.objects.exclude(digest_status=DigestStatus.READY).exists()
    assert calls("per_file_digest") == 1000
    task_b = calls("aggregate_digest")
    assert task_b <= 165, f"{task_b} Task B calls for 1,000 files (minimum {minimum_task_b(1000)})"
    files = re.findall(r"site-\d{4}\.txt", str(context_set.aggregate_digest.content["batch"]))
    assert len(set(files)) == 1000, "the root covers every file"

    target = ContextFile.objects.get(filename="site-0421.txt")
    services.replace_file(context_set, target.pk, services.Upload("site-0421.txt", b"Site 421 replaced 99 pumps."))
    services.request_parse(context_set)
    assert calls("per_file_digest") == 1000 + 1
    assert calls("aggregate_digest") - task_b <= math.ceil(math.log(1000, FANOUT)) + 1 == 5
    context_set.refresh_from_db()
    assert context_set.aggregate_digest_status == DigestStatus.READY
    assert "99 pumps" in str(context_set.aggregate_digest.content)


def test_the_procfile_starts_a_cpu_worker_and_a_model_call_worker_on_their_queues():
    procfile = (Path(__file__).parents[2] / "Procfile").read_text()
    workers = dict(line.split(":", 1) for line in procfile.splitlines() if line.strip())
    assert "-Q celery " in workers["worker"] and "--pool=threads" not in workers["worker"]
    assert "-Q interactive,llm " in workers["llm"] and "--pool=threads" in workers["llm"]


def test_model_calling_tasks_are_routed_off_the_cpu_queue():
    from config.celery import app

    def queue(name: str) -> str:
        return app.amqp.router.route({}, name)["queue"].name

    assert queue("context.extract_file") == queue("context.parse_context_set") == "celery"
    assert queue("context.digest_file") == queue("context.build_aggregate") == "llm"
    assert queue("research.explore_node") == queue("research.write_report") == "interactive"
    assert queue("conversation.resume_turn") == "interactive"
