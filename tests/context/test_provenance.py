"""Provenance: every citation opens the exact text it was made from (context_app.provenance).

Real stack: Celery worker, Redis, the offline provider; runs, digests and chat through the API.
"""

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from context_app.models import FileText
from conversation_app.models import ChatMessage
from research_app.models import ResearchNode, ResearchRun
from tests.factories import ContextApi, extract_uploads, make_member, model_calls
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES, finished, start
from workspaces.models import ResearchSession

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

UNRELATED = "# Staff rota\n\nThe canteen opens at eight and closes at three on Fridays.\n"
BOTH = "Did the valve programme reduce water losses, and did households report fewer supply interruptions?"
VALVES_V2 = VALVES.replace("42 gate valves", "57 butterfly valves").replace("18 percent", "11 percent")


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def resolve(api, link: dict):
    return api.get(link["source_url"])


def current_version(sid: str, filename: str) -> FileText:
    return FileText.objects.current().get(file__context_set__session_id=sid, filename=filename)


def library_references(report: dict) -> list[dict]:
    return [r for r in report["references"] if r["provider"] == "library"]


# --- the resolver ------------------------------------------------------------------------


def test_the_resolver_answers_the_team_with_the_exact_span_and_nobody_else(api):
    sid = api.create_session(title="Pilot A")
    api.upload_and_extract(sid, {"valves.md": VALVES.encode()})
    text = current_version(sid, "valves.md")
    span = text.spans[1]
    response = api.get(f"/api/sources/{text.version}/{span['span_id']}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == span["text"] and body["span_id"] == span["span_id"] and body["locator"] == span["locator"]
    assert body["version"] == str(text.version) and body["filename"] == "valves.md" and body["format"] == "markdown"
    assert body["status"] == "current" and body["superseded_at"] is None and body["deleted_at"] is None
    assert body["extracted_text_hash"] == text.extracted_text_hash
    assert body["origin_session"] == {"id": sid, "title": "Pilot A"}
    assert [s["span_id"] for s in body["spans"]] == [s["span_id"] for s in text.spans]
    assert set(body["spans"][0]) == {"span_id", "text", "locator"}

    teammate = ContextApi(make_member(team=ResearchSession.objects.get(pk=sid).team)[0])
    assert teammate.get(f"/api/sources/{text.version}/S1").status_code == 200
    stranger = ContextApi(make_member()[0])
    refused = stranger.get(f"/api/sources/{text.version}/S1")
    assert refused.status_code == 404 and refused.json() == {"error": "source not found"}
    assert APIClient().get(f"/api/sources/{text.version}/S1").status_code in (401, 403)
    for path in (f"/api/sources/{text.version}/S999", f"/api/sources/{text.version}/x", "/api/sources/nope/S1"):
        missing = api.get(path)
        assert missing.status_code == 404 and missing.json() == {"error": "source not found"}, path


def test_the_resolver_reads_a_constant_number_of_queries(api):
    sid = api.create_session()
    long_text = "\n\n".join(f"Paragraph {n} says the valve {n} was replaced." for n in range(60))
    api.upload_and_extract(sid, {"short.md": VALVES.encode(), "long.md": long_text.encode()})
    counts = []
    for filename in ("short.md", "long.md"):
        text = current_version(sid, filename)
        with CaptureQueriesContext(connection) as queries:
            assert api.get(f"/api/sources/{text.version}/S2").status_code == 200
        counts.append(len(queries))
    # The token with its user, the user's teams, the version with its origin session.
    assert counts[0] == counts[1] == 3, counts


# --- the three failures of the issue ------------------------------------------------------


def test_a_run_in_an_empty_session_cites_another_sessions_page_and_a_same_named_upload_changes_nothing(api):
    a = api.create_session(title="Valve pilot (A)")
    api.upload_and_extract(a, {"valves.md": VALVES.encode()})
    a_text = current_version(a, "valves.md")
    b = api.create_session(title="Empty (B)", question=QUESTION)

    rid = start(api, b, max_depth=0)
    run = finished(api, rid)
    assert run["status"] == "completed", run
    references = library_references(run["report"])
    assert references, run["report"]["references"]
    reference = references[0]
    assert reference["version"] == str(a_text.version)
    assert reference["origin_session"] == {"id": a, "title": "Valve pilot (A)"} and reference["from_library"] is True
    assert reference["source_url"] == f"/api/sources/{a_text.version}/{reference['span']}"
    resolved = resolve(api, reference).json()
    assert resolved["origin_session"]["id"] == a and resolved["filename"] == "valves.md"
    span_text = next(s["text"] for s in a_text.spans if s["span_id"] == reference["span"])
    assert resolved["text"] == span_text
    root = next(n for n in run["nodes"] if n["node_id"] == "1")
    assert all(r["from_library"] and r["origin_session"]["id"] == a for r in root["results"])
    assert root["findings"] and all(f["source_links"] for f in root["findings"])

    # An unrelated file of the same name in B: the citation still opens A's text.
    api.upload_and_extract(b, {"valves.md": UNRELATED.encode()})
    again = resolve(api, reference).json()
    assert again["text"] == span_text and again["origin_session"]["id"] == a and again["status"] == "current"
    assert api.get(f"/api/runs/{rid}/report").json()["report"]["sources_changed"] == []


def test_replacing_and_deleting_files_keeps_old_citations_readable_and_the_report_says_so(api):
    sid = api.create_session(title="Pilot", question=BOTH)
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    old_valves, old_survey = current_version(sid, "valves.md"), current_version(sid, "survey.txt")
    rid = start(api, sid, max_depth=0)
    report = finished(api, rid)["report"]
    assert report["sources_changed"] == []
    links = [link for s in report["sections"] for p in s["paragraphs"] for link in p["source_links"]]
    valves_link = next(link for link in links if link["sourceref"].startswith("valves.md::"))
    assert valves_link["version"] == str(old_valves.version) and "origin_session" not in valves_link
    old_span = next(s["text"] for s in old_valves.spans if s["span_id"] == valves_link["span"])

    response = api.replace(sid, api.file_id(sid, "valves.md"), "valves.md", VALVES_V2.encode())
    assert response.status_code == 200, response.content
    extract_uploads()
    assert current_version(sid, "valves.md").version != old_valves.version
    resolved = resolve(api, valves_link).json()
    assert resolved["status"] == "superseded" and resolved["superseded_at"] and resolved["text"] == old_span
    assert "42 gate valves" in " ".join(s["text"] for s in resolved["spans"])
    changed = api.get(f"/api/runs/{rid}/report").json()["report"]["sources_changed"]
    assert changed == [
        {
            "filename": "valves.md",
            "version": str(old_valves.version),
            "status": "superseded",
            "changed_at": resolved["superseded_at"],
        }
    ]

    assert api.delete(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'survey.txt')}").status_code == 200
    cited = links + library_references(report)
    survey_ref = next(r for r in cited if r["version"] == str(old_survey.version))
    gone = resolve(api, survey_ref).json()
    assert gone["status"] == "deleted" and gone["deleted_at"] and gone["filename"] == "survey.txt"
    assert gone["text"] == next(s["text"] for s in old_survey.spans if s["span_id"] == survey_ref["span"])
    detail = api.get(f"/api/runs/{rid}").json()["report"]["sources_changed"]
    assert {(c["filename"], c["status"]) for c in detail} == {("valves.md", "superseded"), ("survey.txt", "deleted")}
    # Other bytes, the same text (line ends are normalised): the version stays.
    current = current_version(sid, "valves.md")
    api.replace(sid, api.file_id(sid, "valves.md"), "valves.md", VALVES_V2.replace("\n", "\r\n").encode())
    extract_uploads()
    assert current_version(sid, "valves.md").version == current.version


