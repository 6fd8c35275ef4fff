"""Research runs end to end (SPEC §4, seed 001 §10): real worker, Redis, websockets, offline provider."""

import threading

import pytest

from context_app.models import ContextSet
from llm_platform import grounding
from llm_platform.models import LLMCall
from research_app.models import NodeContextSlice, ResearchNode, ResearchRun
from tests.factories import ContextApi, make_member, model_calls, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

VALVES = (
    "# Valve programme\n\n"
    "The valve programme replaced 42 gate valves in district 3 between March 2021 and June 2022.\n\n"
    "After the replacement, water losses in district 3 fell by 18 percent.\n\n"
    "## Budget\n\nThe programme cost 1.2 million euros, paid from the 2021 network budget.\n"
)
SURVEY = (
    "Household survey, autumn 2022.\n\n"
    "About 61 percent of households in district 3 reported fewer supply interruptions.\n\n"
    "Residents may have confused planned works with leaks.\n"
)
# Covered by the files (valves, losses) and not (staffing): the root cannot be sufficient alone.
QUESTION = "Did the valve programme reduce water losses, and how did maintenance staffing change?"


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def start(api, sid, **body):
    response = api.post(f"/api/sessions/{sid}/runs", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["run_id"]


def finished(api, rid, timeout=90):
    def done():
        snapshot = api.get(f"/api/runs/{rid}").json()
        return snapshot if snapshot["status"] in ("completed", "failed", "cancelled") else None

    return wait_until(done, timeout=timeout, message=f"run {rid} to finish")


def events_of(api, rid) -> list[dict]:
    return api.get(f"/api/runs/{rid}/events?after=0").json()["events"]


def session_with_files(api, files: dict[str, bytes], question: str = QUESTION) -> str:
    sid = api.create_session(question=question)
    api.upload(sid, files)
    return sid


def test_upload_alone_calls_no_model_and_a_run_parses_in_its_bind_phase(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    assert LLMCall.objects.count() == 0, "upload stores and extracts, but parses nothing (SPEC §2.5)"

    rid = start(api, sid, max_depth=1)
    run = finished(api, rid)
    assert run["status"] == "completed", run
    events = events_of(api, rid)
    types = [e["type"] for e in events]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    started = next(e for e in events if e["type"] == "context_binding_parsing_started")
    assert started["payload"]["files_total"] == 2 and started["payload"]["files_ready"] == 0
    per_file = [e["payload"] for e in events if e["type"] == "context_binding_parsing_file_completed"]
    assert sorted(p["filename"] for p in per_file) == ["survey.txt", "valves.md"]
    assert sorted(p["files_done"] for p in per_file) == [1, 2] and all(p["files_total"] == 2 for p in per_file)
    completed = next(e for e in events if e["type"] == "context_binding_parsing_completed")
    assert completed["payload"]["files_ready"] == 2
    # Bind happens before any node.
    assert types.index("context_binding_parsing_completed") < types.index("context_for_node_ready")
    assert model_calls(sid, "per_file_digest") == 2 and model_calls(sid, "aggregate_digest") == 1
    assert run["context_processing"] == {"status": "completed", "files_total": 2, "files_ready": 2, "files_error": 0}


def test_root_gets_the_full_context_and_children_get_their_split(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=1, max_children=3)
    run = finished(api, rid)
    assert run["status"] == "completed", run
    aggregate = ContextSet.objects.get(session_id=sid).aggregate_digest.content
    aggregate_items = len(aggregate["facts"]) + len(aggregate["uncertainties"])

    root = ResearchNode.objects.get(run_id=rid, path="1")
    assert root.context_slice.mode == NodeContextSlice.Mode.ROOT_FULL
    assert len(root.context_slice.selected_items) == aggregate_items
    assert root.sufficiency["is_sufficient"] is False and root.sufficiency["gaps"], root.sufficiency
    children = list(ResearchNode.objects.filter(run_id=rid, parent=root).order_by("path"))
    assert len(children) >= 2, [c.question for c in children]
    parent_items = {(i["kind"], i["text"]) for i in root.context_slice.selected_items}
    for child in children:
        child_slice = child.context_slice
        assert child_slice.mode == NodeContextSlice.Mode.SPLIT_FROM_PARENT
        assert {(i["kind"], i["text"]) for i in child_slice.selected_items} <= parent_items
        assert len(child_slice.selected_items) < aggregate_items, "a child gets its share, not the full context"
    assert sum(len(c.context_slice.selected_items) for c in children) > 0

    ready = [e["payload"] for e in events_of(api, rid) if e["type"] == "context_for_node_ready"]
    assert [(p["node_id"], p["mode"]) for p in ready][0] == ("1", "root_full")
    assert {p["node_id"] for p in ready} == {"1", *(c.path for c in children)}
    assert all(p["selected_items_count"] == len(p["context_slice"]["selected_items"]) for p in ready)
    # The snapshot's tree carries each node's compact slice.
    by_id = {n["node_id"]: n for n in run["nodes"]}
    assert by_id["1"]["context_slice"]["selected_items_count"] == aggregate_items
    assert {by_id[c.path]["parent_id"] for c in children} == {"1"}


def test_the_report_cites_search_results_and_the_users_files(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=1)
    assert finished(api, rid)["status"] == "completed"
    report = api.get(f"/api/runs/{rid}/report").json()["report"]
    numbers = {r["n"] for r in report["references"]}
    assert numbers and all(r["title"] in ("valves.md", "survey.txt") for r in report["references"])
    cited = {n for s in report["sections"] for p in s["paragraphs"] for n in p["citations"]}
    assert cited and cited <= numbers
    aggregate = ContextSet.objects.get(session_id=sid).aggregate_digest.content
    known = {ref for fact in aggregate["facts"] + aggregate["uncertainties"] for ref in fact["sources"]}
    sources = {ref for s in report["sections"] for p in s["paragraphs"] for ref in p["sources"]}
    assert sources and sources <= known
    attached = next(e for e in events_of(api, rid) if e["type"] == "report_context_attached")["payload"]
    items = len(aggregate["facts"]) + len(aggregate["uncertainties"])
    assert attached["items"] + attached["items_not_citable"] == items
    assert attached["files"] == 2
    assert report["dropped"] == []
    assert model_calls(sid, "report") == 1


@pytest.mark.one_database  # what the report may cite, which the database does not change
def test_the_report_is_given_only_items_a_cited_span_states(api):
    """A CSV's digest computes totals ("the total over 4 rows is 322") that no row states: given to the
    report's writer, such an item was cited, then removed by the report's check, and the report said
    "Validation removed 2 unsupported citations" of the product's own digest."""
    # (No column names every row, so the range says "(row 3)", a word no row holds: with rows named by their
    # month, the range's clause is stated by the rows, and only its total is computed.)
    table = "clinic,month,booked,attended,missed\n"
    table += "Eastside,2024-01,820,738,82\nEastside,2024-02,790,715,75\nWestside,2024-01,805,712,93\n"
    notes = "Missed appointments rose in the winter. Most patients who missed said they forgot.\n"
    sid = session_with_files(api, {"appointments.csv": table.encode(), "notes.txt": notes.encode()})
    rid = start(api, sid, question="How many appointments were missed?", max_depth=0)
    assert finished(api, rid)["status"] == "completed"
    report = api.get(f"/api/runs/{rid}/report").json()["report"]
    assert report["dropped"] == []
    attached = next(e for e in events_of(api, rid) if e["type"] == "report_context_attached")["payload"]
    assert attached["items_not_citable"] >= 1  # the CSV's range and total of "missed", at least
    quoted = " ".join(p["text"] for s in report["sections"] for p in s["paragraphs"])
    assert "Most patients who missed said they forgot." in quoted


# One section of several spans (a span holds about 1,000 characters): the answers are in its later ones.
PUMPS = "# Pump station upgrade\n\n" + "\n\n".join(
    [
        f"Site visit {n}: the crew inspected valve chamber {n}, cleaned its strainer, logged the gauge "
        f"readings of inlet {n} and outlet {n}, and checked the seals, the bolts and the drainage sump."
        for n in range(1, 15)
    ]
    + [
        "After the upgrade, the station used 31 percent less electricity per cubic metre pumped.",
        "Noise complaints from neighbours stopped after the new pumps were installed.",
    ]
)


def test_a_citation_opens_the_span_that_holds_the_sentence_not_the_first_of_its_section(api):
    """A library record is a whole section (or page) of spans; a finding quoted from its third
    paragraph opened its first, which does not say it."""
    sid = session_with_files(api, {"pumps.md": PUMPS.encode()})
    question = "How much electricity did the pump upgrade save, and did the noise complaints stop?"
    rid = start(api, sid, question=question, max_depth=1)
    assert finished(api, rid)["status"] == "completed"

    def opened(link) -> str:
        response = api.get(link["source_url"])
        assert response.status_code == 200, response.content
        return response.json()["text"]

    findings = [f for node in ResearchNode.objects.filter(run_id=rid) for f in node.findings]
    links = [(f["text"], link) for f in findings for link in f["source_links"]]
    assert links
    for text, link in links:
        assert grounding.supports(text, opened(link)), (text, link)

    report = api.get(f"/api/runs/{rid}/report").json()["report"]
    references = {r["n"]: r for r in report["references"]}
    cited = [(p["text"], references[n]) for s in report["sections"] for p in s["paragraphs"] for n in p["citations"]]
    quoted = " ".join(text for text, _ in cited)
    assert "31 percent less electricity" in quoted and "Noise complaints" in quoted
    for text, reference in cited:
        assert grounding.supporting(text, {0: opened(reference)})[0], (text, reference)
    spans = {reference["span"] for _, reference in cited}
    assert len(spans) >= 2, "two sentences of one section open two spans"


def test_a_finding_woven_from_two_spans_of_a_section_keeps_the_whole_section_as_its_evidence(api, scripted_llm):
    """A model may weave one sentence from two paragraphs: no one span supports it, so it opens its
    section's first span, and the report holds it to the whole section, as the node's check did."""
    woven = "Site visit 10 checked valve chamber 10, and the station used 31 percent less electricity."
    scripted_llm.handlers["NODE_FINDINGS"] = lambda prompt: {"findings": [{"text": woven, "citations": [1]}]}
    sid = session_with_files(api, {"pumps.md": PUMPS.encode()})
    rid = start(api, sid, question="How much electricity did the pump upgrade save?", max_depth=0)
    assert finished(api, rid)["status"] == "completed"
    (finding,) = ResearchNode.objects.get(run_id=rid, path="1").findings
    assert [link["span"] for link in finding["source_links"]] == ["S1"]
    report = api.get(f"/api/runs/{rid}/report").json()["report"]
    assert report["dropped"] == []
    cited = [p for s in report["sections"] for p in s["paragraphs"] if p["text"].startswith("Site visit 10")]
    assert cited and cited[0]["citations"], report["sections"]


def test_one_failing_file_is_isolated_and_all_failing_leaves_a_warning(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "broken.pdf": b"%PDF-1.7 not really a pdf"})
    rid = start(api, sid, max_depth=0)
    run = finished(api, rid)
    assert run["status"] == "completed"
    assert run["context_processing"]["files_ready"] == 1 and run["context_processing"]["files_error"] == 1
    assert "context_binding_no_usable_context" not in [e["type"] for e in events_of(api, rid)]

    only_broken = session_with_files(api, {"broken.pdf": b"%PDF-1.7 not really a pdf"})
    rid = start(api, only_broken, max_depth=0)
    assert finished(api, rid)["status"] == "completed"
    warning = [e for e in events_of(api, rid) if e["type"] == "context_binding_no_usable_context"]
    assert len(warning) == 1 and "no usable context" in warning[0]["payload"]["message"]
    assert ResearchNode.objects.get(run_id=rid, path="1").context_slice.selected_items == []


def test_a_malformed_context_split_falls_back_to_token_overlap(api, scripted_llm):
    scripted_llm.handlers["CONTEXT_SPLIT"] = lambda prompt: {"child_contexts": [{"child_question": "?"}]}
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=1)
    assert finished(api, rid)["status"] == "completed"
    fallback = [e for e in events_of(api, rid) if e["type"] == "context_split_fallback"]
    assert len(fallback) == 1 and "invalid" in fallback[0]["payload"]["reason"]
    modes = set(NodeContextSlice.objects.filter(node__run_id=rid, node__depth=1).values_list("mode", flat=True))
    assert modes == {NodeContextSlice.Mode.SPLIT_FALLBACK}
    assert LLMCall.objects.filter(task="context_split", outcome=LLMCall.Outcome.INVALID).count() == 2


