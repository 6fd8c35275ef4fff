"""Research runs on the whole stack (SPEC §4): websocket, anthropic SDK, invalid model output, resume, idempotency.

A real Celery worker, Redis and the Channels layer; the offline provider, or the
real anthropic SDK against the fake Messages API on loopback.
"""

import threading
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator

from config.asgi import application
from llm_platform.models import LLMCall
from llm_platform.task_envelope import read_task, task_name
from research_app import tasks
from research_app.models import ResearchNode, ResearchRun, RunEvent
from research_app.runs import engine, model_tasks, recovery, report
from research_app.runs.offline.sufficiency import node_sufficiency
from tests.factories import ContextApi, make_member, wait_until
from tests.fake_anthropic import text_of
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES, events_of, finished, session_with_files, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

HEADERS = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
FILES = {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()}
RESEARCH_TASKS = (
    model_tasks.NODE_QUERIES,
    model_tasks.NODE_FINDINGS,
    model_tasks.NODE_SUFFICIENCY,
    model_tasks.NODE_DECOMPOSE,
    model_tasks.CONTEXT_SPLIT,
    model_tasks.REPORT,
)
REPAIR_MARKER = "YOUR PREVIOUS OUTPUT WAS INVALID"


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


class HeldSteps(list):
    """The (step, id) pairs held back, in order; `release()` lets later ones go out again."""

    holding = True

    def release(self) -> None:
        self.holding = False


def hold_steps(monkeypatch, *steps: str, workers_only: bool = False) -> HeldSteps:
    """Engine steps named here are recorded instead of sent to a worker: the worker that would run them is dead.

    Every step is queued through its Celery task's `apply_async` (research_app.tasks, by name); the
    named tasks' `apply_async` records instead. With workers_only, steps sent by this test's own
    thread (a resume request) still go out.
    """
    held = HeldSteps()
    test_thread = threading.get_ident()

    def holding(step: str, send):
        def apply_async(args=None, kwargs=None, **options):
            if held.holding and not (workers_only and threading.get_ident() == test_thread):
                held.append((step, str(args[0])))
            else:
                return send(args, kwargs, **options)

        return apply_async

    for step in steps:
        task = getattr(tasks, step)
        monkeypatch.setattr(task, "apply_async", holding(step, task.apply_async))
    return held


def run_calls(rid: str):
    return LLMCall.objects.filter(subject__startswith=f"run:{rid}:")


def resume(api, rid: str):
    return api.post(f"/api/runs/{rid}/resume")


# --- websocket /ws/runs/{rid}/ --------------------------------------------------------


def connect_run(rid: str, token: str | None) -> WebsocketCommunicator:
    query = f"?token={token}" if token is not None else ""
    return WebsocketCommunicator(application, f"/ws/runs/{rid}/{query}", headers=HEADERS)


def test_a_member_receives_every_event_of_a_run_live_over_the_websocket(api, monkeypatch):
    sid = session_with_files(api, FILES)
    # The run is queued (and its run_queued event stored) by the request itself; its bind
    # step waits until the watcher is connected, so every later event can only arrive live.
    held = hold_steps(monkeypatch, "bind_run")
    rid = start(api, sid, max_depth=1)
    assert held == [("bind_run", rid)]
    held.release()

    async def watch():
        communicator = connect_run(rid, api.token)
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        await sync_to_async(tasks.bind_run.delay)(rid)
        received = []
        # run_completed, then the run's coverage record: the thought stream's last line
        while not received or received[-1]["event"]["type"] != "coverage_recorded":
            received.append(await communicator.receive_json_from(timeout=30))
        assert await communicator.receive_nothing(timeout=0.5), "nothing is pushed after the coverage record"
        await communicator.disconnect()
        return received

    received = async_to_sync(watch)()
    assert {m["type"] for m in received} == {"run.event"}
    live = [m["event"] for m in received]
    assert all(set(e) == {"seq", "type", "payload", "created_at"} for e in live)

    stored = events_of(api, rid)
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1)), "stored seqs have no gaps"
    assert stored[0]["type"] == "run_queued"
    assert [e["type"] for e in stored[-2:]] == ["run_completed", "coverage_recorded"]
    # Every event after run_queued arrived live, none lost or doubled, each exactly as stored. The order of
    # arrival is not asserted: each worker pushes after its own commit, so the push of seq N can arrive after
    # seq N+1 from another worker (the page fills such a gap from GET /events?after=N).
    assert sorted(e["seq"] for e in live) == list(range(2, len(stored) + 1)), "pushed live, none lost"
    assert sorted(live, key=lambda e: e["seq"]) == stored[1:], "the pushed events are the stored ones"
    types = [e["type"] for e in live]
    for expected in ("context_binding_parsing_started", "context_for_node_ready", "node_decomposed"):
        assert expected in types
    assert ResearchRun.objects.get(pk=rid).last_seq == len(stored)
    # Each node's search is told with what it found; each node the limits stopped says which limit.
    nodes = ResearchNode.objects.filter(run_id=rid)
    searched = {e["payload"]["node"]: e["payload"] for e in live if e["type"] == "node_search_completed"}
    assert types.count("node_search_completed") == len(nodes)
    assert searched == {
        n.path: {
            "node": n.path,
            "results": len(n.results),
            "documents": len({r["document"] for r in n.results}),
            "errors": [],
        }
        for n in nodes
    }
    assert searched["1"]["results"] > 0, "the root's question is in the files"
    limited = {e["payload"]["node"]: e["payload"]["reason"] for e in live if e["type"] == "node_limited"}
    # The question's staffing part is in no file: a sub-question at depth 1 cannot be answered nor split.
    assert limited and limited == {n.path: "max_depth 1 reached" for n in nodes if n.status == "limited"}


