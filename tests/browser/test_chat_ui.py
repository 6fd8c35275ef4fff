"""The chat panel renders the answer while it is written (conversation:delta), then the final message."""

import pytest

from tests.browser.test_provenance_ui import open_chat
from tests.factories import make_member
from tests.research.test_research_runs import SURVEY, VALVES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every state of the chat log, as its items showed it: class, and the text of the answer.
RECORD_LOG = """() => {
  window.chatLog = [];
  const log = () => window.chatLog.push([...document.querySelectorAll('#chat-log li')].map((li) => ({
    cls: li.className, text: li.querySelector('.content')?.textContent || '',
    markup: li.classList.contains('draft') ? li.querySelector('.content').children.length : 0,
  })));
  new MutationObserver(log).observe(document.getElementById('chat-log'),
    { subtree: true, childList: true, characterData: true });
}"""


def test_the_answer_appears_sentence_by_sentence_before_the_final_message_replaces_it(
    browser, live_server_url, artifacts
):
    _sid, page = open_chat(browser, live_server_url, make_member()[0], {"valves.md": VALVES, "survey.txt": SURVEY})
    page.fill("#chat-input", "How did maintenance staffing change in the workshop?")
    page.click("#chat-send")
    card = page.locator(".request-card")
    card.wait_for()
    page.evaluate(RECORD_LOG)
    # The answer quotes the note's two sentences: the offline provider streams them one at a time.
    note = "The workshop went from 6 to 4 maintenance staff in 2022. Two <b>fitters</b> retired."
    card.locator("textarea").fill(note)
    card.locator("button", has_text="Attach note").click()
    answer = page.locator("#chat-log li.assistant").first
    answer.wait_for(timeout=60_000)  # the resumed turn runs on the Celery worker: slow on a loaded machine
    final = answer.locator(".content").inner_text()
    assert "6 to 4 maintenance staff" in final and "Two <b>fitters</b> retired." in final, final
    assert page.locator("#chat-log li.draft").count() == 0, "the final message replaced the draft"

    drafts = [item["text"] for state in page.evaluate("window.chatLog") for item in state if item["cls"] == "draft"]
    # The draft grew while the answer was written: a first sentence alone, then more, up to the final text,
    # and what the note's writer typed as markup stayed text.
    assert drafts and drafts[0] and len(set(drafts)) >= 2, drafts
    assert all(final.startswith(text) for text in drafts), (drafts, final)
    assert drafts[0] != final
    markup = [item["markup"] for state in page.evaluate("window.chatLog") for item in state]
    assert not any(markup), "a delta is shown as text, never as markup"
    page.screenshot(path=str(artifacts / "chat-streamed.png"))