def _docx(*paragraphs: tuple[str, str]) -> bytes:
    """A DOCX of paragraphs, each (its text, a tracked insertion at its end: "" for none)."""
    import io

    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    for text, inserted in paragraphs:
        paragraph = document.add_paragraph(text)
        if inserted:
            change, run, said = OxmlElement("w:ins"), OxmlElement("w:r"), OxmlElement("w:t")
            change.set(qn("w:id"), "1")
            change.set(qn("w:author"), "Ruth Lind")
            said.text = inserted
            run.append(said)
            change.append(run)
            paragraph._p.append(change)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_a_file_an_improved_reader_reads_otherwise_gets_a_new_version_and_one_it_reads_alike_keeps_its_own(api):
    """The DOCX reader before `docx.2` lost a draft's tracked insertions: its uploads keep that text until they
    are read again, which the session's next parse does for every file its format's reader now reads better."""
    from django.db import transaction

    from context_app.models import ContextFile
    from context_app.pipeline.extract import apply_extraction
    from extraction import ExtractionLimits, extract_document, reader_version

    draft = _docx(("Staff may claim mileage at", " 0.67 dollars a mile."), ("Receipts are kept for seven years.", ""))
    page = b"<html><body><main><p>Gifts are deductible to the extent the law allows.</p></main></body></html>"
    sid = api.create_session(title="Policies", question="What may staff claim for mileage?")
    api.upload_and_extract(sid, {"policy.docx": draft, "faq.html": page})
    api.parse(sid)
    api.settle(sid)
    # As the former readers left them: the draft without its insertion, both files read by no recorded reader.
    as_read_before = _docx(("Staff may claim mileage at", ""), ("Receipts are kept for seven years.", ""))
    with transaction.atomic():
        file = ContextFile.objects.select_for_update().get(context_set__session_id=sid, filename="policy.docx")
        apply_extraction(file, extract_document(as_read_before, "policy.docx", None, ExtractionLimits.from_settings()))
        file.save()
    ContextFile.objects.filter(context_set__session_id=sid).update(reader_version="")
    lost, page_version = current_version(sid, "policy.docx"), current_version(sid, "faq.html")
    assert "0.67 dollars" not in lost.text
    digests_before = model_calls(sid, "per_file_digest", attempt=None)
    assert digests_before >= 2

    api.parse(sid)  # the next parse reads them again
    manifest = api.settle(sid)
    read_again = current_version(sid, "policy.docx")
    assert read_again.version != lost.version and "Staff may claim mileage at 0.67 dollars a mile." in read_again.text
    assert FileText.objects.get(version=lost.version).status == "superseded"  # what cited it still opens it
    assert current_version(sid, "faq.html").version == page_version.version  # the same text keeps its version
    files = {f["filename"]: f for f in manifest["files"]}
    assert {f["digest_status"] for f in files.values()} == {"ready"} and not any(
        f["requeued_because"] for f in files.values()
    )
    assert set(ContextFile.objects.filter(context_set__session_id=sid).values_list("reader_version", flat=True)) == {
        reader_version("docx"),
        reader_version("html"),
    }
    # The draft's text read again is the text its first upload gave: its digest is cached, the page's kept.
    assert model_calls(sid, "per_file_digest", attempt=None) == digests_before
    api.parse(sid)
    api.settle(sid)
    assert current_version(sid, "policy.docx").version == read_again.version  # read once, not at every parse


