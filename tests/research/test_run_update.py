"""Update report (issue 25): a new run re-checks the claims that cite a replaced or deleted file."""

import threading
import uuid

import pytest
from django.db import connection
from rest_framework.test import APIClient

from conversation_app.artifacts import session_artifacts
from llm_platform import grounding
from llm_platform.models import LLMCall
from research_app.models import ResearchNode, ResearchRun
from research_app.runs import update as run_update
from tests.factories import ContextApi, extract_uploads, make_member
from workspaces.models import ResearchSession

from .test_research_runs import SURVEY, VALVES, events_of, finished, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

QUESTION = "What did the water network programme of district 3 change, what did it cost and what did residents report?"
TOPICS = [
    (
        "valves",
        "The valve programme replaced 42 gate valves in district 3 between March 2021 and June 2022.",
        "After the valve replacement, water losses in district 3 fell by 18 percent.",
    ),
    (
        "pumps",
        "The pump programme installed 6 variable speed pumps in district 3 during 2021.",
        "The new pumps cut the electricity used for pumping in district 3 by 23 percent.",
    ),
    (
        "meters",
        "The meter programme fitted 3400 smart water meters to households in district 3 in 2022.",
        "Smart meters found 140 hidden household leaks in district 3 within six months.",
    ),
    (
        "pipes",
        "The pipe programme renewed 12 kilometres of cast iron water mains in district 3.",
        "Burst water mains in district 3 dropped from 31 to 9 per year after the pipe renewal.",
    ),
    (
        "budget",
        "The water network programme of district 3 cost 4.8 million euros in total.",
        "The district 3 programme budget was paid from the 2021 and 2022 network budgets.",
    ),
    (
        "survey",
        "About 61 percent of households in district 3 reported fewer supply interruptions.",
        "Residents of district 3 reported clearer tap water after the pipe renewal in 2022.",
    ),
    (
        "staffing",
        "The district 3 maintenance team grew from 14 to 19 technicians during the programme.",
        "Night shifts for water network repairs in district 3 were introduced in 2022.",
    ),
    (
        "pressure",
        "Average water pressure in district 3 rose from 2.1 to 2.9 bar after the programme.",
        "Pressure zones in district 3 were split from two into five during the programme.",
    ),
    (
        "complaints",
        "Water complaints from district 3 residents fell from 820 to 310 per year.",
        "Most remaining district 3 complaints concern water billing, not supply.",
    ),
    (
        "training",
        "District 3 technicians received 40 hours of training on the new valves and pumps.",
        "The training programme of district 3 was run by the regional water utility.",
    ),
]


def file_text(name, first, second):
    return f"# {name.title()} programme\n\n{first}\n\n{second}\n".encode()


FILES = {f"{name}.md": file_text(name, a, b) for name, a, b in TOPICS}


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


# The budget file again without its cost sentence (the claims made from it are withdrawn), and its
# other sentence said otherwise but still supporting its claim (changed, re-pinned).
BUDGET_V2 = (
    b"# Budget programme\n\nAs the council agreed, the district 3 programme budget was paid from the 2021 and 2022 "
    b"network budgets.\n\nThe final figures of the programme are still being audited.\n"
)
PAID = "The district 3 programme budget was paid from the 2021 and 2022 network budgets."
REMOVED = "4.8 million"


def paragraphs(report: dict) -> list[dict]:
    return [p for s in report["sections"] for p in s["paragraphs"]]


def plain(text: str) -> str:
    return " ".join(grounding.keeping_marks(text, set()).split())


def opened_citations(api, report: dict, paragraph: dict) -> dict:
    """{n or SourceRef: what the citation opens} for every citation of the paragraph that opens a file."""
    refs = {r["n"]: r for r in report["references"]}
    links = {n: refs[n] for n in paragraph["citations"] if refs[n].get("source_url")}
    links |= {link["sourceref"]: link for link in paragraph["source_links"]}
    opened = {}
    for key, link in links.items():
        response = api.get(link["source_url"])
        assert response.status_code == 200, (link, response.content)
        opened[key] = response.json()
    return opened


def calls(rid) -> int:
    return LLMCall.objects.filter(run_id=rid).count()


def update(api, rid):
    return api.post(f"/api/runs/{rid}/update")


