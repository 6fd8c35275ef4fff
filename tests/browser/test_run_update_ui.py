"""Update report in headless Chromium (issue 25): replace a cited file, see the notice, press Update report,
read the change summary at the top of the new report and open a withdrawn claim's old sentence and cited text.
Real stack: daphne, a Celery worker, Redis, the offline provider."""

import pytest

from research_app.models import ResearchRun
from tests.browser.test_context_ui import login
from tests.browser.test_provenance_ui import new_session, replace_then_show_research, run_shallow
from tests.browser.test_research_ui import open_research
from tests.research.test_research_runs import SURVEY, VALVES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTION = "Did the valve programme reduce water losses in district 3?"
# The losses sentence is gone: the claims made from it are withdrawn.
VALVES_V2 = VALVES.replace("After the replacement, water losses in district 3 fell by 18 percent.\n\n", "")


@pytest.fixture
def member():
    from tests.factories import make_member

    return make_member()[0]


def test_update_report_shows_what_changed_and_keeps_the_old_report(browser, live_server_url, member, artifacts):
    sid = new_session(member, "Pilot", question=QUESTION, files={"valves.md": VALVES, "survey.txt": SURVEY})
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, sid)
    run_shallow(page)
    report = page.locator("#report-view")
    assert "18 percent" in report.inner_text()
    old_rid = page.locator("#run-select").input_value()

    replace_then_show_research(page, "valves.md", VALVES_V2)
    report.locator(".sources-changed").wait_for()
    report.locator(".sources-changed button.update-report").click()

    summary = report.locator(".update-summary")
    summary.wait_for(timeout=90_000)
    # The finished run's last draw (its report with the coverage table) before anything is clicked:
    # a click while the report is drawn again lands on whatever stands there then.
    page.wait_for_function("document.getElementById('run-state').dataset.status === 'completed'", timeout=90_000)
    report.locator("#report-coverage").wait_for()
    assert page.locator("#run-select").input_value() != old_rid
    counts = summary.locator(".update-counts").inner_text()
    assert "withdrawn" in counts and "model call" in counts and "instead of" in counts, counts
    assert "valves.md (superseded)" in summary.inner_text()
    withdrawn = summary.locator(".withdrawn-claims details.update-marker.withdrawn").first
    withdrawn.locator("summary").click()
    opened = withdrawn.inner_text()
    assert "Before" in opened and "18 percent" in opened and "Cited before" in opened, opened
    assert page.locator("#run-select").input_value() != old_rid, "still the update's report"
    assert "18 percent" not in "".join(report.locator(".report-section p, .report-summary").all_inner_texts())
    page.screenshot(path=str(artifacts / "update-report.png"), full_page=True)

    # The earlier report is one click away, as it was.
    summary.locator("button.link-button").click()
    page.wait_for_function(f"document.getElementById('run-select').value === '{old_rid}'")
    report.locator(".sources-changed").wait_for()
    assert "18 percent" in report.inner_text()
    assert ResearchRun.objects.get(pk=old_rid).updates.count() == 1
