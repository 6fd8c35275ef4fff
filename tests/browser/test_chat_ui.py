"""The chat panel renders the answer while it is written (conversation:delta), then the final message; a
request card keeps what a person types into it while the chat goes on around it; without JavaScript the
chat is on the page and its forms work."""

import pytest

from conversation_app import jobs
from conversation_app.models import ChatMessage, ContextRequest
from tests.browser.test_context_ui import login_without_script
from tests.browser.test_provenance_ui import open_chat
from tests.factories import make_member, wait_until
from tests.research.test_research_runs import SURVEY, VALVES
from workspaces.jobs import queue_job

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
    attach_note(page, card)
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


def attach_note(page, card) -> None:
    """Attach the card's note; the supply must be sent and accepted (not refused as an empty note)."""
    with page.expect_response(lambda r: r.url.endswith("/context-supply") and r.request.method == "POST") as sent:
        card.locator("button", has_text="Attach note").click()
    assert sent.value.status == 200, sent.value.text()


def test_a_note_being_typed_into_a_card_stays_while_the_chat_goes_on(browser, live_server_url):
    """Every chat event reloads the history and renders it again: an open card is kept as it is, and
    one built again (its reminder) starts from what was typed. The card used to be rebuilt empty on
    every event, so a note typed just after the card appeared was lost to the events of its own
    question and "Attach note" answered "Write the note first." (test_the_answer_appears_… timed out)."""
    sid, page = open_chat(browser, live_server_url, make_member()[0], {"valves.md": VALVES, "survey.txt": SURVEY})
    page.fill("#chat-input", "How did maintenance staffing change in the workshop?")
    page.click("#chat-send")
    card = page.locator(".request-card")
    card.wait_for()
    note = "The workshop went from 6 to 4 maintenance staff in 2022."
    card.locator("textarea").fill(note)
    page.evaluate("window.typedInto = document.querySelector('.request-card textarea')")

    # Another question is answered at once while the card waits: its events reload the history.
    page.fill("#chat-input", "How much did the valve programme cost?")
    page.click("#chat-send")
    page.locator("#chat-log li.assistant", has_text="1.2 million euros").wait_for()
    assert page.evaluate("document.querySelector('.request-card textarea') === window.typedInto"), "card kept"
    assert card.locator("textarea").input_value() == note

    # The reminder changes the card: it is built again, with the note.
    request = ContextRequest.objects.get(conversation__session_id=sid)
    queue_job(jobs.REMIND, str(request.pk))
    card.locator("text=(reminder sent)").wait_for()
    assert card.locator("textarea").input_value() == note

    attach_note(page, card)
    answer = page.locator("#chat-log li.assistant", has_text="6 to 4 maintenance staff")
    answer.wait_for(timeout=60_000)  # the resumed turn runs on the Celery worker
    assert page.locator(".request-card").count() == 0


def test_the_chat_is_on_the_page_and_answers_its_forms_with_javascript_disabled(browser, live_server_url):
    """The chat arrives rendered with the page (issue 23): its answer with its source chip, an open request
    card; its forms post without script (Idempotency-Key in a field) and the page comes back with the result."""
    member = make_member()[0]
    sid, page = open_chat(browser, live_server_url, member, {"valves.md": VALVES, "survey.txt": SURVEY})
    page.fill("#chat-input", "How much did the valve programme cost?")
    page.click("#chat-send")
    page.locator("#chat-log li.assistant", has_text="1.2 million euros").wait_for()
    page.context.close()

    page = login_without_script(browser, live_server_url, member)
    context = page.context
    page.goto(f"{live_server_url}/sessions/{sid}/")
    answer = page.locator("#chat-log li.assistant", has_text="1.2 million euros")
    assert answer.is_visible()
    assert answer.locator('.source-link[data-source="valves.md::S2"]').count() >= 1

    page.fill("#chat-input", "How did maintenance staffing change in the workshop?")
    with page.expect_navigation():  # a real form post: 303 back to the page
        page.click("#chat-send")
    question = page.locator("#chat-log li.user", has_text="maintenance staffing")
    assert question.is_visible()
    wait_until(lambda: ContextRequest.objects.filter(conversation__session_id=sid).exists(), message="a request")
    page.reload()
    card = page.locator(".request-card")
    card.locator("textarea").fill("The workshop went from 6 to 4 maintenance staff in 2022.")
    # A form post too: the reload below must not start while its navigation is under way ("Not attached to
    # an active page").
    with page.expect_navigation():
        card.locator("button", has_text="Attach note").click()
    resumed = ChatMessage.objects.filter(content__contains="6 to 4 maintenance staff", role="assistant")
    wait_until(resumed.exists, message="the resumed answer")
    page.reload()
    assert page.locator(".request-card").count() == 0
    assert page.locator("#chat-log li.assistant", has_text="6 to 4 maintenance staff").is_visible()
    context.close()
