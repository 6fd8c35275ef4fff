"""A run's coverage record (issue 25): every file of the session once, cited, read or never reached,
checked against the rows the run stored (its nodes' context slices and search results)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from llm_platform.sourcerefs import split_ref
from research_app.models import NodeContextSlice, ResearchNode, ResearchRun, RunEvent
from research_app.pane import places_read
from research_app.runs import coverage, engine, jobs
from research_app.runs.coverage import STATES, coverage_record
from research_app.tasks import write_report
from tests.factories import ContextApi, make_member

from .test_research_runs import SURVEY, VALVES, events_of, finished, session_with_files, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

QUESTION = "Did the valve programme reduce water losses in district 3?"
# Shares no word with the question or the other files: no search finds it, and its items rank
# last when the root's context is compacted to the node budget below.
SOURDOUGH = (
    "# Sourdough\n\n"
    "A sourdough starter is fed with rye flour twice a day and kept in a cool pantry.\n\n"
    "Bakers fold the dough every half hour, then bake the loaves in a covered cast iron pot.\n"
)
FILES = {
    "valves.md": VALVES.encode(),
    "survey.txt": SURVEY.encode(),
    "sourdough.md": SOURDOUGH.encode(),
    "broken.pdf": b"%PDF-1.7 not really a pdf",
    "glossary.md": b"# Glossary\n\nWater losses: the difference between the water supplied and the water billed.\n",
    "readings.csv": b"district,valves,water losses percent\n3,42,18\n4,0,22\n5,12,20\n",
    # Found by its words, but a list of labels states nothing a finding or the report could cite.
    "checklist.md": b"# Checklist\n\n- valve programme\n- water losses\n- district 3\n",
}
# In another session of the team: the run finds it in the team library.
PIPES = (
    "# Pipe renewal\n\nThe valve programme in district 3 was followed by a pipe renewal that cut water losses again.\n"
)


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


@pytest.fixture
def small_node_budget(settings):
    """The root's compacted context keeps the items that bear on the question, not sourdough's."""
    settings.GROUNDWORK_NODE_CONTEXT_TOKENS = 400


def stored_reach(rid) -> tuple[set[str], set[str]]:
    """The filenames of every stored context slice's SourceRefs, and the file ids of every node's results."""
    slices = NodeContextSlice.objects.filter(node__run_id=rid).values_list("selected_items", flat=True)
    in_slices = {split_ref(ref)[0] for items in slices for item in items for ref in item["sources"]}
    results = ResearchNode.objects.filter(run_id=rid).values_list("results", flat=True)
    return in_slices, {r["file_id"] for found in results for r in found}


def cited_in_report(report: dict) -> tuple[set[str], set[str]]:
    """The file ids of the references the report's text cites, and the filenames of its paragraphs' SourceRefs."""
    paragraphs = [p for s in report["sections"] for p in s["paragraphs"]]
    numbers = {n for p in paragraphs for n in p["citations"]}
    by_id = {r["file_id"] for r in report["references"] if r["n"] in numbers}
    return by_id, {split_ref(ref)[0] for p in paragraphs for ref in p["sources"]}


def test_every_file_once_and_the_never_reached_ones_are_in_no_slice_and_no_result(api, small_node_budget):
    other = session_with_files(api, {"pipes.md": PIPES.encode()}, question=QUESTION)
    api.extracted(other)
    sid = session_with_files(api, FILES, question=QUESTION)
    rid = start(api, sid, max_depth=1)
    run = finished(api, rid)
    assert run["status"] == "completed", run

    coverage = run["coverage"]
    stored = ResearchRun.objects.get(pk=rid)
    assert coverage == stored.coverage
    bundle = stored.context_bundle["files"]
    own = [e for e in coverage["files"] if e["origin_session"] is None]
    # Every file of the session exactly once, in the bundle's order.
    assert [e["file_id"] for e in own] == [f["file_id"] for f in bundle] and len(own) == len(FILES)
    assert len({e["file_id"] for e in coverage["files"]}) == len(coverage["files"])
    state = {e["filename"]: e["state"] for e in own}
    assert state["valves.md"] == "cited" and state["sourdough.md"] == "not_reached" and state["broken.pdf"] == "error"
    assert state["checklist.md"] == "read", state  # found, never cited
    assert coverage["counts"] == {s: sum(1 for e in coverage["files"] if e["state"] == s) for s in STATES}

    # Checked against the stored rows: never reached = in no slice and no result; read or cited = in one.
    in_slices, in_results = stored_reach(rid)
    assert in_slices, "the root's slice holds items: the check below is not vacuous"
    cited_ids, cited_names = cited_in_report(stored.report)
    for entry in own:
        reached = entry["filename"] in in_slices or entry["file_id"] in in_results
        assert reached == (entry["state"] in ("cited", "read")), entry
        cited = entry["file_id"] in cited_ids or entry["filename"] in cited_names
        assert cited == (entry["state"] == "cited"), entry
    broken = next(e for e in own if e["filename"] == "broken.pdf")
    assert broken["citation"] is None and broken["error"] and broken["at_run_start"] == "error", broken
    assert all("at_run_start" not in e for e in own if e["filename"] != "broken.pdf")

    # Each file that has a text opens through the provenance resolver, like the report's references.
    for entry in own:
        if entry["state"] == "error":
            continue
        link = entry["citation"]
        assert link["source_url"] == f"/api/sources/{link['version']}/{link['span']}"
        opened = api.get(link["source_url"])
        assert opened.status_code == 200 and opened.json()["filename"] == entry["filename"]
    valves = next(e for e in own if e["filename"] == "valves.md")
    assert "Section: Valve programme" in valves["locations"]

    # The other session's file the run drew on is listed too, once, as that session's.
    library = [e for e in coverage["files"] if e["origin_session"] is not None]
    assert [e["filename"] for e in library] == ["pipes.md"]
    assert library[0]["origin_session"]["id"] == other and library[0]["state"] in ("cited", "read")
    assert library[0]["citation"]["from_library"] is True

    # The thought stream's last line.
    events = events_of(api, rid)
    assert [e["type"] for e in events[-2:]] == ["run_completed", "coverage_recorded"]
    assert RunEvent.objects.filter(run_id=rid, type="coverage_recorded").count() == 1
    summary = events[-1]["payload"]["summary"]
    assert summary == coverage["summary"]
    cited = sum(1 for e in own if e["state"] == "cited")
    assert summary.startswith(f"cited {cited} of 7 files; "), summary
    assert "1 never reached: sourdough.md" in summary and "1 in error: broken.pdf" in summary
    assert "1 other file of the team library drawn on" in summary

    # A fixed number of queries, however many nodes: the nodes with their slices, the spans' locators.
    with CaptureQueriesContext(connection) as queries:
        again = coverage_record(stored, stored.report)
    assert len(queries) == 2, [q["sql"][:80] for q in queries]
    assert [e["state"] for e in again["files"]] == [e["state"] for e in coverage["files"]]


def test_a_run_that_fails_after_exploring_records_what_its_findings_cite(api, scripted_llm, small_node_budget):
    scripted_llm.handlers["REPORT"] = lambda prompt: {"nothing": "of the report's shape"}
    sid = session_with_files(api, FILES, question=QUESTION)
    rid = start(api, sid, max_depth=0)
    run = finished(api, rid)
    assert run["status"] == "failed" and run["report"] is None, run
    coverage = run["coverage"]
    assert [e["filename"] for e in coverage["files"]] == sorted(FILES)
    state = {e["filename"]: e["state"] for e in coverage["files"]}
    assert state["valves.md"] == "cited" and state["sourdough.md"] == "not_reached" and state["broken.pdf"] == "error"
    root = ResearchNode.objects.get(run_id=rid, path="1")
    by_number = {r["n"]: r["file_id"] for r in root.results}
    cited_ids = {by_number[n] for f in root.findings for n in f["citations"]}
    assert {e["file_id"] for e in coverage["files"] if e["state"] == "cited"} == cited_ids
    assert [e["type"] for e in events_of(api, rid)[-2:]] == ["run_failed", "coverage_recorded"]


def test_a_run_that_has_not_bound_its_context_has_no_record(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode()}, question=QUESTION)
    queued = ResearchRun.objects.create(
        session_id=sid, question=QUESTION, max_depth=0, max_children=1, max_nodes=1, token_budget=1000
    )
    assert coverage_record(queued) is None
    assert api.get(f"/api/runs/{queued.pk}").json()["coverage"] is None


def test_a_running_run_shows_what_it_has_read_so_far(
    api, small_node_budget, monkeypatch, django_assert_max_num_queries
):
    """The record is written as the run goes: here the run's steps are driven one by one in this
    thread (the node and report jobs they queue are kept, not sent), so each assertion sees the run
    between two steps, with no worker to race."""
    files = {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode(), "sourdough.md": SOURDOUGH.encode()}
    sid = session_with_files(api, files, question=QUESTION)
    # A first run parses the files (in the worker): the run below binds them as they are.
    assert finished(api, start(api, sid, max_depth=0))["status"] == "completed"
    kept: list[tuple[str, str]] = []

    def keep(job, object_id):
        if job in (jobs.EXPLORE_NODE, jobs.WRITE_REPORT):  # the steps this test drives itself
            kept.append((job, str(object_id)))

    monkeypatch.setattr(jobs, "enqueue", keep)
    rid = start(api, sid, max_depth=1)
    engine.bind_run(rid)
    engine.begin_exploration(rid)

    # Bound: every file listed, none reached yet, and no coverage line told before the run's end.
    snapshot = api.get(f"/api/runs/{rid}").json()
    assert snapshot["status"] == "running", snapshot["status"]
    record = snapshot["coverage"]
    assert record["final"] is False and sorted(e["filename"] for e in record["files"]) == sorted(files)
    assert {e["state"] for e in record["files"]} == {"not_reached"}
    assert record["summary"].startswith("cited 0 of 3 files so far; 3 not reached yet: "), record["summary"]

    # The root explored: what it read and cited is on the run before the run completes.
    assert kept[0][0] == jobs.EXPLORE_NODE
    engine.explore_node(kept.pop(0)[1])
    snapshot = api.get(f"/api/runs/{rid}").json()
    assert snapshot["status"] in ("running", "reporting") and snapshot["report"] is None, snapshot["status"]
    record = snapshot["coverage"]
    states = {e["filename"]: e["state"] for e in record["files"]}
    assert record["final"] is False and states["valves.md"] == "cited" and states["sourdough.md"] == "not_reached"
    root = ResearchNode.objects.get(run_id=rid, path="1")
    cited_by_root = {r["file_id"] for r in root.results for f in root.findings if r["n"] in f["citations"]}
    assert {e["file_id"] for e in record["files"] if e["state"] == "cited"} == cited_by_root
    assert "coverage_recorded" not in [e["type"] for e in events_of(api, rid)]

    # The record so far costs the same few queries whatever the run's size (no query per node or file).
    ResearchRun.objects.filter(pk=rid).update(status=ResearchRun.Status.RUNNING)
    with django_assert_max_num_queries(6):
        coverage.record_so_far(rid)
    ResearchRun.objects.filter(pk=rid).update(status=snapshot["status"])

    # The rest of the run, step by step: the final record replaces the record so far, told once, last.
    while kept:
        job, object_id = kept.pop(0)
        (engine.explore_node if job == jobs.EXPLORE_NODE else write_report)(object_id)
    snapshot = api.get(f"/api/runs/{rid}").json()
    assert snapshot["status"] == "completed" and snapshot["coverage"]["final"] is True, snapshot["status"]
    assert "never reached" in snapshot["coverage"]["summary"] or snapshot["coverage"]["counts"]["not_reached"] == 0
    types = [e["type"] for e in events_of(api, rid)]
    assert types.count("coverage_recorded") == 1 and types[-1] == "coverage_recorded"


@pytest.mark.parametrize(
    ("locations", "where"),
    [
        (
            ["Section: Postmortem > Cause", "Section: Postmortem > What we changed"],
            "Section: Postmortem > Cause, What we changed",
        ),
        (
            ["Section: Postmortem", "Section: Postmortem > Cause", "Section: Postmortem > Owner"],
            "Section: Postmortem, and under it: Cause, Owner",
        ),
        (["Section: Methods", "Section: Results"], "Section: Methods, Section: Results"),
        (["Page 1", "Page 3"], "Page 1, Page 3"),
        (["Section: A > B > C"], "Section: A > B > C"),
        (
            [f"Section: Manual > Part {n}" for n in range(1, 7)],
            "Section: Manual > Part 1, Part 2, Part 3, Part 4 and 2 more",
        ),
    ],
)
def test_the_places_a_file_was_read_say_the_path_they_share_once(locations, where):
    assert places_read(locations) == where
