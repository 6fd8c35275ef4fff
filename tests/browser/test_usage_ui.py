"""The usage panel in headless Chromium (issue 14): the ledger after a parse, and after a run in the Research tab."""

import pytest

from llm_platform.models import LLMCall
from tests.browser.test_context_ui import assert_no_horizontal_scroll, login, open_session, wait_status
from tests.browser.test_research_ui import run_to_completion, session_id  # noqa: F401  (fixture)
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def member():
    return make_member()[0]


def task_calls(page, task: str) -> str:
    return page.locator(f'#usage-rows tr[data-task="{task}"] td').nth(1).inner_text()


def wait_for_summary(page, calls: int):
    page.wait_for_function(
        "calls => document.getElementById('usage-summary').textContent.startsWith(`${calls} calls`)",
        arg=calls,
        timeout=30_000,
    )


def test_the_usage_panel_shows_the_ledger_after_a_parse_and_after_a_run(
    browser, live_server_url, member, session_id, artifacts  # noqa: F811
):
    page = login(browser, live_server_url, member)
    open_session(page, live_server_url, session_id)
    page.wait_for_function("document.getElementById('usage-summary').textContent.startsWith('0 calls')")

    page.click("#parse-now")
    for name in ("valves.md", "survey.txt"):
        wait_status(page, name, "ready")
    calls = LLMCall.objects.filter(session_id=session_id)
    page.wait_for_function(
        "() => document.querySelector('#usage-rows tr[data-task=\"aggregate_digest\"]') !== null", timeout=30_000
    )
    wait_for_summary(page, calls.count())
    page.click("#usage-details summary")
    assert task_calls(page, "per_file_digest") == str(calls.filter(task="per_file_digest").count())
    assert task_calls(page, "aggregate_digest") == str(calls.filter(task="aggregate_digest").count())
    # Words, not task ids; and $0.00 says why (issue 27).
    assert page.locator('#usage-rows tr[data-task="per_file_digest"] td').first.inner_text() == "File digests"
    assert "cost nothing" in page.locator("#usage-notes").inner_text()
    page.screenshot(path=str(artifacts / "usage-after-parse.png"), full_page=True)

    page.click("#tab-research")
    page.wait_for_selector("#research-tab", state="visible")
    run_to_completion(page)
    run_calls = LLMCall.objects.filter(run_id__isnull=False, session_id=session_id)
    assert run_calls.exists()
    page.wait_for_function(
        "calls => document.getElementById('run-usage').textContent.startsWith(`This run: ${calls} calls`)",
        arg=run_calls.count(),
        timeout=30_000,
    )
    wait_for_summary(page, calls.count())
    assert task_calls(page, "report") == "1"
    assert page.locator("#usage-total td").first.inner_text() == "Total"
    page.screenshot(path=str(artifacts / "usage-after-run.png"), full_page=True)

    page.set_viewport_size({"width": 400, "height": 800})  # a phone: the open table scrolls inside its panel
    assert_no_horizontal_scroll(page)