# The provider changes nothing the database decides: the anthropic path runs on SQLite alone.
@pytest.mark.parametrize("provider", ["offline", pytest.param("anthropic", marks=pytest.mark.one_database)])
def test_an_update_rechecks_only_the_changed_file_and_withdraws_what_it_no_longer_says(api, provider, request):
    if provider == "anthropic":
        request.getfixturevalue("fake_anthropic")  # the real SDK against the fake Messages API
    sid = api.create_session(title="Network", question=QUESTION)
    api.upload_and_extract(sid, FILES)
    rid = start(api, sid, max_depth=1)
    old = finished(api, rid, timeout=180)
    assert old["status"] == "completed", old
    old_report = ResearchRun.objects.get(pk=rid).report
    cited = [p for p in paragraphs(old_report) if p["citations"] or p["sources"]]
    assert len(cited) >= 15, len(cited)
    assert any(REMOVED in p["text"] for p in cited), "a claim stands on the sentence the new version drops"

    response = api.replace(sid, api.file_id(sid, "budget.md"), "budget.md", BUDGET_V2)
    assert response.status_code == 200, response.content
    extract_uploads()
    response = update(api, rid)
    assert response.status_code == 202, response.content
    new_rid = response.json()["run_id"]
    assert new_rid != rid and response.json()["updates_run"] == rid
    new = finished(api, new_rid, timeout=180)
    assert new["status"] == "completed", new
    report = new["report"]
    assert set(LLMCall.objects.filter(run_id__in=[rid, new_rid]).values_list("provider", flat=True)) == {provider}

    # Only the node that made the withdrawn claim asked a model again.
    assert 0 < calls(new_rid) <= 0.3 * calls(rid), (calls(new_rid), calls(rid))
    summary = report["update"]
    assert summary["updates_run"] == rid and summary["model_calls"] == calls(new_rid)
    assert summary["original_model_calls"] == calls(rid)
    assert summary["changed_files"] == [{"filename": "budget.md", "status": "superseded"}]
    assert summary["summary"].endswith(f"; {calls(new_rid)} model calls instead of {calls(rid)}"), summary
    changed_paid = sum(1 for p in cited if PAID in p["text"])
    assert changed_paid and summary["changed"] == changed_paid, summary
    assert summary["withdrawn"] >= 1 and summary["unchanged"] >= len(cited) - 4 - changed_paid, summary
    assert summary["explored_again"], summary
    again = ResearchNode.objects.filter(run_id=new_rid, path__in=summary["explored_again"])
    assert again and all(node.started_at and node.queries for node in again)

    # The removed sentence's claims are withdrawn, and no paragraph of the update says it.
    withdrawn = [c for c in summary["claims"] if c["status"] == "withdrawn"]
    assert withdrawn and all(REMOVED in c["old_text"] and REMOVED in c["old_cited_text"] for c in withdrawn)
    assert not any(REMOVED in p["text"] for p in paragraphs(report)) and REMOVED not in report["summary"]

    # A changed claim keeps its text, cites the new sentence, and its marker opens the old and new cited texts.
    marked = [p for p in paragraphs(report) if p.get("update", {}).get("status") == "changed"]
    assert len(marked) == changed_paid and all(PAID in p["text"] for p in marked)
    for paragraph in marked:
        change = paragraph["update"]
        assert change["old_text"] == change["new_text"] == paragraph["text"]
        assert PAID in change["old_cited_text"] and "As the council agreed" in change["new_cited_text"]

    # Every citation of the updated report opens a current version whose text supports its paragraph.
    assert report["sources_changed"] == []
    for paragraph in paragraphs(report):
        opened = opened_citations(api, report, paragraph)
        assert opened, paragraph
        assert all(o["status"] == "current" for o in opened.values())
        supported, unsupported = grounding.supporting(paragraph["text"], {k: o["text"] for k, o in opened.items()})
        assert supported and not unsupported, (paragraph, unsupported)

    # Every unchanged claim keeps its text, and its citations open the same sentence in the new version.
    new_texts = {p["text"]: p for p in paragraphs(report)}
    for paragraph in cited:
        if REMOVED in paragraph["text"] or PAID in paragraph["text"]:
            continue
        assert paragraph["text"] in new_texts, paragraph["text"]
        kept = new_texts[paragraph["text"]]
        sentence = plain(paragraph["text"])
        for link in opened_citations(api, report, kept).values():
            assert sentence in " ".join(link["text"].split()), (sentence, link["text"])

    # Nothing silently rewritten: the old run and its report are as they were, and still say what changed.
    assert ResearchRun.objects.get(pk=rid).report == old_report
    again_old = api.get(f"/api/runs/{rid}/report").json()["report"]
    assert [c["filename"] for c in again_old["sources_changed"]] == ["budget.md"]
    types = [e["type"] for e in events_of(api, new_rid)]
    assert "update_checked" in types and types[-2:] == ["run_completed", "coverage_recorded"]
    listed = {r["run_id"]: r for r in api.get(f"/api/sessions/{sid}/runs").json()["runs"]}
    assert listed.keys() == {rid, new_rid} and listed[new_rid]["updates_run"] == rid

    # Its files carry the change summary too.
    for kind in ("md", "docx", "pdf"):
        exported = api.get(f"/api/runs/{new_rid}/report.{kind}")
        assert exported.status_code == 200, (kind, exported.content[:200])
    markdown = api.get(f"/api/runs/{new_rid}/report.md").content.decode()
    assert "**Updated report.**" in markdown and "instead of" in markdown and "Withdrawn: “" in markdown

    # The update cites only current versions: updating it again finds nothing changed.
    llm_calls = LLMCall.objects.count()
    again = update(api, new_rid)
    assert again.status_code == 200 and again.json()["status"] == "unchanged", again.content
    assert LLMCall.objects.count() == llm_calls


