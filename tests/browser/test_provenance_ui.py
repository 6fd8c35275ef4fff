"""Provenance in headless Chromium: every citation opens the exact text it was made from (issue: provenance).

The page opens a citation through its `source_url` (GET /api/sources/{version}/{span}), never by file
name; the source dialog says whether that text is current, superseded or deleted and whether it comes
from another session of the team library. Real stack: daphne, a Celery worker, Redis, the offline provider.
"""

import pytest

from context_app import services as context_services
from context_app.models import ContextSet, FileText
from research_app.services import create_session
from tests.browser.test_context_ui import login, upload, wait_status
from tests.browser.test_research_ui import open_research
from tests.factories import make_member, wait_until
from tests.research.test_research_runs import SURVEY, VALVES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PILOT = (
    "# Valve pilot report\n\n"
    "The pilot replaced 42 gate valves in district 3 between March 2021 and June 2022.\n\n"
    "Total pilot cost was EUR 1.8 million.\n"
)
MENU = "# Cafeteria menu\n\nSoup of the day is lentil.\n"
COST_QUESTION = "What was the total pilot cost of the valve pilot?"
BOTH = "Did the valve programme reduce water losses, and did households report fewer supply interruptions?"
VALVES_V2 = VALVES.replace("42 gate valves", "57 butterfly valves").replace("18 percent", "11 percent")

DIALOG = "#source-dialog"
HIGHLIGHT = "#source-dialog .preview-span.highlight"


@pytest.fixture
def member():
    return make_member()[0]


def new_session(member, title: str, question: str = "", files: dict[str, str] | None = None) -> str:
    session = create_session(user=member, title=title, question=question)
    if files:
        context_set = ContextSet.objects.get(session=session)
        uploads = [context_services.Upload(name, text.encode()) for name, text in files.items()]
        context_services.upload_files(context_set, uploads)
    return str(session.pk)


def parse_and_wait(sid: str) -> None:
    context_set = ContextSet.objects.get(session_id=sid)
    context_services.request_parse(context_set)

    def settled():
        context_set.refresh_from_db()
        files = list(context_set.files.all())
        aggregate_built = context_set.aggregate_digest_id and context_set.aggregate_revision == context_set.revision
        # Parse now is over only when its flag is cleared: a change before that is parsed too.
        done = not context_set.parse_requested
        return files and all(f.digest_status == "ready" for f in files) and aggregate_built and done

    wait_until(settled, timeout=60, message=f"session {sid} parsed")


def run_shallow(page) -> None:
    """A run of the root node alone (depth 0), to its report."""
    page.click(".limits summary")
    page.fill("#limit-depth", "0")
    page.click("#start-run")
    page.wait_for_function("document.getElementById('run-state').dataset.status === 'completed'", timeout=90_000)
    page.wait_for_selector("#report-view .report-title")


def open_in_dialog(page, button) -> dict:
    """Click a citation; the dialog's highlighted span, its badges and every span text it shows."""
    button.click()
    page.locator(HIGHLIGHT).wait_for()
    page.wait_for_selector("#source-dialog-meta .badge")
    return {
        "span": page.locator(HIGHLIGHT).get_attribute("data-span-id"),
        "text": page.locator(HIGHLIGHT).locator(".span-text").inner_text(),
        "badges": page.locator("#source-dialog-meta .badge").all_inner_texts(),
        "all": page.locator("#source-dialog-spans").inner_text(),
        "in_view": page.evaluate(
            """() => {
                const box = document.getElementById('source-dialog-spans').getBoundingClientRect();
                const r = document.querySelector('#source-dialog .preview-span.highlight').getBoundingClientRect();
                return r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
            }"""
        ),
    }


def close_dialog(page) -> None:
    page.keyboard.press("Escape")
    page.locator(DIALOG).wait_for(state="hidden")


