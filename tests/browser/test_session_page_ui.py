"""The session page as a daily tool (issue 16), in headless Chromium against the real stack."""

import csv
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from context_app.models import ContextSet
from context_app.notify import context_group_name
from context_app.selectors import manifest_of
from tests.browser.test_context_ui import (  # noqa: F401  (member, session_id, observable_parsing: fixtures)
    ALPHA,
    BETA,
    GAMMA,
    assert_no_horizontal_scroll,
    login,
    member,
    observable_parsing,
    open_session,
    session_id,
    upload,
    wait_status,
)
from tests.browser.test_research_ui import open_research
from tests.factories import make_member
from workspaces.models import Team

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


def banner(page) -> str:
    return page.locator("#banner").inner_text()


def wait_banner(page, start: str, timeout=30_000):
    try:
        page.wait_for_function(
            "(start) => document.getElementById('banner').textContent.startsWith(start)", arg=start, timeout=timeout
        )
    except Exception:
        pytest.fail(f"the banner says {banner(page)!r}, not {start!r}…")


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
    page.click('[aria-label="Preview alpha.txt"]')
    dialog = page.locator("#source-dialog")
    dialog.locator(".preview-span").first.wait_for()
    assert dialog.locator("#source-dialog-title").inner_text() == "alpha.txt · raw preview"
    texts = dialog.locator(".preview-span .span-text").all_inner_texts()
    assert texts and "42 valves were installed" in " ".join(texts), texts
    page.click("#source-dialog-close")
    dialog.wait_for(state="hidden")


DATA_CSV = Path(__file__).parents[1] / "fixtures" / "data.csv"
MEMO = (
    "Rollout Budget Memo\n\nThe rollout costs 4.2 million euros in 2024.\n\n"
    "Next Steps\n\nThe board must approve the budget by March 2024.\n"
)


def upload_bytes(page, name: str, data: bytes, mime: str):
    page.set_input_files("#file-input", [{"name": name, "mimeType": mime, "buffer": data}])


def digest_claims(page, filename: str) -> list[str]:
    page.click(f'button[aria-label="View digest of {filename}"]')
    page.locator("#digest-view h3", has_text=filename).wait_for()
    page.wait_for_selector("#digest-view .fact")
    return page.locator("#digest-view .fact > p").all_inner_texts()


def test_offline_facts_are_statements_and_a_csv_digest_states_its_table(
    browser, live_server_url, member, session_id, artifacts
):
    with open(DATA_CSV, newline="") as handle:
        rows = list(csv.DictReader(handle))
    page = login(browser, live_server_url, member)
    open_session(page, live_server_url, session_id)
    upload_bytes(page, "data.csv", DATA_CSV.read_bytes(), "text/csv")
    wait_status(page, "data.csv", "stale")
    upload_bytes(page, "memo.txt", MEMO.encode(), "text/plain")
    wait_status(page, "memo.txt", "stale")
    page.click("#parse-now")
    wait_banner(page, "+2 new, ~0 changed, -0 deleted — digests up to date")

    memo_claims = digest_claims(page, "memo.txt")
    assert "Rollout Budget Memo" not in memo_claims and "Next Steps" not in memo_claims, memo_claims
    assert all(claim.endswith(".") for claim in memo_claims), memo_claims

    claims = digest_claims(page, "data.csv")
    assert (
        claims[0] == f"data.csv is a table of {len(rows)} rows and 4 columns: district, year, losses_percent, bursts."
    )
    bursts = [int(row["bursts"]) for row in rows]
    assert any(
        claim.startswith(f"bursts ranges from {min(bursts)} (row ") and f"is {sum(bursts)}," in claim
        for claim in claims
    ), claims
    page.screenshot(path=str(artifacts / "session-csv-digest.png"), full_page=True)

    # A CSV fact's source opens its rows (not the header), the column names shown above them.
    page.locator("#digest-view .fact .source-link").first.click()
    highlighted = page.locator("#digest-view .preview-span.highlight")
    highlighted.wait_for()
    assert highlighted.locator(".span-locator").inner_text().startswith("rows ")
    columns = highlighted.locator(".span-columns")
    assert columns.inner_text() == "district, year, losses_percent, bursts"
    assert columns.is_visible() and in_view(page, "#digest-view .preview-span.highlight .span-columns")


