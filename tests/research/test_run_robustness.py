"""Runs never hang and stop when cancelled (issue 12), on the real worker, Redis and the offline provider."""

import threading

import pytest
from django.utils.module_loading import import_string

from llm_platform.models import LLMCall
from research_app.models import ResearchNode, ResearchRun
from research_app.runs import model_tasks
from tests import session_worker
from tests.factories import ContextApi, extract_uploads, make_member, wait_until
from tests.research.test_research_runs import SURVEY, VALVES, events_of, finished, session_with_files, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

# The same boilerplate section in two files of one team (in two of its sessions).
CONFIDENTIALITY = (
    "## Confidentiality\n\n"
    "This report is confidential to the water utility and its contractors. "
    "Sharing the report outside the utility needs the written consent of the network director.\n"
)
PUMPS = (
    "# Pump study\n\n"
    "The pump study measured the energy use of 12 booster pumps in district 5 during 2022.\n\n" + CONFIDENTIALITY
)
FILES = {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()}
SHARING = "Who must consent before the valve report is shared outside the utility?"


@pytest.fixture
def team_member():
    user, team = make_member()
    return ContextApi(user), team


def test_two_files_sharing_a_section_do_not_stop_a_run(team_member):
    """Regression: the shared section came back twice from the library, the node's envelope refused
    `duplicate source ids`, the node failed, the report step raised the same and the run stayed
    `reporting` for good (resume answered 202 and changed nothing)."""
    api, team = team_member
    teammate = ContextApi(make_member(team)[0])
    session_with_files(teammate, {"pumps.md": PUMPS.encode()}, question="What did the pumps use?")
    sid = session_with_files(api, {"valves.md": (VALVES + "\n" + CONFIDENTIALITY).encode()}, question=SHARING)

    rid = start(api, sid, max_depth=0)
    run = finished(api, rid, timeout=45)
    assert run["status"] == "completed", run
    root = ResearchNode.objects.get(run_id=rid, path="1")
    assert root.status != ResearchNode.Status.FAILED, root.error
    texts = [r["text"] for r in root.results]
    shared = [t for t in texts if "written consent of the network director" in t]
    assert len(shared) == 1, "the shared section is one result, not two"
    assert len(texts) == len(set(texts))
    assert root.findings, "the node found the answer in the shared section"
    references = run["report"]["references"]
    assert len([r for r in references if r["title"] in ("valves.md", "pumps.md")]) >= 1
    assert "node_failed" not in [e["type"] for e in events_of(api, rid)]


def test_a_file_the_session_holds_is_cited_as_its_own_not_as_another_sessions_copy(team_member):
    """Regression: a teammate's session held the same file; ties went to the copy seen first, and a run
    cited the other session's copy, often beside its own for the same sentence."""
    api, team = team_member
    teammate = ContextApi(make_member(team)[0])
    session_with_files(teammate, FILES, question="What did the valves cost?")
    sid = session_with_files(api, FILES, question="What did the valves cost?")
    extract_uploads()  # both sessions' copies are in the team library

    run = finished(api, start(api, sid, max_depth=1), timeout=45)
    assert run["status"] == "completed", run
    references = run["report"]["references"]
    assert references
    assert [r["title"] for r in references if r.get("from_library")] == []


def failing(message: str):
    def boom(*args, **kwargs):
        raise RuntimeError(message)

    return boom


@pytest.mark.parametrize(
    ("module", "name", "step"),
    [
        ("research_app.runs.engine", "processing_summary", "binding the session's context"),
        ("research_app.runs.report", "checked_report", "writing the report"),
    ],
)
def test_any_step_that_crashes_ends_the_run_as_failed(team_member, monkeypatch, module, name, step):
    """Regression: only TaskFailed was handled; any other exception left the run open for good."""
    import importlib

    api, _team = team_member
    monkeypatch.setattr(importlib.import_module(module), name, failing("a bug nobody expected"))
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=0)
    run = finished(api, rid, timeout=45)
    assert run["status"] == "failed", run
    assert run["error"] == f"internal error while {step}; the run was stopped"
    assert "a bug nobody expected" not in run["error"], "the exception's own words stay in the server log"
    assert run["finished_at"] is not None
    events = events_of(api, rid)
    told = events
    if step == "writing the report":  # it had explored: what it looked at is told after its failure
        assert events[-1]["type"] == "coverage_recorded" and run["coverage"] is not None
        told = events[:-1]
    else:  # failed while binding: no context bound, nothing to cover
        assert run["coverage"] is None
    assert told[-1]["type"] == "run_failed" and told[-1]["payload"] == {"error": run["error"]}
    assert [e["type"] for e in events].count("run_failed") == 1
    assert not ResearchNode.objects.filter(run_id=rid, status__in=["pending", "running"]).exists()

    # A failed run is finished: resume says so (README) and changes nothing.
    calls = LLMCall.objects.count()
    response = api.post(f"/api/runs/{rid}/resume")
    assert response.status_code == 409 and "start a new run instead" in response.json()["error"]
    assert ResearchRun.objects.get(pk=rid).last_seq == events[-1]["seq"]
    assert LLMCall.objects.count() == calls