def replace_then_show_research(page, filename: str, text: str) -> None:
    """Replace a file from the Context tab, as a person does, then come back to the Research tab."""
    page.click("#tab-context")
    with page.expect_file_chooser() as chooser:
        page.click(f'button[aria-label="Replace {filename}"]')
    chooser.value.set_files([{"name": filename, "mimeType": "text/markdown", "buffer": text.encode()}])
    page.wait_for_function("document.getElementById('banner').textContent.startsWith('+0 new, ~1 changed')")
    page.click("#tab-research")


def span_text(version: str, span_id: str) -> str:
    text = FileText.objects.get(version=version)
    return next(s["text"] for s in text.spans if s["span_id"] == span_id)


# --- 1 and 2: a library page of another session, and a same-named file -------------------------


def test_a_library_citation_opens_the_other_sessions_text_even_after_a_same_named_upload(
    browser, live_server_url, member, artifacts
):
    a = new_session(member, "Pilot A", files={"valve_pilot_report.md": PILOT})
    parse_and_wait(a)
    b = new_session(member, "Pilot B", question=COST_QUESTION)

    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, b)
    run_shallow(page)
    reference = page.locator("#report-view .references li", has=page.locator(".source-link")).first
    assert "from session “Pilot A”" in reference.inner_text(), reference.inner_text()
    button = reference.locator(".source-link")
    ref, version = button.get_attribute("data-source"), button.get_attribute("data-version")
    assert ref.startswith("valve_pilot_report.md::S"), ref
    cited = span_text(version, ref.split("::")[1])
    assert str(FileText.objects.get(version=version).context_set.session_id) == a

    shown = open_in_dialog(page, button)
    assert shown["span"] == ref.split("::")[1] and shown["text"] == cited and shown["in_view"]
    assert "Total pilot cost was EUR 1.8 million." in shown["all"]
    assert shown["badges"] == ["current", "from the team library: session “Pilot A”"], shown["badges"]
    assert "no longer in this session" not in shown["all"]
    page.screenshot(path=str(artifacts / "provenance-library.png"))
    # A push re-renders the report while the dialog is open (a swap puts the server's fresh nodes in): the
    # citation it was opened from is gone, and focus goes back to the one shown in its place.
    page.evaluate(
        "(list) => list.replaceWith(list.cloneNode(true))", page.locator("#report-view .references").element_handle()
    )
    close_dialog(page)
    # The dialog's "close" event, which moves focus to the twin, comes in a task after the dialog is hidden.
    page.wait_for_function("(ref) => document.activeElement?.dataset.source === ref", arg=ref)

    # Node findings mark the library page of the other session too.
    page.click('#node-tree li[data-node="1"] > .node')
    finding_source = page.locator("#node-detail .finding-source").first
    finding_source.wait_for()
    assert "from session “Pilot A”" in finding_source.inner_text()
    assert finding_source.locator(".source-link").get_attribute("data-version") == version
    page.screenshot(path=str(artifacts / "provenance-library-report.png"), full_page=True)

    # An unrelated file of the same name in B changes nothing: the citation names A's version.
    page.click("#tab-context")
    upload(page, {"valve_pilot_report.md": MENU})
    wait_status(page, "valve_pilot_report.md", "stale")
    page.click("#tab-research")
    page.wait_for_selector("#research-tab", state="visible")
    again = page.locator(f'#report-view .references .source-link[data-source="{ref}"]').first
    shown = open_in_dialog(page, again)
    assert shown["text"] == cited and "lentil" not in shown["all"]
    assert shown["badges"] == ["current", "from the team library: session “Pilot A”"], shown["badges"]
    assert page.locator("#report-view .sources-changed").count() == 0
    assert "null" not in page.locator("#report-view").inner_text()
    page.screenshot(path=str(artifacts / "provenance-same-name.png"))


# --- 3: a replaced file and a deleted one ---------------------------------------------------------


