"""Two teammates on one session's Research tab: a run one starts appears, live, on the other's page."""

import pytest

from context_app import services as context_services
from context_app.models import ContextSet
from research_app.services import create_session
from tests.browser.test_context_ui import login
from tests.browser.test_research_ui import open_research, run_to_completion, stream_text
from tests.factories import make_member
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every DOM change of the Research tab, as what the tree and the run's status showed then.
RECORD_TREE = """() => {
  window.treeLog = [];
  window.stillThisPage = true;
  const log = () => window.treeLog.push({
    status: document.getElementById('run-state').dataset.status,
    nodes: [...document.querySelectorAll('#node-tree li[data-node]')].map(
      (li) => li.dataset.node + ':' + li.querySelector(':scope > .node .chip').dataset.status),
  });
  new MutationObserver(log).observe(document.getElementById('research-tab'),
    { subtree: true, childList: true, attributes: true, characterData: true });
}"""


def test_a_teammate_sees_a_run_appear_and_its_tree_grow_without_reloading(browser, live_server_url, artifacts):
    """Regression: a run appeared only on the page that started it; a teammate saw it after a reload.

    The offline steps take milliseconds: the tree still shows each stage, the root alone before its children."""
    alice, team = make_member()
    bob = make_member(team)[0]
    session = create_session(user=alice, title="Valve review", question=QUESTION)
    context_services.upload_files(
        ContextSet.objects.get(session=session),
        [context_services.Upload("valves.md", VALVES.encode()), context_services.Upload("survey.txt", SURVEY.encode())],
    )
    sid = str(session.pk)

    starter = login(browser, live_server_url, alice)
    open_research(starter, live_server_url, sid)
    watcher = login(browser, live_server_url, bob)
    open_research(watcher, live_server_url, sid)
    watcher.wait_for_function("document.getElementById('run-select').dataset.live === 'connected'")
    assert watcher.locator("#run-select option").count() == 0
    watcher.evaluate(RECORD_TREE)

    run_to_completion(starter)
    watcher.wait_for_function("document.getElementById('run-state').dataset.status === 'completed'", timeout=30_000)
    watcher.wait_for_selector("#report-view .report-section:not(.coverage)")  # not the coverage record of a running run
    assert watcher.evaluate("window.stillThisPage") is True, "the page was not reloaded"
    assert watcher.locator("#run-select option").count() == 1
    assert QUESTION[:40] in watcher.locator("#run-select option").first.inner_text()

    # The tree grew while the run went on: the root alone first, then its children, before the report.
    log = watcher.evaluate("window.treeLog")
    root_alone = [i for i, e in enumerate(log) if e["nodes"] == ["1:running"] and e["status"] == "running"]
    with_children = [
        i
        for i, e in enumerate(log)
        if "1:decomposed" in e["nodes"] and len(e["nodes"]) >= 3 and e["status"] == "running"
    ]
    assert root_alone and with_children and root_alone[0] < with_children[0], log
    final = watcher.locator("#node-tree li[data-node]").evaluate_all("items => items.map(i => i.dataset.node)")
    assert final == starter.locator("#node-tree li[data-node]").evaluate_all("items => items.map(i => i.dataset.node)")

    # Every event was narrated once, in order, on both pages (the coverage line, told after
    # run_completed, is the last).
    watcher.wait_for_selector('#thought-stream li[data-type="coverage_recorded"]')
    seqs = watcher.eval_on_selector_all("#thought-stream li", "items => items.map(i => +i.dataset.seq)")
    assert seqs == list(range(1, len(seqs) + 1))
    # The starter's stream may still be filling its last events from the API: wait for it, then compare.
    starter.wait_for_function(f"document.querySelectorAll('#thought-stream li').length >= {len(seqs)}")
    assert len(seqs) == starter.locator("#thought-stream li").count()
    assert "Report ready:" in stream_text(watcher)
    watcher.screenshot(path=str(artifacts / "research-tab-teammate.png"), full_page=True)


def test_a_teammates_new_run_is_offered_not_forced_on_a_page_showing_another(browser, live_server_url, artifacts):
    alice, team = make_member()
    bob = make_member(team)[0]
    session = create_session(user=alice, title="Valve review", question=QUESTION)
    context_services.upload_files(
        ContextSet.objects.get(session=session), [context_services.Upload("valves.md", VALVES.encode())]
    )
    sid = str(session.pk)
    starter = login(browser, live_server_url, alice)
    open_research(starter, live_server_url, sid)
    run_to_completion(starter)
    watcher = login(browser, live_server_url, bob)
    open_research(watcher, live_server_url, sid)
    watcher.wait_for_function("document.getElementById('run-select').dataset.live === 'connected'")
    watcher.wait_for_selector("#report-view .report-section:not(.coverage)")  # not the coverage record of a running run
    first = watcher.locator("#run-select").input_value()

    starter.fill("#run-question", "How much did the valve programme cost?")
    run_to_completion(starter)
    notice = watcher.locator("#run-notice")
    notice.wait_for()
    assert alice.username in notice.inner_text() and "How much did the valve programme cost?" in notice.inner_text()
    assert watcher.locator("#run-select").input_value() == first, "the page stays on the run it shows"
    watcher.wait_for_function("document.querySelectorAll('#run-select option').length === 2")
    notice.locator("button", has_text="Show it").click()
    notice.wait_for(state="hidden")
    watcher.wait_for_function("document.getElementById('run-state').dataset.status === 'completed'")
    assert watcher.locator("#run-select").input_value() != first
    assert watcher.locator("#report-view .report-title").inner_text() == "How much did the valve programme cost?"
