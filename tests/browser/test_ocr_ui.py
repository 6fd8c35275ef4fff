"""A scan in the Context tab (issue 28): its chip counts the pages OCR reads, the file states what
it could not read, and the source dialog says a page was read by OCR. Real stack and real Tesseract."""

import pytest

from bench import synthetic_scan
from research_app.services import create_session
from tests.browser.test_context_ui import login, open_session, wait_status
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHIP_TEXTS = """
window.__chipTexts = [];
new MutationObserver(() => {
  const chip = document.querySelector('#file-rows tr[data-filename="minutes.pdf"] .chip');
  const seen = window.__chipTexts;
  if (chip && seen[seen.length - 1] !== chip.textContent) seen.push(chip.textContent);
}).observe(document.getElementById('file-rows'), {childList: true, subtree: true, characterData: true});
"""


def test_a_scan_shows_its_ocr_pages_its_notes_and_read_by_ocr(browser, live_server_url, artifacts):
    member = make_member()[0]
    sid = str(create_session(user=member, title="Scans").pk)
    page = login(browser, live_server_url, member)
    open_session(page, live_server_url, sid)
    page.evaluate(CHIP_TEXTS)
    # Three scanned pages and a blank one at the end (no text, no image): the file names it.
    scan = synthetic_scan.mixed_pdf([("scan", synthetic_scan.paragraphs(3, seed=n)) for n in range(3)] + [("text", [])])
    page.set_input_files("#file-input", [{"name": "minutes.pdf", "mimeType": "application/pdf", "buffer": scan}])
    wait_status(page, "minutes.pdf", "stale", timeout=90_000)

    seen = page.evaluate("window.__chipTexts")
    assert any(text.startswith("OCR page ") and text.endswith("/3") for text in seen), seen
    row = page.locator('#file-rows tr[data-filename="minutes.pdf"]')
    assert row.locator(".extraction-note").all_inner_texts() == ["No text on page 4."]

    page.click('[aria-label="Preview minutes.pdf"]')  # the parsed-context pane's preview, or the dialog
    spans = page.locator(".preview-span:visible")
    spans.first.wait_for()
    badges = page.locator(".preview-span:visible .badge.ocr").all_inner_texts()
    assert len(badges) == spans.count() and badges[0].startswith("read by OCR (confidence "), badges
    assert spans.first.locator(".span-locator").inner_text() == "p. 1"
    page.screenshot(path=str(artifacts / "context-tab-scan.png"), full_page=True)