def test_other_teams_and_anonymous_clients_cannot_watch_a_run(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=0)
    stranger = ContextApi(make_member()[0])

    async def attempt(run_id: str, token: str | None):
        communicator = connect_run(run_id, token)
        connected, code = await communicator.connect(timeout=10)
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(attempt)(rid, stranger.token) == (False, 4404)
    assert async_to_sync(attempt)(rid, None) == (False, 4404)
    assert async_to_sync(attempt)(rid, "not-a-token") == (False, 4404)
    assert async_to_sync(attempt)(str(uuid.uuid4()), api.token) == (False, 4404), "an unknown run"
    assert async_to_sync(attempt)("not-a-uuid", api.token) == (False, 4404)
    assert async_to_sync(attempt)(rid, api.token)[0] is True, "the owner's team may watch"
    finished(api, rid)


def test_events_after_n_and_limit_page_through_the_stored_events(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=1)
    assert finished(api, rid)["status"] == "completed"
    stored = events_of(api, rid)
    assert len(stored) > 6

    later = api.get(f"/api/runs/{rid}/events?after=3").json()
    assert later["events"] == stored[3:] and later["last_seq"] == stored[-1]["seq"]
    assert later["status"] == "completed" and later["run_id"] == rid

    pages, after = [], 0
    while True:
        page = api.get(f"/api/runs/{rid}/events?after={after}&limit=3").json()
        if not page["events"]:
            assert page["last_seq"] == after
            break
        assert len(page["events"]) <= 3 and page["events"][0]["seq"] == after + 1
        pages.extend(page["events"])
        after = page["last_seq"]
    assert pages == stored

    beyond = api.get(f"/api/runs/{rid}/events?after={len(stored) + 10}").json()
    assert beyond["events"] == [] and beyond["last_seq"] == len(stored) + 10
    assert len(api.get(f"/api/runs/{rid}/events?limit=500").json()["events"]) == len(stored)
    for query in ("limit=0", "limit=501", "limit=-1", "limit=ten", "after=-1", "after=x", "after=1.5"):
        response = api.get(f"/api/runs/{rid}/events?{query}")
        assert response.status_code == 400, (query, response.content)
        assert "after" in response.json()["error"]


# --- the anthropic path ----------------------------------------------------------------


