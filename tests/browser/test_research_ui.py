"""The Research tab in headless Chromium: start a run, watch the tree and thought stream, read the report."""

import subprocess

import pytest

from context_app import services as context_services
from context_app.models import ContextSet
from research_app.models import ResearchRun
from research_app.services import create_session
from tests.browser.test_context_ui import assert_no_horizontal_scroll, login, login_without_script, preview_spans
from tests.factories import make_member, wait_until
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def member():
    return make_member()[0]


@pytest.fixture
def session_id(member):
    session = create_session(user=member, title="Valve review", question=QUESTION)
    context_set = ContextSet.objects.get(session=session)
    context_services.upload_files(
        context_set,
        [context_services.Upload("valves.md", VALVES.encode()), context_services.Upload("survey.txt", SURVEY.encode())],
    )
    return str(session.pk)


def open_research(page, live_server_url, sid):
    page.goto(f"{live_server_url}/sessions/{sid}/")
    page.wait_for_function("document.body.dataset.live === 'connected'")
    page.click("#tab-research")
    page.wait_for_selector("#research-tab", state="visible")


def run_to_completion(page):
    page.click("#start-run")
    page.wait_for_function("document.getElementById('run-state').dataset.status === 'completed'", timeout=60_000)
    page.wait_for_selector("#report-view .report-section:not(.coverage)")  # not the coverage record of a running run


def stream_text(page) -> str:
    return page.locator("#thought-stream").inner_text()


def test_a_run_grows_its_tree_narrates_and_writes_a_cited_report(
    browser, live_server_url, member, session_id, artifacts
):
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, session_id)
    assert page.locator("#run-question").input_value() == QUESTION
    run_to_completion(page)
    # The coverage line is the stream's last event, told just after run_completed: counted before it
    # arrived, the stream replayed on reload below held one more line than `seqs`.
    page.wait_for_selector('#thought-stream li[data-type="coverage_recorded"]')

    stream = stream_text(page)
    for said in (
        "Parsing the session's context: 2 files",
        "Parsing context file 2/2…",
        "Gave node 1 the full user context",
        "Prepared context slice for node 1.1",
        "Attached full user context for report writing",
        "Report ready:",
    ):
        assert said in stream, (said, stream)
    seqs = page.eval_on_selector_all("#thought-stream li", "items => items.map(i => +i.dataset.seq)")
    assert seqs == list(range(1, len(seqs) + 1)), "every stored event narrated once, in order"

    assert page.locator('#node-tree li[data-node="1"] > .node .chip').inner_text() == "Split"
    assert page.locator('#node-tree li[data-node="1"] li[data-node="1.1"]').count() == 1
    page.click('#node-tree li[data-node="1.1"] > .node')
    page.locator("#node-detail h3", has_text="1.1").wait_for()

    report = page.locator("#report-view")
    assert report.locator(".report-title").inner_text() == QUESTION
    citation = report.locator("a.citation").first
    target = citation.get_attribute("href")
    assert report.locator(f"li{target}").count() == 1, "a citation points at its reference"
    assert "offline extractive mode" in page.locator("#report-meta").inner_text()
    page.screenshot(path=str(artifacts / "research-tab-completed.png"), full_page=True)

    # Beside the report, plain download links to its files; the PDF's first page drawn for a reader to see.
    rid = page.input_value("#run-select")
    links = page.locator("#report-downloads a")
    assert [links.nth(i).get_attribute("href") for i in range(3)] == [
        f"/api/runs/{rid}/report.{kind}" for kind in ("md", "docx", "pdf")
    ]
    assert all(links.nth(i).get_attribute("download") == "" for i in range(3))
    with page.expect_download() as download:
        page.click("#download-pdf")
    name = download.value.suggested_filename
    assert name.startswith("Did the valve programme reduce water losses") and name.endswith(".pdf"), name
    page_png = artifacts / "report-export-page1"
    subprocess.run(["pdftoppm", "-png", "-r", "80", "-singlefile", download.value.path(), page_png], check=True)
    assert page_png.with_suffix(".png").stat().st_size > 10_000

    # A SourceRef opens the file's raw preview at the span, highlighted.
    source = report.locator(".report-section .source-link").first
    ref = source.get_attribute("data-source")
    source.click()
    highlighted = page.locator("#source-dialog .preview-span.highlight")
    highlighted.wait_for()
    filename, span_id = ref.split("::")
    assert highlighted.get_attribute("data-span-id") == span_id
    spans = preview_spans(page, session_id, filename)
    assert highlighted.locator(".span-text").inner_text() == next(s["text"] for s in spans if s["span_id"] == span_id)
    page.screenshot(path=str(artifacts / "research-tab-source.png"))
    page.click("#source-dialog-close")

    # Under the report, what the run read: each file of the session once; a file opens its text.
    page.wait_for_selector('#thought-stream li[data-type="coverage_recorded"]')
    last = page.locator("#thought-stream li").last
    assert last.get_attribute("data-type") == "coverage_recorded"
    assert last.inner_text().split("\n")[-1].startswith("Coverage: cited "), last.inner_text()
    rows = report.locator("#report-coverage tbody tr")
    rows.first.wait_for()
    assert sorted(rows.nth(i).get_attribute("data-filename") for i in range(rows.count())) == [
        "survey.txt",
        "valves.md",
    ]
    assert "cited" in report.locator("#report-coverage .coverage-counts").inner_text()
    report.locator("#report-coverage").screenshot(path=str(artifacts / "research-tab-coverage.png"))
    report.locator('#report-coverage tr[data-filename="valves.md"] .source-link').click()
    page.locator("#source-dialog .preview-span.highlight").wait_for()
    assert page.locator("#source-dialog-title").inner_text().startswith("valves.md")
    page.click("#source-dialog-close")

    # Reloading shows the same run, its stream replayed from the stored events.
    page.reload()
    page.wait_for_selector("#research-tab", state="visible")  # the default tab once a session has runs
    page.wait_for_function(f"document.querySelectorAll('#thought-stream li').length === {len(seqs)}")