def test_a_claim_whose_figure_changed_is_rewritten_from_the_new_text_where_it_stood(api):
    """The commonest change of a file: a figure corrected. The old claim no longer holds; its node, asked
    again, finds the new sentence, which takes the claim's place in its section, marked with both texts."""
    old_sentence, new_sentence = (
        f"Burst water mains in district 3 dropped from 31 to {n} per year after the pipe renewal." for n in (9, 11)
    )
    sid = api.create_session(title="Network", question=QUESTION)
    api.upload_and_extract(sid, FILES)
    rid = start(api, sid, max_depth=1)
    old = finished(api, rid, timeout=180)["report"]
    holding = [s["heading"] for s in old["sections"] for p in s["paragraphs"] if plain(p["text"]) == old_sentence]
    assert holding, "a claim states the sentence that changes"
    pipes = file_text("pipes", TOPICS[3][1], new_sentence)
    assert api.replace(sid, api.file_id(sid, "pipes.md"), "pipes.md", pipes).status_code == 200
    extract_uploads()
    response = update(api, rid)
    assert response.status_code == 202, response.content
    new_rid = response.json()["run_id"]
    report = finished(api, new_rid, timeout=180)["report"]

    rewritten = [c for c in report["update"]["claims"] if c["status"] == "changed" and c["old_text"] != c["new_text"]]
    assert [(plain(c["old_text"]), plain(c["new_text"])) for c in rewritten] == [(old_sentence, new_sentence)]
    assert rewritten[0]["section"] == holding[0] and report["update"]["withdrawn"] == 0, report["update"]
    section = next(s for s in report["sections"] if s["heading"] == holding[0])
    marked = [p for p in section["paragraphs"] if p.get("update", {}).get("status") == "changed"]
    assert [plain(p["text"]) for p in marked] == [new_sentence] and "31 to 9" in marked[0]["update"]["old_cited_text"]
    assert "From the changed files" not in [s["heading"] for s in report["sections"]]
    for paragraph in marked:  # its citation opens the new sentence
        opened = opened_citations(api, report, paragraph)
        assert opened and all(new_sentence in " ".join(o["text"].split()) for o in opened.values()), opened
    assert calls(new_rid) == 0 and report["update"]["explored_again"] == []  # read from the new text, no model
    markdown = api.get(f"/api/runs/{new_rid}/report.md").content.decode()
    assert f"Now says: “{new_sentence}" in markdown, markdown[:2000]


def test_the_chat_reads_no_finding_that_cites_a_replaced_version(api):
    """A run's findings are kept as they were found (an update run copies them), while an update's report says
    the new text: after a board deck changed "two" consultants to "three", the chat quoted "Hire two
    implementation consultants" beside the update's "Hire three". A finding that cites a replaced version is
    read no more."""
    sid = api.create_session(title="Pilot", question="Did the valve programme reduce water losses in district 3?")
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=0)
    assert finished(api, rid)["status"] == "completed"

    def findings_told() -> str:
        artifacts = session_artifacts(ResearchSession.objects.get(pk=sid))
        return " ".join(a.text for a in artifacts if a.key.startswith("findings:"))

    cited = {
        link["sourceref"].split("::")[0]
        for n in ResearchNode.objects.filter(run_id=rid)
        for f in n.findings
        for link in f["source_links"]
    }
    assert "valves.md" in cited and "valve" in findings_told()
    replaced = VALVES.replace("valve", "hydrant").encode()
    assert api.replace(sid, api.file_id(sid, "valves.md"), "valves.md", replaced).status_code == 200
    extract_uploads()
    told = findings_told()
    assert not any(
        f["text"] in told
        for n in ResearchNode.objects.filter(run_id=rid)
        for f in n.findings
        if any("valves.md" in link["sourceref"] for link in f["source_links"])
    ), told