def test_a_whole_run_goes_through_the_anthropic_sdk_to_the_fake_api(api, fake_anthropic):
    sid = session_with_files(api, FILES)
    rid = start(api, sid, max_depth=1)
    run = finished(api, rid)
    assert run["status"] == "completed", run

    assert set(LLMCall.objects.values_list("provider", flat=True)) == {"anthropic"}, "nothing went offline"
    assert set(LLMCall.objects.values_list("model", flat=True)) == {"claude-test-model"}
    assert set(LLMCall.objects.values_list("outcome", flat=True)) == {LLMCall.Outcome.OK}
    # Every recorded call was one HTTP request the fake answered, and the other way round.
    requests = fake_anthropic.message_requests()
    assert len(requests) == LLMCall.objects.count()
    asked = [task_name(text_of(r["body"]["messages"][0]["content"])) for r in requests]
    for task in RESEARCH_TASKS:
        recorded = run_calls(rid).filter(task=task.recorded_as).count()
        assert recorded > 0, f"no {task.name} call in the run"
        assert asked.count(task.name) == recorded, task.name
    assert asked.count("NODE_SUFFICIENCY") == ResearchNode.objects.filter(run_id=rid).count()
    assert all(r["body"]["model"] == "claude-test-model" for r in requests)

    assert len(run["nodes"]) >= 3 and run["nodes"][0]["status"] == "decomposed"
    # A sub-question's findings are asked knowing what its siblings ask (theirs to answer), the root's alone.
    findings_inputs = [
        read_task(text_of(r["body"]["messages"][0]["content"]))[1]
        for r, task in zip(requests, asked, strict=True)
        if task == "NODE_FINDINGS"
    ]
    other_parts = {inputs["question"]: inputs.get("other_parts") for inputs in findings_inputs}
    children = list(
        ResearchNode.objects.filter(run_id=rid, depth=1).order_by("path").values_list("question", flat=True)
    )
    assert other_parts == {
        QUESTION: None,
        **{question: [other for other in children if other != question] for question in children},
    }
    assert run["report"]["provider"] == "anthropic" and run["report"]["model"] == "claude-test-model"
    assert run["report"]["sections"] and run["report"]["references"]
    assert run["tokens_used"] == sum(c.input_tokens + c.output_tokens for c in run_calls(rid))


# --- invalid model output -----------------------------------------------------------------


def test_a_node_whose_sufficiency_stays_invalid_fails_alone(api, scripted_llm):
    lock = threading.Lock()
    broken: list[str] = []  # the first child question judged: its verdicts are always invalid

    def sufficiency(prompt: str) -> dict:
        _, inputs = read_task(prompt)
        with lock:
            if inputs["question"] != QUESTION and not broken:
                broken.append(inputs["question"])
        if broken and inputs["question"] == broken[0]:
            return {"is_sufficient": "perhaps", "gaps": "all of them"}
        return node_sufficiency(prompt)

    scripted_llm.handlers["NODE_SUFFICIENCY"] = sufficiency
    sid = session_with_files(api, FILES)
    rid = start(api, sid, max_depth=1)
    run = finished(api, rid)
    assert run["status"] == "completed", run
    assert run["report"] and run["report"]["sections"]

    nodes = {n.path: n for n in ResearchNode.objects.filter(run_id=rid)}
    [failed] = [n for n in nodes.values() if n.question == broken[0]]
    assert failed.status == ResearchNode.Status.FAILED
    assert failed.error.startswith("node_sufficiency: the model's answer was invalid after a repair")
    assert "is_sufficient" in failed.error
    assert failed.finished_at is not None
    others = [n for n in nodes.values() if n.pk != failed.pk]
    assert len(others) >= 2, "the root and at least one sibling"
    assert nodes["1"].status == ResearchNode.Status.DECOMPOSED
    assert all(n.status != ResearchNode.Status.FAILED and n.sufficiency for n in others)

    events = events_of(api, rid)
    node_failed = [e["payload"] for e in events if e["type"] == "node_failed"]
    assert [{k: v for k, v in e.items() if k != "usage"} for e in node_failed] == [
        {"node": failed.path, "error": failed.error}
    ]
    assert set(node_failed[0]["usage"]) == {"calls", "tokens"}  # the run's so far, for the progress line
    completed_nodes = {e["payload"]["node"] for e in events if e["type"] == "node_completed"}
    assert completed_nodes == {n.path for n in others}
    assert [e["type"] for e in events[-2:]] == ["run_completed", "coverage_recorded"]

    verdicts = LLMCall.objects.filter(subject=f"run:{rid}:node:{failed.path}", task="node_sufficiency")
    assert list(verdicts.order_by("attempt").values_list("attempt", "outcome")) == [
        (1, LLMCall.Outcome.INVALID),
        (2, LLMCall.Outcome.INVALID),
    ]
    assert all("is_sufficient" in c.error and "reasoning" in c.error for c in verdicts)
    # Nothing else of the run was invalid, and the report was written once, on the first try.
    assert not run_calls(rid).exclude(pk__in=verdicts).exclude(outcome=LLMCall.Outcome.OK).exists()
    assert list(run_calls(rid).filter(task="report").values_list("attempt", "outcome")) == [(1, "ok")]
    assert not run_calls(rid).filter(subject=f"run:{rid}:node:{failed.path}", task="node_decompose").exists()