def test_ui_debug_shows_the_context_each_step_received(browser, live_server_url, member, session_id, artifacts):
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, session_id)
    run_to_completion(page)
    debug = page.locator("#run-debug")
    assert debug.is_visible()
    assert page.locator("#run-debug-title").inner_text() == "Full user context attached for the report"
    page.uncheck("#ui-debug-toggle")
    debug.wait_for(state="hidden")
    page.check("#ui-debug-toggle")
    debug.wait_for(state="visible")
    page.set_viewport_size({"width": 800, "height": 900})
    assert_no_horizontal_scroll(page)
    page.screenshot(path=str(artifacts / "research-tab-800px.png"), full_page=True)


def test_a_hostile_question_renders_as_text(browser, live_server_url, member, session_id, artifacts):
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, session_id)
    hostile = "<img src=x onerror=alert(1)> did the valves <script>alert(2)</script> reduce losses?"
    page.fill("#run-question", hostile)
    run_to_completion(page)
    assert hostile in page.locator("#thought-stream").inner_text()
    assert page.locator("#report-view .report-title").inner_text() == hostile
    assert page.evaluate("document.querySelectorAll('#research-tab img, #research-tab script').length") == 0


def test_a_bad_limit_shows_the_servers_message(browser, live_server_url, member, session_id, artifacts):
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, session_id)
    page.click(".limits summary")
    page.evaluate("document.getElementById('limit-nodes').removeAttribute('max')")
    page.fill("#limit-nodes", "999")
    page.click("#start-run")
    error = page.locator("#run-error")
    error.wait_for()
    assert error.inner_text().startswith("max_nodes must be an integer from 1 to")