def test_a_replaced_or_deleted_file_keeps_its_citations_and_the_report_says_its_sources_changed(
    browser, live_server_url, member, artifacts
):
    sid = new_session(member, "Pilot", question=BOTH, files={"valves.md": VALVES, "survey.txt": SURVEY})
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, sid)
    run_shallow(page)
    report = page.locator("#report-view")
    assert report.locator(".sources-changed").count() == 0
    valves = report.locator('.report-section p .source-link[data-source^="valves.md::"]').first
    ref, version = valves.get_attribute("data-source"), valves.get_attribute("data-version")
    old_text = span_text(version, ref.split("::")[1])
    shown = open_in_dialog(page, valves)
    assert shown["text"] == old_text and shown["badges"] == ["current"], shown
    close_dialog(page)

    replace_then_show_research(page, "valves.md", VALVES_V2)
    changed = report.locator(".sources-changed")
    changed.wait_for()
    assert changed.locator("h4").inner_text() == "Sources changed since this report"
    item = changed.locator('li[data-filename="valves.md"]')
    assert "superseded by a newer upload (" in item.inner_text()

    shown = open_in_dialog(page, report.locator(f'.report-section p .source-link[data-source="{ref}"]').first)
    assert shown["text"] == old_text and "42 gate valves" in shown["all"] and "57 butterfly" not in shown["all"]
    assert len(shown["badges"]) == 1 and shown["badges"][0].startswith("superseded by a newer upload ("), shown
    assert shown["in_view"]
    page.screenshot(path=str(artifacts / "provenance-superseded.png"))
    close_dialog(page)
    page.screenshot(path=str(artifacts / "provenance-sources-changed.png"), full_page=True)

    # Delete survey.txt: its citations (a paragraph's or the library reference's) still open its text.
    survey = report.locator('.source-link[data-source^="survey.txt::"]').first
    survey_ref, survey_version = survey.get_attribute("data-source"), survey.get_attribute("data-version")
    page.click("#tab-context")
    page.click('button[aria-label="Delete survey.txt"]')
    page.wait_for_selector('#file-rows tr[data-filename="survey.txt"]', state="detached")
    page.click("#tab-research")
    report.locator('.sources-changed li[data-filename="survey.txt"][data-status="deleted"]').wait_for()
    survey = report.locator(f'.source-link[data-source="{survey_ref}"]').first
    shown = open_in_dialog(page, survey)
    assert shown["text"] == span_text(survey_version, survey_ref.split("::")[1])
    assert len(shown["badges"]) == 1 and shown["badges"][0].startswith("deleted from this session ("), shown
    page.screenshot(path=str(artifacts / "provenance-deleted.png"))


# --- the chat and the Context tab -------------------------------------------------------------------


def open_chat(browser, live_server_url, member, files: dict[str, str]) -> tuple[str, object]:
    """A parsed session of `files`, its Research tab open with the chat connected: (session id, page)."""
    sid = new_session(member, "Chat", question="Valves", files=files)
    parse_and_wait(sid)
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, sid)
    page.wait_for_function("document.getElementById('chat-log').dataset.live === 'connected'")
    return sid, page


def test_a_chat_answers_inline_sourceref_opens_the_span_it_was_made_from(browser, live_server_url, member, artifacts):
    sid, page = open_chat(browser, live_server_url, member, {"valves.md": VALVES})
    page.fill("#chat-input", "How much did the valve programme cost?")
    page.click("#chat-send")
    answer = page.locator("#chat-log li.assistant").first
    answer.wait_for()
    assert "1.2 million euros" in answer.inner_text()
    inline = answer.locator('.content .source-link[data-source^="valves.md::"]').first
    ref, version = inline.get_attribute("data-source"), inline.get_attribute("data-version")
    assert f". {ref}" in answer.locator(".content").inner_text(), "the chip stays where the answer put it"
    cited = span_text(version, ref.split("::")[1])
    assert "1.2 million euros" in cited

    # The file is replaced after the answer: the answer's citation still opens what it was made from.
    context_set = ContextSet.objects.get(session_id=sid)
    file = context_set.files.get(filename="valves.md")
    context_services.replace_file(context_set, file.pk, context_services.Upload("valves.md", b"Nothing about cost."))
    # The old text stays the current version until the worker has read the new bytes.
    wait_until(
        lambda: FileText.objects.filter(version=version, superseded_at__isnull=False).exists(),
        message="the worker to extract the new bytes",
    )
    shown = open_in_dialog(page, inline)
    assert shown["span"] == ref.split("::")[1] and shown["text"] == cited
    assert shown["badges"][0].startswith("superseded by a newer upload ("), shown
    page.screenshot(path=str(artifacts / "provenance-chat.png"))
    close_dialog(page)
    chip = answer.locator(f'.content .source-link[data-source="{ref}"]').first
    assert chip.get_attribute("data-version") == version