def in_view(page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => {
            const box = document.querySelector(selector).getBoundingClientRect();
            return box.top >= 0 && box.bottom <= window.innerHeight;
        }""",
        selector,
    )


def test_a_csv_reference_in_a_report_opens_the_rows_it_cites(browser, live_server_url, member, artifacts):
    from context_app import services as context_services
    from research_app.services import create_session

    session = create_session(user=member, title="Burst records", question="How many bursts did Harbour record?")
    context_services.upload_files(
        ContextSet.objects.get(session=session), [context_services.Upload("data.csv", DATA_CSV.read_bytes())]
    )
    page = login(browser, live_server_url, member)
    page.goto(f"{live_server_url}/sessions/{session.pk}/")
    page.wait_for_function("document.body.dataset.live === 'connected'")
    page.click("#tab-research")
    page.click("#start-run")
    page.wait_for_function("document.getElementById('run-state').dataset.status === 'completed'", timeout=60_000)
    reference = page.locator('#report-view .references li:has(.source-link[data-source^="data.csv::"])').first
    reference.wait_for()
    reference.locator(".source-link").click()
    highlighted = page.locator("#source-dialog .preview-span.highlight")
    highlighted.wait_for()
    assert highlighted.locator(".span-locator").inner_text().startswith("rows "), highlighted.inner_text()
    assert highlighted.locator(".span-columns").inner_text() == "district, year, losses_percent, bursts"
    assert in_view(page, "#source-dialog .preview-span.highlight .span-columns")
    page.screenshot(path=str(artifacts / "session-csv-reference.png"))


# Every text the progress line shows, and every count of tree nodes, as they happen.
PROGRESS_RECORDER = """
window.__progress = [];
window.__nodeCounts = [];
new MutationObserver(() => {
  const text = document.getElementById('run-progress').textContent;
  if (text && window.__progress[window.__progress.length - 1] !== text) window.__progress.push(text);
  const nodes = document.querySelectorAll('#node-tree li[data-node]').length;
  if (window.__nodeCounts[window.__nodeCounts.length - 1] !== nodes) window.__nodeCounts.push(nodes);
}).observe(document.getElementById('research-tab'), {childList: true, subtree: true, characterData: true});
"""
NODES_LINE = re.compile(
    r"^Nodes: (\d+) done · (\d+) open · limit (\d+) · (\d+) model calls? · ([\d,]+) tokens · "
    r"(\d+:\d\d elapsed|took \d+\.\d s|took \d+:\d\d)$"
)


def session_with_valves_and_survey(member) -> str:
    from context_app import services as context_services
    from research_app.services import create_session
    from tests.research.test_research_runs import QUESTION, SURVEY, VALVES

    session = create_session(user=member, title="Valve review", question=QUESTION)
    context_services.upload_files(
        ContextSet.objects.get(session=session),
        [context_services.Upload("valves.md", VALVES.encode()), context_services.Upload("survey.txt", SURVEY.encode())],
    )
    return str(session.pk)


def wait_run_status(page, status: str):
    page.wait_for_function(f"document.getElementById('run-state').dataset.status === '{status}'", timeout=60_000)


def test_a_run_shows_its_progress_as_it_goes(browser, live_server_url, member, artifacts):
    sid = session_with_valves_and_survey(member)
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, sid)
    page.evaluate(PROGRESS_RECORDER)
    page.click("#start-run")
    wait_run_status(page, "completed")
    page.wait_for_selector("#report-view .report-section:not(.coverage)")  # not the coverage record of a running run
    progress = page.evaluate("window.__progress")
    counters = [text for text in progress if text.startswith("Parsing context: ")]
    assert any(re.match(r"Parsing context: [12]/2 files · \d+:\d\d elapsed", text) for text in counters), progress
    lines = [NODES_LINE.match(text) for text in progress if text.startswith("Nodes: ")]
    assert lines and all(lines), progress
    done = [int(line[1]) for line in lines]
    calls = [int(line[4]) for line in lines]
    tokens = [int(line[5].replace(",", "")) for line in lines]
    assert done == sorted(done) and calls == sorted(calls) and tokens == sorted(tokens), progress
    assert any(int(line[2]) > 0 for line in lines), "nodes were seen open"
    # The tree grew node by node, not all at once at the end.
    counts = [count for count in page.evaluate("window.__nodeCounts") if count]
    assert len(set(counts)) >= 2 and counts == sorted(counts), counts
    final = NODES_LINE.match(page.locator("#run-progress").inner_text())
    total_nodes = page.locator("#node-tree li[data-node]").count()
    assert (int(final[1]), int(final[2])) == (total_nodes, 0)
    assert int(final[4]) > 0 and int(final[5].replace(",", "")) > 0
    assert final[6].startswith("took "), "a finished run says how long it took, not a clock stopped at 0:00"
    # A reload shows the same line from the stored events and the snapshot.
    page.reload()
    page.wait_for_selector("#research-tab", state="visible")
    page.wait_for_function("document.getElementById('run-progress').textContent.startsWith('Nodes: ')")
    again = NODES_LINE.match(page.locator("#run-progress").inner_text())
    assert again.groups()[:5] == final.groups()[:5]


WIDTHS = (1400, 800, 390)


def top_of(page, selector: str) -> float:
    return page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY", selector)


def assert_on_first_screen(page, selector: str):
    """Visible, and its top within the first screen of the page (no scrolling past the tree to reach it)."""
    assert page.locator(selector).is_visible(), selector
    height = page.viewport_size["height"]
    assert top_of(page, selector) < height - 60, (selector, top_of(page, selector), height)


def show_view(page, view: str, width: int):
    """Below 1200 px the report and the chat are one tap away; wide, they are simply there."""
    if width < 1200:
        page.click(f"#view-{view}")


def ask(page, question: str) -> None:
    page.fill("#chat-input", question)
    page.click("#chat-send")


def excerpt_widths(page) -> list[tuple[float, float]]:
    """(width of the excerpt's text, width of its card's content box) in px, for each suggested excerpt shown."""
    return page.evaluate("""() => [...document.querySelectorAll('.request-card .suggestion p')].map((text) => {
        const card = text.closest('.request-card'), style = getComputedStyle(card);
        const inner = card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        return [text.getBoundingClientRect().width, inner];
    })""")


def test_report_and_chat_are_one_tap_away_at_every_width(browser, live_server_url, member, artifacts):
    sid = session_with_valves_and_survey(member)
    page = login(browser, live_server_url, member)
    page.set_viewport_size({"width": 1400, "height": 900})
    open_session(page, live_server_url, sid)
    page.click("#parse-now")
    wait_banner(page, "+2 new, ~0 changed, -0 deleted — digests up to date")
    page.wait_for_selector("#upload-progress li", state="detached")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        assert_no_horizontal_scroll(page)
        assert_on_first_screen(page, "#banner")  # the parse's state, above the file list
        page.screenshot(path=str(artifacts / f"session-{width}px-after-parse.png"), full_page=True)

    page.set_viewport_size({"width": 1400, "height": 900})
    page.click("#tab-research")
    page.click("#start-run")
    page.wait_for_function("document.querySelectorAll('#node-tree li[data-node]').length >= 2", timeout=60_000)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        show_view(page, "tree", width)
        assert_on_first_screen(page, "#run-progress")
        page.screenshot(path=str(artifacts / f"session-{width}px-during-run.png"))
    page.set_viewport_size({"width": 1400, "height": 900})
    wait_run_status(page, "completed")
    page.wait_for_selector("#report-view .report-section:not(.coverage)")  # not the coverage record of a running run
    nodes = page.locator("#node-tree li[data-node]").count()
    assert nodes >= 3, nodes
    # A narrow select cuts its text's end: the run's status comes first, its question last.
    assert page.locator("#run-select option:checked").inner_text().startswith("Completed · ")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        page.evaluate("window.scrollTo(0, 0)")
        assert_no_horizontal_scroll(page)
        show_view(page, "tree", width)
        page.screenshot(path=str(artifacts / f"session-{width}px-after-run-tree.png"))
        show_view(page, "report", width)
        assert_on_first_screen(page, "#report-view .report-title")
        page.screenshot(path=str(artifacts / f"session-{width}px-after-run-report.png"))
        show_view(page, "chat", width)
        assert_on_first_screen(page, "#chat-input")

    # A chat answered with its sources, then a question the files half answer: a card of suggested excerpts.
    page.set_viewport_size({"width": 1400, "height": 900})
    ask(page, "How much did the valve programme cost?")
    page.locator("#chat-log li.assistant").wait_for()
    ask(page, "How many households in district 3 reported leaks?")
    page.locator(".request-card .suggestion").first.wait_for()
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        show_view(page, "chat", width)
        assert_no_horizontal_scroll(page)
        # Issue 27: at 1400 px the excerpts were a column about 90 px wide beside their buttons.
        excerpts = excerpt_widths(page)
        assert excerpts and all(excerpt >= 0.6 * card for excerpt, card in excerpts), (width, excerpts)
        page.evaluate("document.querySelector('.request-card').scrollIntoView({block: 'nearest'})")  # live re-renders
        page.screenshot(path=str(artifacts / f"session-{width}px-after-run-chat.png"))

    # The views are a keyboard tab list like the others: arrows move and select.
    page.set_viewport_size({"width": 800, "height": 900})
    page.focus("#view-chat")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.id") == "view-stream"
    assert page.locator("#stream-pane").is_visible() and not page.locator("#chat-pane").is_visible()
    page.keyboard.press("Home")
    assert page.locator("#tree-pane").is_visible() and not page.locator("#report-pane").is_visible()

    # The Context tab of a session with a finished run, at each width (looked at: test-artifacts/).
    page.click("#tab-context")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
        page.evaluate("window.scrollTo(0, 0)")
        assert_no_horizontal_scroll(page)
        page.screenshot(path=str(artifacts / f"session-{width}px-after-run-context.png"), full_page=True)


# Every note shown beside a file, per file.
NOTE_RECORDER = """
window.__notes = {};
new MutationObserver(() => {
  for (const row of document.querySelectorAll('#file-rows tr')) {
    const note = row.querySelector('.file-note');
    if (note) (window.__notes[row.dataset.filename] ||= []).push(note.textContent);
  }
}).observe(document.getElementById('file-rows'), {childList: true, subtree: true});
"""


def test_a_file_the_server_re_queues_says_why_its_chip_moved_back(
    browser, live_server_url, member, session_id, artifacts
):
    from context_app.models import DigestCacheEntry

    page = login(browser, live_server_url, member)
    open_session(page, live_server_url, session_id)
    upload(page, {"alpha.txt": ALPHA})
    wait_status(page, "alpha.txt", "stale")
    page.click("#parse-now")
    wait_banner(page, "+1 new, ~0 changed, -0 deleted — digests up to date")
    # As after a prompt or model change: alpha's digest is no longer the cache's, so the next parse redoes it.
    DigestCacheEntry.objects.all().delete()
    page.evaluate("window.__chips = {}")
    page.evaluate(NOTE_RECORDER)
    upload(page, {"beta.md": BETA})
    wait_status(page, "beta.md", "stale")
    page.click("#parse-now")
    wait_banner(page, "+1 new, ~0 changed, -0 deleted — digests up to date")
    wait_status(page, "alpha.txt", "ready")
    chips = page.evaluate("window.__chips")["alpha.txt"]
    assert chips[0] == "ready" and "parsing" in chips and chips[-1] == "ready", chips
    notes = page.evaluate("window.__notes").get("alpha.txt", [])
    assert "Parsing again: its digest was made under another prompt or model." in notes, notes
    assert page.locator('#file-rows tr[data-filename="alpha.txt"] .file-note').count() == 0


def test_on_a_phone_a_run_that_finishes_opens_its_report_and_the_context_tab_stays_short(
    browser, live_server_url, member, artifacts
):
    """Issue 27: the phone view stayed on "Runs & tree" when the run finished, and the parsed-context
    pane grew the Context tab to 19,000 px."""
    sid = session_with_valves_and_survey(member)
    page = login(browser, live_server_url, member)
    page.set_viewport_size({"width": 390, "height": 844})
    open_session(page, live_server_url, sid)
    page.click("#parse-now")
    wait_banner(page, "+2 new, ~0 changed, -0 deleted — digests up to date")
    page.wait_for_selector("#digest-view .fact")
    # The parsed context scrolls on its own: the file list ends within the first three screens.
    assert page.locator("#digest-view").evaluate("(view) => getComputedStyle(view).overflowY") == "auto"
    assert top_of(page, ".file-table") + page.locator(".file-table").bounding_box()["height"] < 3 * 844
    page.screenshot(path=str(artifacts / "context-tab-390px.png"), full_page=True)

    page.click("#tab-research")
    page.wait_for_selector("#research-tab", state="visible")
    show_view(page, "tree", 390)
    page.click("#start-run")
    wait_run_status(page, "completed")
    page.wait_for_function("document.getElementById('research-tab').dataset.view === 'report'")
    page.locator("#report-view .report-title").wait_for()
    assert page.locator("#view-report").get_attribute("aria-selected") == "true"
    page.screenshot(path=str(artifacts / "research-tab-390px-finished.png"))
    # What the run read: where a file was read runs the row's width, not a word's (it was ~40 px, a word a line).
    where = page.locator("#report-coverage tbody tr td:last-child").first
    where.wait_for()
    assert where.bounding_box()["width"] > 200, where.bounding_box()