def test_an_invalid_answer_repaired_on_the_second_attempt_is_used(api, scripted_llm):
    prompts: list[str] = []

    def sufficiency(prompt: str) -> dict:
        prompts.append(prompt)
        if REPAIR_MARKER not in prompt:
            return {"is_sufficient": True}  # no reasoning, no gaps
        return node_sufficiency(prompt)

    scripted_llm.handlers["NODE_SUFFICIENCY"] = sufficiency
    sid = session_with_files(api, FILES)
    rid = start(api, sid, max_depth=0)
    run = finished(api, rid)
    assert run["status"] == "completed", run

    root = ResearchNode.objects.get(run_id=rid, path="1")
    assert root.status in (ResearchNode.Status.SUFFICIENT, ResearchNode.Status.LIMITED), root.error
    assert root.error == "" and set(root.sufficiency) == {"is_sufficient", "reasoning", "gaps"}
    assert root.sufficiency["reasoning"]
    calls = run_calls(rid).filter(task="node_sufficiency").order_by("attempt")
    assert list(calls.values_list("attempt", "outcome")) == [(1, LLMCall.Outcome.INVALID), (2, LLMCall.Outcome.OK)]
    assert "'reasoning' is a required property" in calls[0].error
    assert len(prompts) == 2 and REPAIR_MARKER in prompts[1]
    assert "'reasoning' is a required property" in prompts[1], "the repair tells the model what was wrong"
    assert "node_failed" not in [e["type"] for e in events_of(api, rid)]
    sufficiency_event = next(e for e in events_of(api, rid) if e["type"] == "node_sufficiency")["payload"]
    assert sufficiency_event == {"node": "1", **root.sufficiency}


# --- resume after a dead worker --------------------------------------------------------------


def test_resume_finishes_a_run_whose_worker_died_mid_node(api, monkeypatch):
    sid = session_with_files(api, FILES)
    held = hold_steps(monkeypatch, "explore_node")
    rid = start(api, sid, max_depth=1)
    root = wait_until(lambda: ResearchNode.objects.filter(run_id=rid, path="1").first(), message="the root node")
    wait_until(lambda: held == [("explore_node", str(root.pk))], message="the root's step to be handed out")
    assert ResearchRun.objects.get(pk=rid).status == ResearchRun.Status.RUNNING
    # A worker claimed the root, then died: the node stays `running` and no task is left for it.
    assert ResearchNode.objects.filter(pk=root.pk, status="pending").update(status="running")
    held.release()
    engine.explore_node(root.pk)  # a late re-delivery cannot take a node already claimed
    assert ResearchNode.objects.get(pk=root.pk).status == ResearchNode.Status.RUNNING
    assert not run_calls(rid).exists()

    response = resume(api, rid)
    assert response.status_code == 202, response.content
    run = finished(api, rid)
    assert run["status"] == "completed", run
    assert run["report"] is not None
    assert ResearchNode.objects.get(pk=root.pk).status == ResearchNode.Status.DECOMPOSED
    assert not ResearchNode.objects.filter(run_id=rid, status__in=["pending", "running"]).exists()
    # The root was explored once, after the resume; every node asked its queries exactly once.
    nodes = ResearchNode.objects.filter(run_id=rid).count()
    assert nodes >= 3
    assert run_calls(rid).filter(task="node_queries").count() == nodes
    assert run_calls(rid).filter(task="report").count() == 1

    again = resume(api, rid)
    assert again.status_code == 409 and "start a new run instead" in again.json()["error"]
    assert run_calls(rid).filter(task="report").count() == 1


def test_resume_writes_the_report_a_dead_worker_left_unwritten(api, monkeypatch):
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    held = hold_steps(monkeypatch, "write_report", workers_only=True)
    rid = start(api, sid, max_depth=0)
    wait_until(lambda: held == [("write_report", rid)], message="the report step to be handed out")
    assert ResearchRun.objects.get(pk=rid).status == ResearchRun.Status.REPORTING

    assert resume(api, rid).status_code == 202
    run = finished(api, rid)
    assert run["status"] == "completed" and run["report"] is not None
    assert run_calls(rid).filter(task="report").count() == 1
    assert [e["type"] for e in events_of(api, rid)].count("run_completed") == 1


def test_resume_after_the_bind_phase_lost_its_next_step(api, monkeypatch):
    sid = session_with_files(api, FILES)
    held = hold_steps(monkeypatch, "begin_exploration", workers_only=True)
    rid = start(api, sid, max_depth=0)
    # The context may settle twice (parallel file digests): every begin_exploration of the workers is lost.
    wait_until(lambda: ("begin_exploration", rid) in held, message="the bind phase to end")
    assert ResearchRun.objects.get(pk=rid).status == ResearchRun.Status.BINDING

    assert resume(api, rid).status_code == 202
    run = finished(api, rid)
    assert run["status"] == "completed", run
    assert [n["node_id"] for n in run["nodes"]] == ["1"]
    assert run["context_processing"]["status"] == "completed" and run["context_processing"]["files_ready"] == 2
    assert run_calls(rid).filter(task="node_queries").count() == 1


