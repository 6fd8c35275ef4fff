"""The Research tab, server-rendered (issue 23), read as HTML: a finished run's page readable without
script, user and model text escaped, its forms posted without script (idempotent), a run shown as of
one of its events, the pane's websocket, and another team's 404."""

import re
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from config.asgi import application
from research_app.fragments import research_fragments
from research_app.models import ResearchRun
from research_app.pane import research_pane, run_view
from tests.context.test_context_websocket import HEADERS
from tests.factories import ContextApi, make_member
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES, finished, start

# What a page shows is rendered from rows the API and stack tests already check on both databases.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker_thread"),
    pytest.mark.one_database,
]

HOSTILE = "<script>alert(1)</script> did the valves & <b>pipes</b> reduce water losses?"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt; did the valves &amp; &lt;b&gt;pipes&lt;/b&gt; reduce water losses?"


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


@pytest.fixture
def browser_client(api):
    client = Client()
    client.force_login(api.user)
    return client


@pytest.fixture
def finished_run(api):
    """A session with valves.md and survey.txt, and a run of its question to its report."""
    sid = api.create_session(title="Pilot", question=QUESTION)
    api.upload(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid)
    assert finished(api, rid)["status"] == "completed"
    return sid, rid


def test_the_page_arrives_with_the_latest_run_rendered_and_readable_without_script(browser_client, finished_run):
    sid, rid = finished_run
    run = ResearchRun.objects.get(pk=rid)
    html = browser_client.get(f"/sessions/{sid}/").content.decode()
    assert f'<option value="{rid}" selected' in html
    assert '<span id="run-state" data-status="completed">Completed</span>' in html
    assert re.search(
        r"Nodes: \d+ done · 0 open · limit 10 · \d+ model calls · [\d,]+ tokens · </span>"
        r'<span class="elapsed">took \d',
        html,
    )
    assert html.count('<li id="event-') == run.last_seq, "every stored event narrated once"
    assert "Report ready:" in html and "Coverage: cited " in html
    assert 'class="report-title"' in html and 'id="report-coverage"' in html
    assert '<li id="tree-node-1" data-node="1">' in html and 'id="node-detail-1.1"' in html
    for kind in ("md", "docx", "pdf"):
        assert f'href="/api/runs/{rid}/report.{kind}" download' in html
    # [n] marks link to their references; SourceRef chips open the exact span (the one chip template).
    marks = set(re.findall(r'<a class="citation" href="#ref-(\d+)"', html))
    assert marks and all(f'<li id="ref-{n}" value="{n}">' in html for n in marks)
    assert re.search(
        rf'<a class="source-link" href="/sources/[0-9a-f-]+/S\d+/\?session={sid}" data-source="valves.md::S\d+"', html
    )
    assert 'id="run-usage" class="run-usage muted small" aria-live="polite">This run: ' in html
    assert 'id="run-form" class="run-form" method="post"' in html and 'name="idempotency_key"' in html


def test_user_and_model_text_is_escaped(api, browser_client):
    sid = api.create_session(title="Pilot", question=HOSTILE)
    api.upload(sid, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=0)
    finished(api, rid)
    html = browser_client.get(f"/sessions/{sid}/").content.decode()
    assert "<script>alert(1)" not in html and "<b>pipes</b>" not in html
    assert f'<h3 class="report-title">{ESCAPED}</h3>' in html
    assert f"Run queued: “{ESCAPED}”." in html  # the thought stream
    assert f'<span class="node-question">{ESCAPED}</span>' in html  # the tree
    fragments = browser_client.get(f"/sessions/{sid}/?run={rid}&fragment").content.decode()
    assert "<script>alert(1)" not in fragments and ESCAPED in fragments and "<html" not in fragments


def test_a_run_is_shown_as_of_one_of_its_events(finished_run):
    """The tree and status agree with the stream shown beside them: the root alone, then its children."""
    _sid, rid = finished_run
    run = ResearchRun.objects.get(pk=rid)
    types = list(run.events.order_by("seq").values_list("type", flat=True))
    root_ready = types.index("context_for_node_ready") + 1
    split = types.index("node_decomposed") + 1
    early = run_view(run, upto=root_ready)
    assert (early.status, [(n.node.path, n.status) for n in early.nodes]) == ("running", [("1", "running")])
    assert [line.event.seq for line in early.lines] == list(range(1, root_ready + 1))
    later = run_view(run, upto=split, after=root_ready)
    assert [line.event.seq for line in later.lines] == list(range(root_ready + 1, split + 1))
    assert later.nodes[0].status == "decomposed" and {n.status for n in later.nodes[1:]} == {"pending"}
    assert later.progress.text.startswith("Nodes: 1 done · ")
    whole = run_view(run)
    assert whole.upto == run.last_seq and whole.status == "completed" and whole.report is not None
    live = research_fragments(research_pane(run.session, run, upto=split, after=root_ready), append=True)
    assert '<ol id="thought-stream" class="thought-stream" aria-live="polite" data-swap="append">' in live
    assert live.count('<li id="event-') == split - root_ready


def test_the_pane_reads_a_fixed_number_of_queries(finished_run, django_assert_max_num_queries):
    _sid, rid = finished_run
    run = ResearchRun.objects.get(pk=rid)
    with django_assert_max_num_queries(12):
        research_fragments(research_pane(run.session, run))