def test_a_file_read_as_text_for_want_of_a_reader_is_read_again_by_the_one_its_name_now_has(api):
    """A notebook (.ipynb) was read as plain text before it had a reader: the next parse reads it as its cells.
    A ".pdf" that holds text is text for good: it is not read again at every parse."""
    import json

    from context_app.models import ContextFile
    from extraction import reader_version

    notebook = {"cells": [{"cell_type": "markdown", "source": ["# Churn\n", "\n", "Price was the main reason given."]}]}
    sid = api.create_session(title="Churn", question="Why did customers cancel?")
    api.upload_and_extract(sid, {"churn.ipynb": json.dumps(notebook).encode(), "notes.pdf": b"Plain notes, not a PDF."})
    api.parse(sid)
    api.settle(sid)
    as_text = {"format": "text", "reader_version": reader_version("text")}  # as the text reader left it
    ContextFile.objects.filter(context_set__session_id=sid, filename="churn.ipynb").update(**as_text)
    before = current_version(sid, "notes.pdf").version

    api.parse(sid)
    api.settle(sid)
    formats = dict(ContextFile.objects.filter(context_set__session_id=sid).values_list("filename", "format"))
    assert formats == {"churn.ipynb": "markdown", "notes.pdf": "text"}
    assert "Price was the main reason given." in current_version(sid, "churn.ipynb").text
    assert current_version(sid, "notes.pdf").version == before


# --- every citation resolves ---------------------------------------------------------------