def with_survey_deleted(api) -> str:
    """A completed run whose report cites survey.txt, deleted since: an update of it has work to do."""
    sid = api.create_session(title="Pilot", question="Did the valve programme reduce water losses in district 3?")
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=0)
    old = finished(api, rid)["report"]
    assert any("survey.txt" in ref for p in paragraphs(old) for ref in p["sources"]), paragraphs(old)
    assert api.delete(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'survey.txt')}").status_code == 200
    return rid


def test_a_deleted_file_withdraws_its_claims_without_a_citation_to_it(api):
    rid = with_survey_deleted(api)
    response = update(api, rid)
    assert response.status_code == 202, response.content
    report = finished(api, response.json()["run_id"])["report"]
    assert report["update"]["changed_files"] == [{"filename": "survey.txt", "status": "deleted"}]
    assert report["update"]["withdrawn"] >= 1
    assert "survey.txt" not in str([(p["sources"], p["source_links"]) for p in paragraphs(report)])
    assert report["sources_changed"] == []


def test_nothing_changed_answers_200_and_calls_no_model(api):
    sid = api.create_session(title="Pilot", question="Did the valve programme reduce water losses in district 3?")
    api.upload_and_extract(sid, {"valves.md": VALVES.encode()})
    rid = start(api, sid, max_depth=0)
    assert finished(api, rid)["status"] == "completed"
    runs, llm_calls = ResearchRun.objects.count(), LLMCall.objects.count()
    response = update(api, rid)
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "unchanged", "message": "no cited source changed", "run_id": None}
    assert ResearchRun.objects.count() == runs and LLMCall.objects.count() == llm_calls

    # Not finished: 409, and no run made.
    ResearchRun.objects.filter(pk=rid).update(status=ResearchRun.Status.RUNNING)
    response = update(api, rid)
    assert response.status_code == 409 and "running" in response.json()["error"], response.content
    assert ResearchRun.objects.count() == runs

    # Another team: 404, as for every run endpoint.
    other = ContextApi(make_member()[0])
    response = other.post(f"/api/runs/{rid}/update")
    assert response.status_code == 404 and response.json()["error"] == "run not found"


def test_a_second_update_while_one_is_open_answers_409_naming_it(api):
    rid = with_survey_deleted(api)
    first = update(api, rid)
    assert first.status_code == 202, first.content
    first_id = first.json()["run_id"]
    assert finished(api, first_id)["status"] == "completed"
    # The update open again (as while a worker is on it), without racing the worker to see it so.
    ResearchRun.objects.filter(pk=first_id).update(status=ResearchRun.Status.RUNNING)
    runs, llm_calls = ResearchRun.objects.count(), LLMCall.objects.count()
    response = update(api, rid)  # another Idempotency-Key: another request, not a replay
    assert response.status_code == 409, response.content
    assert response.json()["update_run_id"] == first_id and first_id in response.json()["error"], response.json()
    assert ResearchRun.objects.count() == runs and LLMCall.objects.count() == llm_calls

    # Once that update has finished, the run may be updated again.
    ResearchRun.objects.filter(pk=first_id).update(status=ResearchRun.Status.COMPLETED)
    again = update(api, rid)
    assert again.status_code == 202, again.content
    assert finished(api, again.json()["run_id"])["status"] == "completed"