def test_the_chat_asks_for_missing_context_with_a_card_and_answers_once_given(
    browser, live_server_url, member, session_id, artifacts
):
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, session_id)
    run_to_completion(page)  # parses the files and writes a report: the chat's material
    page.wait_for_function("document.getElementById('chat-log').dataset.live === 'connected'")
    page.fill("#chat-input", "How much did the valve programme cost?")
    page.click("#chat-send")
    answer = page.locator("#chat-log li.assistant").first
    answer.wait_for()
    assert "1.2 million euros" in answer.inner_text()
    answer.locator('.content .source-link[data-source="valves.md::S2"]').first.click()
    page.locator("#source-dialog .preview-span.highlight").wait_for()
    page.click("#source-dialog-close")

    page.fill("#chat-input", "How did maintenance staffing change in the workshop?")
    page.click("#chat-send")
    card = page.locator(".request-card")
    card.wait_for()
    assert "maintenance staffing" in card.inner_text()
    page.screenshot(path=str(artifacts / "research-tab-chat-card.png"), full_page=True)
    # The user goes on asking while the card waits: the next question is answered at once.
    page.fill("#chat-input", "How much did the valve programme cost?")
    page.click("#chat-send")
    page.wait_for_function("document.querySelectorAll('#chat-log li.assistant').length === 2")
    assert "1.2 million euros" in page.locator("#chat-log li.assistant").last.inner_text()
    assert card.is_visible()
    card.locator("textarea").fill("The workshop went from 6 to 4 maintenance staff in 2022.")
    card.locator("button", has_text="Attach note").click()
    card.wait_for(state="detached")
    page.wait_for_function("document.querySelectorAll('#chat-log li.assistant').length === 3")
    last = page.locator("#chat-log li.assistant").last
    assert "6 to 4 maintenance staff" in last.inner_text()
    assert "supplied note" in last.inner_text()
    page.screenshot(path=str(artifacts / "research-tab-chat.png"), full_page=True)
    # The history (and the request it went through) reloads.
    page.reload()
    page.wait_for_function("document.querySelectorAll('#chat-log li').length === 6")
    assert page.locator(".request-card").count() == 0


def test_the_research_tab_works_with_javascript_disabled(browser, live_server_url, member, session_id):
    """Issue 23: the tab arrives rendered with its run; Start research is a real form post (303 back to
    the page showing the new run); a node's link opens its detail (:target); another run is a GET form."""
    page = login_without_script(browser, live_server_url, member)
    context = page.context
    page.goto(f"{live_server_url}/sessions/{session_id}/")
    assert page.locator("#run-select option").count() == 0
    page.click(".limits summary")
    page.fill("#limit-depth", "0")
    page.click("#start-run")
    first = ResearchRun.objects.get(session_id=session_id)
    assert page.url.endswith(f"?run={first.pk}#research-tab")
    # The run's last event (its coverage line) is stored just after it is completed.
    wait_until(lambda: first.events.filter(type="coverage_recorded").exists(), message="the run")
    page.reload()
    assert page.locator("#run-state").get_attribute("data-status") == "completed"
    assert page.locator("#report-view .report-title").inner_text() == QUESTION
    assert page.locator("#thought-stream li").count() == ResearchRun.objects.get(pk=first.pk).last_seq
    assert not page.locator("#node-detail").is_visible()
    page.click('#node-tree li[data-node="1"] > .node')
    page.locator("#node-detail h3", has_text="1 · ").wait_for()

    page.fill("#run-question", "How much did the valve programme cost?")
    page.click("#start-run")
    second = ResearchRun.objects.exclude(pk=first.pk).get(session_id=session_id)
    wait_until(lambda: ResearchRun.objects.get(pk=second.pk).is_finished, message="the second run")
    page.select_option("#run-select", str(first.pk))
    page.click("#run-choice button")  # the <noscript> button of the GET form
    assert page.url.split("#")[0].endswith(f"?run={first.pk}")
    assert page.locator("#report-view .report-title").inner_text() == QUESTION
    context.close()