def test_a_node_with_no_narrower_sub_question_ends_limited_and_the_run_still_reports(api, scripted_llm):
    """NODE_DECOMPOSE may answer no children (node_decompose.schema.json): the question was asked as narrowly
    as it can be, and a child would only ask it again."""
    scripted_llm.handlers["NODE_DECOMPOSE"] = lambda prompt: {"children": []}
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=2)
    assert finished(api, rid)["status"] == "completed"
    [root] = ResearchNode.objects.filter(run_id=rid)
    assert root.status == ResearchNode.Status.LIMITED
    [limited] = [e for e in events_of(api, rid) if e["type"] == "node_limited"]
    assert limited["payload"]["reason"] == "the question could not be split further"
    assert api.get(f"/api/runs/{rid}").json()["report"]["sections"]


def test_limits_are_checked_and_respected(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    for body, message in (
        ({"max_depth": -1}, "max_depth must be an integer from 0 to"),
        ({"max_children": 0}, "max_children must be an integer from 1 to"),
        ({"max_nodes": "many"}, "max_nodes must be an integer"),
        ({"colour": "red"}, "unknown field(s): colour"),
        ({"question": 7}, "question must be a string"),
    ):
        response = api.post(f"/api/sessions/{sid}/runs", body, format="json")
        assert response.status_code == 400 and message in response.json()["error"], response.content
    empty = api.create_session()
    response = api.post(f"/api/sessions/{empty}/runs", {}, format="json")
    assert response.status_code == 400 and "needs a question" in response.json()["error"]

    rid = start(api, sid, max_depth=2, max_children=2, max_nodes=3)
    assert finished(api, rid)["status"] == "completed"
    nodes = ResearchNode.objects.filter(run_id=rid)
    assert nodes.count() <= 3
    assert max(nodes.values_list("depth", flat=True)) <= 2
    assert all(n.parent is None or n.parent.children.count() <= 2 for n in nodes)


def test_other_teams_get_404_and_mutations_need_an_idempotency_key(api):
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=1)
    stranger = ContextApi(make_member()[0])
    for path in (f"/api/runs/{rid}", f"/api/runs/{rid}/events", f"/api/runs/{rid}/report"):
        assert stranger.get(path).status_code == 404
    assert stranger.post(f"/api/runs/{rid}/cancel").status_code == 404
    assert stranger.post(f"/api/sessions/{sid}/runs", {}, format="json").status_code == 404
    response = api.client.post(f"/api/sessions/{sid}/runs", {}, format="json")
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["error"]
    finished(api, rid)
    assert api.get(f"/api/sessions/{sid}").json()["runs"][0]["run_id"] == rid