def every_citation(api, sid: str, rid: str) -> list[tuple[str, dict]]:
    """(where, citation object) for every citation the API shows for the session and the run."""
    found = []
    run = api.get(f"/api/runs/{rid}").json()
    report = api.get(f"/api/runs/{rid}/report").json()["report"]
    for reference in report["references"]:
        if reference["provider"] == "library":
            found.append(("reference", reference))
    for section in report["sections"]:
        for paragraph in section["paragraphs"]:
            assert len(paragraph["source_links"]) == len(paragraph["sources"]), paragraph
            found += [("paragraph", link) for link in paragraph["source_links"]]
    assert run["report"]["references"] == report["references"]
    for node in run["nodes"]:
        found += [("result", r) for r in node["results"] if r["provider"] == "library"]
        for finding in node["findings"]:
            found += [("finding", link) for link in finding["source_links"]]
    digest = api.get(f"/api/sessions/{sid}/context/digest").json()
    cited = {ref for item in digest["digest"]["facts"] + digest["digest"]["uncertainties"] for ref in item["sources"]}
    assert cited and set(digest["source_links"]) >= cited
    found += [("digest", link) for link in digest["source_links"].values()]
    for file in api.manifest(sid)["files"]:
        response = api.get(file["digest_url"])
        if response.status_code == 200:
            found += [("file digest", link) for link in response.json()["source_links"].values()]
    history = api.get(f"/api/research/conversation?session_id={sid}").json()
    for message in history["messages"]:
        refs = [c for c in message["citations"] if "::S" in c]
        assert [link["sourceref"] for link in message["source_links"]] == refs, message
        found += [("chat", link) for link in message["source_links"]]
    for request in history["context_requests"]:
        for slot in request["required"]:
            found += [("suggestion", s) for s in slot["suggestions"] if "source_url" in s]
    return found


def test_every_stored_citation_resolves_to_the_text_it_was_made_from(api):
    other = api.create_session(title="Earlier pilot")
    api.upload_and_extract(
        other, {"budget.md": b"# Budget\n\nThe valve programme budget was reviewed by the water board.\n"}
    )
    sid = api.create_session(title="Pilot", question=QUESTION)
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    rid = start(api, sid, max_depth=1)
    assert finished(api, rid)["status"] == "completed"
    answer = api.post(
        "/api/research/conversation",
        {"session_id": sid, "message": "How much did the valve programme cost?"},
        format="json",
    ).json()
    assert answer["status"] == "ok" and answer["message"]["source_links"], answer
    asked = api.post(
        "/api/research/conversation",
        {"session_id": sid, "message": "How did maintenance staffing change in the workshop?"},
        format="json",
    ).json()
    assert asked["status"] == "context_required", asked
    # What each version said when it was cited.
    spans = {str(t.version): {s["span_id"]: s["text"] for s in t.spans} for t in FileText.objects.all()}
    record_texts = {
        (r["version"], r["span"]): r["text"]
        for node in ResearchNode.objects.filter(run_id=rid)
        for r in node.results
        if r["provider"] == "library"
    }

    api.replace(sid, api.file_id(sid, "valves.md"), "valves.md", VALVES_V2.encode())
    extract_uploads()
    api.delete(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'survey.txt')}")
    api.delete(f"/api/sessions/{other}/context/files/{api.file_id(other, 'budget.md')}")

    citations = every_citation(api, sid, rid)
    kinds = {kind for kind, _ in citations}
    assert {"reference", "paragraph", "result", "finding", "digest", "chat"} <= kinds, kinds
    statuses = set()
    for kind, link in citations:
        assert set(link) >= {"sourceref", "version", "span", "source_url"}, (kind, link)
        assert link["sourceref"].split("::")[1] == link["span"]
        response = resolve(api, link)
        assert response.status_code == 200, (kind, link)
        resolved = response.json()
        statuses.add(resolved["status"])
        assert resolved["version"] == link["version"] and resolved["span_id"] == link["span"]
        assert link["sourceref"].split("::")[0] == resolved["filename"], (kind, link)
        assert resolved["text"] == spans[link["version"]][link["span"]], (kind, link)
        if kind in ("reference", "result"):
            # A library result's text is its record's text, which starts with its first span.
            assert record_texts[(link["version"], link["span"])].startswith(resolved["text"]), (kind, link)
            assert link["origin_session"]["id"] == resolved["origin_session"]["id"]
            assert link["from_library"] is (resolved["origin_session"]["id"] != sid)
    assert {"superseded", "deleted"} <= statuses, statuses


# --- retention ---------------------------------------------------------------------------------


