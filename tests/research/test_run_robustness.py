"""Runs never hang and stop when cancelled (issue 12), on the real worker, Redis and the offline provider."""

import pytest

from context_app.models import LLMCall
from research_app.models import ResearchNode, ResearchRun
from tests.factories import ContextApi, make_member
from tests.research.test_research_runs import VALVES, events_of, finished, session_with_files, start

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
    assert events[-1]["type"] == "run_failed" and events[-1]["payload"] == {"error": run["error"]}
    assert [e["type"] for e in events].count("run_failed") == 1
    assert not ResearchNode.objects.filter(run_id=rid, status__in=["pending", "running"]).exists()

    # A failed run is finished: resume says so (README) and changes nothing.
    calls = LLMCall.objects.count()
    response = api.post(f"/api/runs/{rid}/resume")
    assert response.status_code == 409 and "start a new run instead" in response.json()["error"]
    assert ResearchRun.objects.get(pk=rid).last_seq == events[-1]["seq"]
    assert LLMCall.objects.count() == calls