def test_two_updates_requested_at_once_start_one(api, monkeypatch):
    """Both requests pass the check for an open update before either has made its run: the database's
    constraint lets one in, and the other answers 409 naming it."""
    rid = with_survey_deleted(api)
    both_checked = threading.Barrier(2, timeout=30)
    recheck = run_update.recheck

    def recheck_then_wait(*args):
        result = recheck(*args)
        both_checked.wait()  # both requests are past the check, neither has inserted its run yet
        return result

    monkeypatch.setattr(run_update, "recheck", recheck_then_wait)
    responses = []

    def request():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {api.token}")
        try:
            responses.append(client.post(f"/api/runs/{rid}/update", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex))
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=request) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(r.status_code for r in responses) == [202, 409], [r.content for r in responses]
    made = next(r.json() for r in responses if r.status_code == 202)
    refused = next(r.json() for r in responses if r.status_code == 409)
    assert refused["update_run_id"] == made["run_id"], refused
    assert list(ResearchRun.objects.filter(updates_run_id=rid).values_list("pk", flat=True)) == [
        uuid.UUID(made["run_id"])
    ]
    assert finished(api, made["run_id"])["status"] == "completed"


@pytest.mark.parametrize(
    ("now", "status", "says"),
    [
        # A number word changed: the claim no longer holds, and is said again from the new text.
        ("The valves are checked every three months by Hydrotec.", "changed", "every three months"),
        ("Since May the valves are checked every six months by Hydrotec.", "changed", "every six months"),  # holds
        ("The council replaced the old valves in May.", "withdrawn", None),  # says something else
    ],
)
def test_a_claim_whose_number_changed_in_words_is_rewritten_from_the_new_text(now, status, says):
    from types import SimpleNamespace

    before = "The valves are checked every six months by Hydrotec."
    old_version, new_version = uuid.uuid4(), uuid.uuid4()
    report = {
        "summary": before,
        "references": [{"n": 1, "version": str(old_version), "span": "S2", "title": "memo.md"}],
        "sections": [{"heading": "Checks", "paragraphs": [{"text": f"{before} [1]", "citations": [1], "sources": []}]}],
    }
    successors = {
        str(old_version): (
            SimpleNamespace(spans=[{"span_id": "S2", "text": before}]),
            SimpleNamespace(spans=[{"span_id": "S2", "text": now}], filename="memo.md", version=new_version),
        )
    }
    draft, claims, withdrawn = run_update.recheck(report, successors)
    assert [c["status"] for c in claims if c["status"] != "unchanged"] == [status]
    assert bool(withdrawn) == (status == "withdrawn")
    said = [plain(p["text"]) for s in draft["sections"] for p in s["paragraphs"]]
    claim = f"The valves are checked {says} by Hydrotec." if says else None
    assert said == ([claim] if claim else []) and draft["summary"] == (claim or ""), (said, draft["summary"])


def test_a_changed_item_of_a_list_rewrites_its_claim_and_leaves_the_other_items_claims_unchanged():
    """Regression: a timeline list was one sentence to the re-check, so each claim citing it was `changed` with
    its old text; and "First delivery …: 12 April 2027" was kept by its label alone, pinned to another span."""
    from types import SimpleNamespace

    timeline = "## Timeline\n\n- Vendor chosen: 15 January 2027\n- First delivery to the high schools: {}"
    scope = "## Scope\n\nDevices in the two high schools go first, because they are the oldest."
    old_version, new_version = uuid.uuid4(), uuid.uuid4()
    claims_before = ["Vendor chosen: 15 January 2027", "First delivery to the high schools: 12 April 2027"]
    report = {
        "summary": "",
        "references": [{"n": 1, "version": str(old_version), "span": "S2", "title": "plan.md"}],
        "sections": [
            {
                "heading": "When will the laptops arrive?",
                "paragraphs": [{"text": f"{claim} [1]", "citations": [1], "sources": []} for claim in claims_before],
            }
        ],
    }
    spans = [{"span_id": "S1", "text": scope}, {"span_id": "S2", "text": timeline.format("12 April 2027")}]
    successors = {
        str(old_version): (
            SimpleNamespace(spans=spans),
            SimpleNamespace(
                spans=[spans[0], {"span_id": "S2", "text": timeline.format("19 April 2027")}],
                filename="plan.md",
                version=new_version,
            ),
        )
    }
    draft, claims, withdrawn = run_update.recheck(report, successors)
    changed = [(c["old_text"], c["new_text"]) for c in claims if c["status"] == "changed"]
    assert [(old, plain(new)) for old, new in changed] == [
        ("First delivery to the high schools: 12 April 2027 [1]", "First delivery to the high schools: 19 April 2027")
    ]
    assert claims[-1] == {"status": "unchanged", "count": 1} and not withdrawn
    said = [plain(p["text"]) for s in draft["sections"] for p in s["paragraphs"]]
    assert said == ["Vendor chosen: 15 January 2027", "First delivery to the high schools: 19 April 2027"]