def test_prune_deletes_only_versions_that_are_neither_current_nor_cited(api):
    from io import StringIO

    sid = api.create_session(title="Pilot")
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    first = current_version(sid, "valves.md")
    fid = api.file_id(sid, "valves.md")
    api.replace(sid, fid, "valves.md", VALVES_V2.encode())
    extract_uploads()
    second = current_version(sid, "valves.md")
    # A chat message cites the second version; a report cites the survey.
    session = ResearchSession.objects.get(pk=sid)
    from conversation_app.models import Conversation

    conversation = Conversation.objects.create(session=session)
    link = {"sourceref": "valves.md::S1", "version": str(second.version), "span": "S1", "source_url": "/x"}
    ChatMessage.objects.create(conversation=conversation, role="assistant", content="…", source_links=[link])
    survey = current_version(sid, "survey.txt")
    survey_link = {"sourceref": "survey.txt::S1", "version": str(survey.version), "span": "S1", "source_url": "/y"}
    ResearchRun.objects.create(
        session=session,
        question="q",
        status=ResearchRun.Status.COMPLETED,
        max_depth=0,
        max_children=1,
        max_nodes=1,
        token_budget=1,
        report={"sections": [{"paragraphs": [{"source_links": [survey_link]}]}], "references": []},
    )
    api.replace(sid, fid, "valves.md", VALVES.encode() + b"\nA third version.\n")
    extract_uploads()
    third = current_version(sid, "valves.md")
    api.delete(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'survey.txt')}")

    out = StringIO()
    call_command("prune_source_texts", "--dry-run", stdout=out)
    assert f"would delete {first.version}  valves.md (superseded)" in out.getvalue()
    assert FileText.objects.filter(version=first.version).exists(), "a dry run deletes nothing"
    out = StringIO()
    call_command("prune_source_texts", stdout=out)
    assert out.getvalue().splitlines() == [
        f"deleted {first.version}  valves.md (superseded)",
        "deleted 1 text version(s) nothing cites",
    ]
    remaining = set(FileText.objects.values_list("version", flat=True))
    assert {second.version, third.version, survey.version} <= remaining and first.version not in remaining
    assert FileText.objects.get(version=survey.version).status == "deleted"

    # Deleting the session: its versions are marked deleted, kept while cited, pruned once not.
    ResearchSession.objects.filter(pk=sid).delete()
    orphaned = FileText.objects.filter(version__in=[second.version, third.version, survey.version])
    assert all(t.status == "deleted" and t.file_id is None and t.context_set_id is None for t in orphaned)
    call_command("prune_source_texts", stdout=StringIO())
    assert not FileText.objects.filter(version__in=[second.version, third.version, survey.version]).exists()


def test_run_detail_and_report_read_the_changed_sources_in_one_query(api):
    sid = api.create_session(title="Pilot", question=BOTH)
    api.upload_and_extract(sid, {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()})
    small = start(api, sid, max_depth=0)
    large = start(api, sid, question=QUESTION, max_depth=1, max_children=3)
    assert finished(api, small)["status"] == finished(api, large)["status"] == "completed"
    api.replace(sid, api.file_id(sid, "valves.md"), "valves.md", VALVES_V2.encode())
    extract_uploads()
    counts = {}
    for rid in (small, large):
        for path in (f"/api/runs/{rid}", f"/api/runs/{rid}/report"):
            with CaptureQueriesContext(connection) as queries:
                response = api.get(path)
            assert response.status_code == 200 and response.json()["report"]["sources_changed"], path
            counts[(rid, path.endswith("report"))] = len(queries)
            assert sum("context_app_filetext" in q["sql"] for q in queries.captured_queries) == 1, path
    assert ResearchNode.objects.filter(run_id=large).count() > ResearchNode.objects.filter(run_id=small).count()
    # The token with its user, the run, its nodes with their slices and its usage (detail only), the changed sources.
    assert counts[(small, False)] == counts[(large, False)] == 5 and counts[(small, True)] == counts[(large, True)] == 3


def test_inline_sourcerefs_become_chips_and_a_group_of_chips_loses_its_brackets():
    """A chat answer ended "… expire on 31 March (", its chip, and ")." on lines of their own: the chip wrapped."""
    from django.template import Context, Template

    links = [
        {"sourceref": f"handbook.pdf::{span}", "version": "v1", "span": span, "source_url": f"/api/sources/v1/{span}"}
        for span in ("S3", "S5")
    ]
    text = (
        "Unused days expire on 31 March (handbook.pdf::S3). Parents get 20 weeks "
        "(handbook.pdf::S3; handbook.pdf::S5), as p. 4 says (p. 4, handbook.pdf::S5) <b>"
    )
    html = Template("{% load citations %}{% text_with_citations text links %}").render(
        Context({"text": text, "links": links, "session_id": "s1"})
    )
    assert 'expire on 31 March. <a class="source-link"' in html and "S3</a> Parents" in html, html
    assert 'weeks, <a class="source-link"' in html and "S3</a>; <a" in html and "S5</a> as" in html, html
    assert '(p. 4, <a class="source-link"' in html and "S5</a>) &lt;b&gt;" in html, html  # words keep them