# --- cancel stops the work under way ------------------------------------------------------


def wait_until_no_step_is_left() -> None:
    """The worker runs nothing and nothing waits in the broker: no step of the run is to follow
    (a step queues the next before it ends)."""
    session_worker.wait_until_idle(timeout=30)


@pytest.mark.parametrize(
    "task", ["NODE_QUERIES", "NODE_FINDINGS", "NODE_SUFFICIENCY", "NODE_DECOMPOSE", "CONTEXT_SPLIT", "REPORT"]
)
def test_a_cancel_during_a_model_call_stops_the_run_before_its_next_call_or_event(team_member, scripted_llm, task):
    """Regression: after run_cancelled was stored, NODE_SUFFICIENCY, NODE_DECOMPOSE and CONTEXT_SPLIT
    were still called and node events stored. The cancel lands while the root's `task` call is in flight."""
    api, _team = team_member
    sid = session_with_files(api, FILES)
    at_cancel: list[int] = []
    answer = import_string(getattr(model_tasks, task).offline_handler)  # the offline answer, wrapped below

    def cancel_meanwhile(prompt):
        if not at_cancel:
            response = api.post(f"/api/runs/{rid}/cancel")  # from the worker, during the call
            assert response.status_code == 200, response.content
            at_cancel.append(len(scripted_llm.requests))
        return answer(prompt)

    scripted_llm.handlers[task] = cancel_meanwhile
    rid = start(api, sid, max_depth=1)
    wait_until(lambda: at_cancel, timeout=60, message=f"the {task} call")
    wait_until_no_step_is_left()

    assert len(scripted_llm.requests) == at_cancel[0], [r.task for r in scripted_llm.requests[at_cancel[0] :]]
    events = events_of(api, rid)
    assert [e["type"] for e in events][-2:] == ["run_cancelled", "coverage_recorded"], [e["type"] for e in events][-4:]
    run = ResearchRun.objects.get(pk=rid)
    assert run.coverage is not None and run.coverage["session_files"] == len(FILES)
    assert run.status == "cancelled" and run.report is None and run.last_seq == events[-1]["seq"]
    assert run.context_processing["status"] == "completed", "the bind phase had finished"
    nodes = list(ResearchNode.objects.filter(run_id=rid))
    if task == "REPORT":  # every node had finished; only the report was under way
        assert len(nodes) >= 3 and all(n.status in ("sufficient", "decomposed", "limited") for n in nodes)
        assert "run_completed" not in [e["type"] for e in events]
        return
    assert [(n.path, n.status) for n in nodes] == [("1", "cancelled")], "no child was created after the cancel"
    assert not nodes[0].findings and nodes[0].sufficiency is None, "nothing of the cancelled node was stored"


def test_a_cancel_during_the_bind_phase_ends_its_parsing_status(team_member, scripted_llm):
    api, _team = team_member
    sid = session_with_files(api, FILES)
    cancelled = []
    lock = threading.Lock()

    def cancel_meanwhile(prompt):
        with lock:  # the two files are digested at once
            if not cancelled:
                cancelled.append(api.post(f"/api/runs/{rid}/cancel").status_code)
        return digest_offline.per_file_digest(prompt)

    from digests import offline as digest_offline

    scripted_llm.handlers["PER_FILE_DIGEST"] = cancel_meanwhile
    rid = start(api, sid, max_depth=1)
    wait_until(lambda: cancelled, timeout=60, message="a file digest call")
    assert cancelled == [200]
    api.settle(sid)  # the session's files are still parsed: their digests are the session's, not the run's
    wait_until_no_step_is_left()

    run = api.get(f"/api/runs/{rid}").json()
    assert run["status"] == "cancelled" and run["nodes"] == []
    assert run["context_processing"]["status"] == "cancelled", run["context_processing"]
    events = events_of(api, rid)
    assert events[-1]["type"] == "run_cancelled", [e["type"] for e in events]
    assert not LLMCall.objects.filter(subject__startswith=f"run:{rid}:").exists(), "no research call"