def test_cancel_stops_a_run_and_a_finished_run_cannot_be_cancelled(api, scripted_llm):
    from digests.offline import per_file_digest

    cancelled = threading.Event()

    def digest_once_cancelled(prompt):
        # The run's first model call (its bind phase's file digest) waits for the cancel: it lands mid-run.
        cancelled.wait(timeout=30)
        return per_file_digest(prompt)

    scripted_llm.handlers["PER_FILE_DIGEST"] = digest_once_cancelled
    sid = session_with_files(api, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=1)
    response = api.post(f"/api/runs/{rid}/cancel")
    cancelled.set()
    assert response.status_code == 200
    assert ResearchRun.objects.get(pk=rid).status == ResearchRun.Status.CANCELLED
    assert finished(api, rid)["status"] == "cancelled"
    assert "run_cancelled" in [e["type"] for e in events_of(api, rid)]
    assert model_calls(sid, "report") == 0, "a cancelled run writes no report"
    again = api.post(f"/api/runs/{rid}/cancel")
    assert again.status_code == 409 and "already cancelled" in again.json()["error"]


def test_a_node_searches_by_keywords_and_says_so_when_meaning_is_unavailable(api, remote_embeddings):
    remote_embeddings.mode = "down"  # the embeddings server answers 503 to every call
    sid = session_with_files(api, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=0)
    assert finished(api, rid)["status"] == "completed"
    searched = [e["payload"] for e in events_of(api, rid) if e["type"] == "node_search_completed"]
    assert searched and all(payload["results"] > 0 for payload in searched)
    assert any("library: searched by keywords only" in error for p in searched for error in p["errors"])
