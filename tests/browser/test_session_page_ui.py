"""The session page as a daily tool (issue 16), in headless Chromium against the real stack."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from context_app.models import ContextSet
from context_app.notify import context_group_name
from context_app.selectors import manifest_of
from research_app.models import Team
from tests.browser.test_context_ui import ALPHA, BETA, GAMMA, login, open_session, upload, wait_status
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DELTA = "Maintenance log, 2023.\n\nCrews replaced 12 meters in the northern district.\n"

# Every text the banner ever shows, so a counter that only lives for a moment is not missed.
BANNER_RECORDER = """
window.__banners = [];
new MutationObserver(() => {
  const text = document.getElementById('banner').textContent;
  if (window.__banners[window.__banners.length - 1] !== text) window.__banners.push(text);
}).observe(document.getElementById('banner'), {childList: true, subtree: true, characterData: true});
"""


@pytest.fixture(autouse=True)
def observable_parsing(scripted_llm):
    scripted_llm.delay = 0.3  # a Parsing chip and a parse counter live long enough to be seen
    return scripted_llm


@pytest.fixture
def member():
    user, _team = make_member()
    return user


@pytest.fixture
def session_id(member):
    from research_app.services import create_session

    return str(create_session(user=member, title="Leak study", question="Did the valves pay off?").pk)


def banner(page) -> str:
    return page.locator("#banner").inner_text()


def wait_banner(page, start: str, timeout=30_000):
    page.wait_for_function("(start) => document.getElementById('banner').textContent.startsWith(start)", arg=start,
                           timeout=timeout)


def test_the_banner_sums_every_change_since_the_last_parse(browser, live_server_url, member, session_id, artifacts):
    teammate, _ = make_member(team=Team.objects.get(members=member))
    page = login(browser, live_server_url, member)
    watcher = login(browser, live_server_url, teammate)
    open_session(page, live_server_url, session_id)
    open_session(watcher, live_server_url, session_id)
    upload(page, {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA})
    wait_status(page, "gamma.txt", "stale")
    upload(page, {"delta.txt": DELTA})
    wait_status(page, "delta.txt", "stale")
    wait_banner(page, "+4 new, ~0 changed, -0 deleted")
    # The sum is the server's: the teammate's page and a reload say the same.
    wait_banner(watcher, "+4 new, ~0 changed, -0 deleted")
    page.reload()
    page.wait_for_function("document.body.dataset.live === 'connected'")
    assert banner(page).startswith("+4 new, ~0 changed, -0 deleted")
    page.evaluate(BANNER_RECORDER)
    page.click("#parse-now")
    wait_banner(page, "+4 new, ~0 changed, -0 deleted — digests up to date")
    counters = [text.rsplit("parsing ", 1)[1] for text in page.evaluate("window.__banners") if "parsing " in text]
    assert counters, page.evaluate("window.__banners")
    done = [int(counter.split("/")[0]) for counter in counters]
    assert all(counter.split("/")[1] == "4" for counter in counters), counters
    assert done == sorted(done), counters
    wait_banner(watcher, "+4 new, ~0 changed, -0 deleted — digests up to date")
    # The next change after a finished parse starts a new sum.
    page.click('button[aria-label="Delete delta.txt"]')
    wait_banner(page, "+0 new, ~0 changed, -1 deleted")
    wait_banner(watcher, "+0 new, ~0 changed, -1 deleted")


def test_a_push_read_before_a_newer_one_never_moves_a_chip_back(
    browser, live_server_url, member, session_id, artifacts
):
    """Pushes come from several workers: one read while the file parsed can arrive after the one
    that says it is ready. The page must keep the newer state (the DOCX went Ready → Parsing → Ready)."""
    page = login(browser, live_server_url, member)
    open_session(page, live_server_url, session_id)
    upload(page, {"alpha.txt": ALPHA})
    wait_status(page, "alpha.txt", "stale")
    page.click("#parse-now")
    wait_status(page, "alpha.txt", "parsing")
    context_set = ContextSet.objects.get(session_id=session_id)
    read_while_parsing = {"type": "context.updated", **manifest_of(context_set)}
    assert next(f for f in read_while_parsing["files"] if f["filename"] == "alpha.txt")["digest_status"] == "parsing"
    wait_banner(page, "+1 new, ~0 changed, -0 deleted — digests up to date")
    page.evaluate("window.__chips = {}")
    # The late delivery of the earlier read, then a real change on the same socket (ordered after it).
    send = async_to_sync(get_channel_layer().group_send)
    with ThreadPoolExecutor(1) as pool:  # this thread runs Playwright's event loop
        pool.submit(send, context_group_name(session_id), read_while_parsing).result()
    upload(page, {"beta.md": BETA})
    wait_status(page, "beta.md", "stale")
    assert page.evaluate("window.__chips")["alpha.txt"] == ["ready"], page.evaluate("window.__chips")


def test_every_page_has_an_icon(browser, live_server_url, member, session_id, artifacts):
    page = login(browser, live_server_url, member)
    failures = []
    page.on("response", lambda response: response.status >= 400 and failures.append(response.url))
    open_session(page, live_server_url, session_id)
    icon = page.evaluate("document.querySelector('link[rel=icon]') && document.querySelector('link[rel=icon]').href")
    assert icon, "no <link rel=icon>"
    for url in (icon, f"{live_server_url}/favicon.ico"):
        response = page.request.get(url)
        assert response.ok and response.headers["content-type"].startswith("image/"), (url, response.status)
    assert failures == []


def test_preview_opens_the_raw_text_with_the_parsed_context_pane_off(
    browser, live_server_url, member, session_id, artifacts
):
    page = login(browser, live_server_url, member)
    open_session(page, live_server_url, session_id)
    upload(page, {"alpha.txt": ALPHA})
    wait_status(page, "alpha.txt", "stale")
    page.uncheck("#ui-debug-toggle")
    page.wait_for_selector("#digest-pane", state="hidden")
    page.click('button[aria-label="Preview alpha.txt"]')
    dialog = page.locator("#source-dialog")
    dialog.locator(".preview-span").first.wait_for()
    assert dialog.locator("#source-dialog-title").inner_text() == "alpha.txt · raw preview"
    texts = dialog.locator(".preview-span .span-text").all_inner_texts()
    assert texts and "42 valves were installed" in " ".join(texts), texts
    page.click("#source-dialog-close")
    dialog.wait_for(state="hidden")