def test_an_out_of_date_digest_opens_the_text_it_was_built_from(browser, live_server_url, member, artifacts):
    sid = new_session(member, "Digest", files={"valves.md": VALVES})
    parse_and_wait(sid)
    context_set = ContextSet.objects.get(session_id=sid)
    file = context_set.files.get(filename="valves.md")
    context_services.replace_file(context_set, file.pk, context_services.Upload("valves.md", VALVES_V2.encode()))

    page = login(browser, live_server_url, member)
    page.goto(f"{live_server_url}/sessions/{sid}/")
    page.wait_for_function("document.body.dataset.live === 'connected'")
    page.check("#ui-debug-toggle")
    page.wait_for_selector(".digest-pane .badge.outdated")
    source = page.locator('.digest-pane .fact .source-link[data-source^="valves.md::"]').first
    ref, version = source.get_attribute("data-source"), source.get_attribute("data-version")
    source.click()
    highlighted = page.locator("#digest-view .preview-span.highlight")
    highlighted.wait_for()
    assert page.locator("#dtab-preview").get_attribute("aria-selected") == "true"
    assert highlighted.locator(".span-text").inner_text() == span_text(version, ref.split("::")[1])
    assert "42 gate valves" in page.locator("#digest-view").inner_text()
    assert "57 butterfly" not in page.locator("#digest-view").inner_text()
    badge = page.locator("#digest-view .provenance .badge").first.inner_text()
    assert badge.startswith("superseded by a newer upload ("), badge
    page.screenshot(path=str(artifacts / "provenance-digest.png"))


# --- issue 27: at phone width the dialog opens with its title, status and Close in view -----------

LONG_NOTES = (
    "# Site notes\n\n"
    + "".join(f"Inspection {n} of the river bank found nothing to report on section {n}.\n\n" for n in range(1, 60))
    + "The flood barrier at the old mill was raised by 40 centimetres in 2023.\n"
)


def test_at_phone_width_the_source_dialog_opens_with_its_title_and_close_in_view(
    browser, live_server_url, member, artifacts
):
    sid = new_session(
        member, "Mill", "How much was the flood barrier at the old mill raised?", {"notes.md": LONG_NOTES}
    )
    parse_and_wait(sid)
    page = login(browser, live_server_url, member)
    open_research(page, live_server_url, sid)
    run_shallow(page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.click("#view-report")
    button = page.locator("#report-view .references .source-link").first
    shown = open_in_dialog(page, button)
    assert "flood barrier" in shown["text"] and shown["in_view"]
    # The cited span is far down the file: the dialog's text scrolled to it, the dialog did not.
    assert page.evaluate("document.getElementById('source-dialog-spans').scrollTop") > 0
    for selector in ("#source-dialog-title", "#source-dialog-close", "#source-dialog-meta .badge"):
        box = page.locator(selector).first.bounding_box()
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= 844, (selector, box)
    page.screenshot(path=str(artifacts / "source-dialog-390.png"))
    close_dialog(page)

    # An [n] in the text opens the text it cites at once, and marks its reference.
    mark = page.locator("#report-view .report-section p a.citation").first
    n = mark.inner_text().strip("[]")
    shown = open_in_dialog(page, mark)
    assert "flood barrier" in shown["text"] and shown["in_view"]
    assert "targeted" in page.locator(f"#ref-{n}").get_attribute("class")
    close_dialog(page)
    # Every reference listed under "References" is cited in the text; the others stand apart.
    marks = set(page.locator("#report-view .report-section p a.citation").all_inner_texts())
    listed = page.locator("#report-view .references:not(.uncited) li").evaluate_all("items => items.map(i => i.value)")
    assert {f"[{value}]" for value in listed} <= marks