def test_a_worker_dying_while_planting_the_root_leaves_the_run_binding_for_resume(api, monkeypatch):
    """Regression: the claim binding → running used to commit before the root existed.

    The step runs in this thread, not the worker's task: a step's task fails the run on any
    exception (research_app/tasks.py), but a worker that dies raises nothing; the exception here
    only stops the step where death would, and its transaction is rolled back as a lost connection's is.
    """
    from research_app.runs import engine

    real_compact = engine.compact_items
    deaths = []

    def die_once(*args, **kwargs):
        if not deaths:
            deaths.append(1)
            raise RuntimeError("worker lost while planting the root")
        return real_compact(*args, **kwargs)

    held = hold_steps(monkeypatch, "begin_exploration", workers_only=True)
    sid = session_with_files(api, FILES)
    rid = start(api, sid, max_depth=0)
    wait_until(lambda: ("begin_exploration", rid) in held, message="the bind phase to end")
    monkeypatch.setattr(engine, "compact_items", die_once)
    with pytest.raises(RuntimeError, match="worker lost"):
        engine.begin_exploration(rid)
    run = ResearchRun.objects.get(pk=rid)
    assert run.status == "binding" and not run.nodes.exists() and run.context_bundle is None
    assert "context_binding_parsing_completed" not in [e["type"] for e in events_of(api, rid)]

    assert resume(api, rid).status_code == 202
    run = finished(api, rid)
    assert run["status"] == "completed", run
    assert [n["node_id"] for n in run["nodes"]] == ["1"], "the question was explored"
    assert [e["type"] for e in events_of(api, rid)].count("context_binding_parsing_completed") == 1


def test_resume_of_a_cancelled_run_is_a_conflict(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=0)
    assert api.post(f"/api/runs/{rid}/cancel").status_code == 200
    response = resume(api, rid)
    assert response.status_code == 409 and "cancelled" in response.json()["error"]
    assert finished(api, rid)["status"] == "cancelled"
    stranger = ContextApi(make_member()[0])
    assert resume(stranger, rid).status_code == 404


# --- idempotent steps -------------------------------------------------------------------------


def footprint(rid: str) -> dict:
    run = ResearchRun.objects.get(pk=rid)
    return {
        "calls": list(LLMCall.objects.order_by("created_at", "pk").values_list("pk", flat=True)),
        "events": list(RunEvent.objects.filter(run_id=rid).values_list("seq", "type")),
        "run": (run.status, run.last_seq, run.tokens_used, run.report, run.finished_at),
        "nodes": list(
            ResearchNode.objects.filter(run_id=rid).values_list(
                "path", "status", "findings", "sufficiency", "finished_at"
            )
        ),
    }


def test_every_step_run_again_after_the_run_completed_changes_nothing(api):
    sid = session_with_files(api, FILES)
    rid = start(api, sid, max_depth=1)
    assert finished(api, rid)["status"] == "completed"
    before = footprint(rid)
    assert len(before["nodes"]) >= 3 and before["run"][3] is not None

    for node in ResearchNode.objects.filter(run_id=rid):
        engine.explore_node(node.pk)
        engine.explore_node(node.pk)
    report.write_report(rid)
    report.write_report(rid)
    engine.begin_exploration(rid)
    engine.bind_run(rid)
    assert footprint(rid) == before


def test_a_restarted_worker_resumes_nodes_whose_worker_died_long_ago(api, monkeypatch, settings):
    from datetime import timedelta

    from django.utils import timezone

    sid = session_with_files(api, FILES)
    held = hold_steps(monkeypatch, "explore_node", workers_only=True)
    rid = start(api, sid, max_depth=0)
    wait_until(lambda: any(step == "explore_node" for step, _ in held), message="the root to be queued")
    root = ResearchNode.objects.get(run_id=rid, path="1")
    # Claimed by a worker that died before the task time limit's end.
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 61)
    ResearchNode.objects.filter(pk=root.pk).update(status="running", started_at=long_ago)
    held.release()

    young = ResearchNode.objects.filter(status="running").exclude(pk=root.pk).count()
    assert recovery.recover_stuck_runs() == [root.run_id]
    assert finished(api, rid)["status"] == "completed"
    assert ResearchNode.objects.filter(status="running").count() == young
    assert recovery.recover_stuck_runs() == []