def test_the_run_forms_post_without_script_idempotently(api, browser_client, finished_run):
    sid, rid = finished_run
    form = {
        "question": "How much did the valve programme cost?",
        "max_depth": "0",
        "max_children": "",
        "max_nodes": "3",
        "idempotency_key": str(uuid.uuid4()),
    }
    first = browser_client.post(f"/sessions/{sid}/runs/", form)
    again = browser_client.post(f"/sessions/{sid}/runs/", form)
    new = ResearchRun.objects.get(question=form["question"])
    assert first.status_code == again.status_code == 302
    assert first["Location"] == again["Location"] == f"/sessions/{sid}/?run={new.pk}#research-tab"
    assert (new.max_depth, new.max_nodes) == (0, 3)
    page = browser_client.get(first["Location"]).content.decode()
    assert f'<option value="{new.pk}" selected' in page

    refused = browser_client.post(
        f"/sessions/{sid}/runs/", {**form, "max_nodes": "999", "idempotency_key": str(uuid.uuid4())}, follow=True
    )
    assert "max_nodes must be an integer from 1 to" in refused.content.decode()
    done = browser_client.post(
        f"/sessions/{sid}/runs/{rid}/cancel/", {"idempotency_key": str(uuid.uuid4())}, follow=True
    )
    assert "the run is completed" in done.content.decode() or "already" in done.content.decode()
    unchanged = browser_client.post(
        f"/sessions/{sid}/runs/{rid}/update/", {"idempotency_key": str(uuid.uuid4())}, follow=True
    )
    assert "Nothing to update:" in unchanged.content.decode()
    assert not browser_client.post(f"/sessions/{sid}/runs/", {"question": "x"}).status_code == 302, "a key is required"


def test_the_pane_socket_sends_the_run_as_it_is(api, finished_run):
    sid, rid = finished_run
    last = ResearchRun.objects.get(pk=rid).last_seq

    async def first_message(token, run):
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{sid}/runs/pane/?run={run}&token={token}", headers=HEADERS
        )
        connected, code = await communicator.connect(timeout=10)
        message = await communicator.receive_json_from(timeout=10) if connected else code
        await communicator.disconnect()
        return message

    message = async_to_sync(first_message)(api.token, rid)
    assert message["type"] == "fragments" and message["html"].count('<li id="event-') == last
    assert '<select id="run-select"' in message["html"] and 'data-swap="append"' not in message["html"]
    stranger = ContextApi(make_member()[0])
    assert async_to_sync(first_message)(stranger.token, rid) == 4404


def test_another_team_gets_404_from_the_research_pages_and_forms(finished_run):
    sid, rid = finished_run
    stranger = Client()
    stranger.force_login(make_member()[0])
    key = {"idempotency_key": str(uuid.uuid4())}
    assert stranger.get(f"/sessions/{sid}/?run={rid}").status_code == 404
    assert stranger.get(f"/sessions/{sid}/?run={rid}&fragment").status_code == 404
    assert stranger.post(f"/sessions/{sid}/runs/", {"question": "hi", **key}).status_code == 404
    assert stranger.post(f"/sessions/{sid}/runs/{rid}/cancel/", {**key, "idempotency_key": "k2"}).status_code == 404
    assert stranger.post(f"/sessions/{sid}/runs/{rid}/update/", {**key, "idempotency_key": "k3"}).status_code == 404
    assert ResearchRun.objects.filter(session_id=sid).count() == 1


def test_a_watcher_of_the_pane_gets_every_stream_line_once_in_order(api):
    """A page showing no run follows the first one started; each event's fragment holds the stream's
    new lines alone: put together, every stored event once, in seq order."""
    sid = api.create_session(title="Pilot", question=QUESTION)
    api.upload(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})

    async def watch():
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{sid}/runs/pane/?run=&token={api.token}", headers=HEADERS
        )
        assert (await communicator.connect(timeout=10))[0]
        first = await communicator.receive_json_from(timeout=10)
        assert "No run selected." in first["html"] and '<select id="run-select" name="run"' in first["html"]
        rid = await sync_to_async(start)(api, sid)
        seqs, types = [], []
        while "coverage_recorded" not in types:  # the run's last event
            html = (await communicator.receive_json_from(timeout=60))["html"]
            seqs += [int(seq) for seq in re.findall(r'<li id="event-(\d+)"', html)]
            types += re.findall(r'data-type="(\w+)"', html)
        await communicator.disconnect()
        return rid, seqs

    rid, seqs = async_to_sync(watch)()
    assert seqs == list(range(1, ResearchRun.objects.get(pk=rid).last_seq + 1))


def test_a_replaced_file_brings_the_shown_reports_sources_changed_live(api, finished_run):
    sid, rid = finished_run

    async def watch():
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{sid}/runs/pane/?run={rid}&token={api.token}", headers=HEADERS
        )
        assert (await communicator.connect(timeout=10))[0]
        assert "sources-changed" not in (await communicator.receive_json_from(timeout=10))["html"]
        file_id = await sync_to_async(api.file_id)(sid, "valves.md")
        await sync_to_async(api.replace)(sid, file_id, "valves.md", VALVES.replace("18", "19").encode())
        html = ""
        while "sources-changed" not in html:
            html = (await communicator.receive_json_from(timeout=30))["html"]
        await communicator.disconnect()
        return html

    html = async_to_sync(watch)()
    assert html.startswith('<div id="report-view"') and 'data-filename="valves.md" data-status="superseded"' in html