def test_a_tables_row_whose_value_changed_is_rewritten_from_its_new_row():
    """Regression: one field of the old row ("model: ProBook Fortis 14") was taken as support of the whole row,
    so the claim kept the old price."""
    from types import SimpleNamespace

    row = "vendor: HP; model: ProBook Fortis 14; unit_price_eur: {}; warranty_years: 4"
    other = "vendor: Acer; model: TravelMate B3; unit_price_eur: 598; warranty_years: 2"
    old_version, new_version = uuid.uuid4(), uuid.uuid4()
    report = {
        "summary": "",
        "references": [{"n": 1, "version": str(old_version), "span": "S2", "title": "quotes.csv"}],
        "sections": [
            {"heading": "Prices", "paragraphs": [{"text": f"{row.format(715)} [1]", "citations": [1], "sources": []}]}
        ],
    }
    successors = {
        str(old_version): (
            SimpleNamespace(spans=[{"span_id": "S2", "text": f"{row.format(715)}\n{other}"}]),
            SimpleNamespace(
                spans=[{"span_id": "S2", "text": f"{row.format(689)}\n{other}"}],
                filename="quotes.csv",
                version=new_version,
            ),
        )
    }
    draft, claims, _withdrawn = run_update.recheck(report, successors)
    assert [c["status"] for c in claims if c["status"] != "unchanged"] == ["changed"]
    assert [plain(p["text"]) for s in draft["sections"] for p in s["paragraphs"]] == [row.format(689)]


def test_an_item_computed_from_a_tables_rows_is_kept_or_recomputed_by_the_files_new_digest(api):
    """Regression: a value of one row changed, and every per-label average of the table that a report listed
    under "From your files" was withdrawn, those the change left as they were included: no span of the
    table says "tm_celsius by variant, on average: …" word for word. The file's new digest says them, and a
    column's range ("activity_pct ranges from …") as well."""
    rows = [("S-1", "KX-7", 68.4), ("S-2", "WT", 62.3), ("S-3", "KX-7", 61.2), ("S-4", "WT", 57.9)]
    activities = [80, 35, 41, 12]

    def table(first_activity: int) -> bytes:
        lines = [f"{s},{v},{tm},{first_activity if i == 0 else activities[i]}" for i, (s, v, tm) in enumerate(rows)]
        return ("sample_id,variant,tm_celsius,activity_pct\n" + "\n".join(lines) + "\n").encode()

    question = "What melting temperature and activity does each variant reach?"
    sid = api.create_session(title="Enzyme", question=question)
    api.upload_and_extract(sid, {"results.csv": table(80)})
    rid = start(api, sid, max_depth=0)
    old = finished(api, rid, timeout=180)["report"]
    items = {p["text"] for s in old["sections"] if s["heading"] == "From your files" for p in s["paragraphs"]}
    average = "activity_pct by variant, on average: KX-7 60.5, WT 23.5."
    spread = "activity_pct ranges from 12 (sample_id S-4) to 80 (sample_id S-1); the mean over 4 rows is 42."
    untouched = "tm_celsius by variant, on average: KX-7 64.8, WT 60.1."
    assert {average, spread, untouched} <= items, items

    assert api.replace(sid, api.file_id(sid, "results.csv"), "results.csv", table(84)).status_code == 200
    extract_uploads()
    api.parse(sid)
    api.settle(sid)
    response = update(api, rid)
    assert response.status_code == 202, response.content
    report = finished(api, response.json()["run_id"], timeout=180)["report"]

    claims = {c["old_text"]: c for c in report["update"]["claims"] if "old_text" in c}
    assert (claims[average]["status"], claims[average]["new_text"]) == (
        "changed",
        "activity_pct by variant, on average: KX-7 62.5, WT 23.5.",
    )
    assert (claims[spread]["status"], claims[spread]["new_text"]) == (
        "changed",
        "activity_pct ranges from 12 (sample_id S-4) to 84 (sample_id S-1); the mean over 4 rows is 43.",
    )
    assert untouched not in claims  # unchanged: not listed
    said = {p["text"]: p for s in report["sections"] for p in s["paragraphs"]}
    kept = said[untouched]
    assert kept["source_links"], kept
    for paragraph in (kept, said[claims[average]["new_text"]], said[claims[spread]["new_text"]]):
        opened = opened_citations(api, report, paragraph)  # each opens the new version's rows
        assert opened and all("84" in o["text"] for o in opened.values()), opened
