"""The team's document library: records from real uploads, BM25 ranking, providers, ContextBuilder."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.management import CommandError, call_command

from context_app import library
from context_app.models import LibraryPosting, LibraryRecord
from llm_platform import terms
from llm_platform.ir import estimate_tokens
from llm_platform.search_index import TermIndex
from research_app.search import (
    ContextBuilder,
    LibrarySearch,
    SearchError,
    SearchResult,
    SearxngSearch,
    deduplicate_results,
    providers_for_scope,
    search_all,
)
from tests.factories import ContextApi, extract_uploads, make_member, wait_until
from workspaces.models import ResearchSession
from workspaces.services import team_cache_scope

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _scope(sid: str) -> str:
    return team_cache_scope(ResearchSession.objects.get(pk=sid).team)


@pytest.fixture
def member():
    user, team = make_member()
    return ContextApi(user), team


def _upload(api, sid, files):
    response = api.upload(sid, files)
    assert response.status_code == 201, response.content
    extract_uploads()
    return response.json()


def _session_with_report_and_notes(api) -> str:
    sid = api.create_session()
    _upload(api, sid, {name: (FIXTURES / name).read_bytes() for name in ("report.pdf", "notes.md")})
    return sid


# --- records -----------------------------------------------------------------


def test_pdf_pages_and_markdown_sections_become_records(member):
    api, _team = member
    _session_with_report_and_notes(api)

    pdf = list(LibraryRecord.objects.filter(file__filename="report.pdf").order_by("position"))
    assert [r.page for r in pdf] == [1, 2, 3]
    assert pdf[1].text.startswith("Costs and maintenance") and pdf[1].section_path == ""
    assert (pdf[1].first_span, pdf[1].last_span) == ("S2", "S2")

    notes = list(LibraryRecord.objects.filter(file__filename="notes.md").order_by("position"))
    assert all(r.page is None for r in notes)
    northgate = next(r for r in notes if r.parent_heading == "Northgate")
    assert northgate.section_path == "Field notes > Northgate"
    assert "Pump station 3" in northgate.text
    # Every record's length is its number of index terms.
    assert northgate.length == sum(LibraryPosting.objects.filter(record=northgate).values_list("tf", flat=True))


def test_records_group_spans_by_page_section_or_size():
    spans = [{"span_id": f"S{i}", "text": "word " * 300, "locator": ""} for i in range(1, 9)]
    drafts = library.records_from_spans("text", spans)
    # 1500 characters a span, 4000 a record: two spans per record, in order, covering every span.
    assert [(d.first_span, d.last_span) for d in drafts] == [("S1", "S2"), ("S3", "S4"), ("S5", "S6"), ("S7", "S8")]
    assert [d.position for d in drafts] == [1, 2, 3, 4] and all(d.page is None for d in drafts)
    pdf = library.records_from_spans(
        "pdf", [{"span_id": "S1", "text": "a", "locator": "p. 1"}, {"span_id": "S2", "text": "b", "locator": "p. 4"}]
    )
    assert [d.page for d in pdf] == [1, 4]


def test_a_csv_record_cites_its_rows_and_carries_the_column_names():
    spans = [
        {"span_id": "S1", "text": "district, bursts", "locator": "header"},
        {"span_id": "S2", "text": "district: Harbour; bursts: 63", "locator": "rows 2-2"},
    ]
    (record,) = library.records_from_spans("csv", spans)
    assert (record.first_span, record.last_span) == ("S2", "S2")  # "Part 1" opens the rows, not the header
    assert record.text == "district, bursts\n\ndistrict: Harbour; bursts: 63"


def test_analyze_stems_and_drops_stop_words():
    assert terms.analyze("The Arguments of a function, and its default argument values!") == [
        "argument",
        "function",
        "default",
        "argument",
        "valu",
    ]


# --- ranking -----------------------------------------------------------------


def test_bm25_prefers_rare_terms_and_shorter_records():
    records = [(1, "a", 10), (2, "a", 10), (3, "a", 40)] + [(n, "a", 20) for n in range(4, 11)]
    postings = [("pump", 1, 1), ("pump", 2, 1), ("pump", 3, 1), ("valve", 2, 1)]
    ranked = TermIndex.build(records, postings).rank(["pump", "valve"], 10)
    assert [record for record, _score in ranked] == [2, 1, 3]  # the rare term adds most; a long record less
    expected = terms.bm25_weight(1, 3, 10, 10, 20.0) + terms.bm25_weight(1, 1, 10, 10, 20.0)
    assert ranked[0][1] == pytest.approx(expected)  # Okapi BM25 as llm_platform.terms defines it


def test_search_ranks_the_answering_page_first_and_cites_its_span(member):
    api, _team = member
    sid = _session_with_report_and_notes(api)

    hits = library.search(_scope(sid), "capital cost of the programme in euros").hits
    assert hits[0].filename == "report.pdf" and hits[0].page == 2
    assert hits[0].sourceref == "report.pdf::S2"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    preview = api.get(f"/api/sessions/{sid}/context/files/{hits[0].file_id}/preview").json()
    span = next(s for s in preview["spans"] if s["span_id"] == hits[0].first_span)
    assert "capital cost" in span["text"]

    notes_hit = library.search(_scope(sid), "pump station repair at Northgate").hits[0]
    assert (notes_hit.filename, notes_hit.parent_heading) == ("notes.md", "Northgate")
    assert library.search(_scope(sid), "the of and").hits == []  # stop words only


def test_search_is_per_team_and_follows_replace_and_delete(member):
    api, team = member
    sid = api.create_session()
    body = _upload(api, sid, {"memo.txt": b"The chlorine dosing target is 0.5 mg per litre."})
    fid = body["files"][0]["file_id"]
    other_api = ContextApi(make_member()[0])
    other_sid = other_api.create_session()
    assert library.search(_scope(other_sid), "chlorine dosing").hits == []
    assert library.search(_scope(sid), "chlorine dosing").hits[0].filename == "memo.txt"

    assert api.replace(sid, fid, "memo.txt", b"Fluoride levels were checked monthly.").status_code == 200
    extract_uploads()
    assert library.search(_scope(sid), "chlorine dosing").hits == []
    assert library.search(_scope(sid), "fluoride").hits[0].file_id == fid

    assert api.delete(f"/api/sessions/{sid}/context/files/{fid}").status_code == 200
    assert library.search(_scope(sid), "fluoride").hits == []
    assert not LibraryPosting.objects.filter(scope=_scope(sid)).exists()


def test_the_same_document_in_two_sessions_is_one_hit(member):
    api, _team = member
    pdf = (FIXTURES / "report.pdf").read_bytes()
    first, second = api.create_session("One"), api.create_session("Two")
    _upload(api, first, {"report.pdf": pdf})
    _upload(api, second, {"copy-of-report.pdf": pdf})
    assert LibraryRecord.objects.filter(scope=_scope(first)).count() == 6
    hits = library.search(_scope(first), "capital cost programme euros", limit=10).hits
    keys = [(h.document_id, h.page) for h in hits]
    assert len(keys) == len(set(keys)) and keys[0][1] == 2


def test_a_file_that_fails_extraction_leaves_no_records(member):
    api, _team = member
    sid = api.create_session()
    body = _upload(api, sid, {"scan.pdf": (FIXTURES / "report.pdf").read_bytes()})
    fid = body["files"][0]["file_id"]
    assert LibraryRecord.objects.filter(file_id=fid).count() == 3
    assert api.replace(sid, fid, "scan.pdf", b"%PDF-1.4\nthis is not a PDF body").status_code == 200
    extract_uploads()
    assert api.manifest(sid)["files"][0]["digest_status"] == "error"
    assert not LibraryRecord.objects.filter(file_id=fid).exists()
    assert library.search(_scope(sid), "capital cost").hits == []


def test_files_are_indexed_by_the_worker(member, celery_worker_thread):
    api, _team = member
    sid = api.create_session()
    _upload(api, sid, {"report.pdf": (FIXTURES / "report.pdf").read_bytes()})
    wait_until(lambda: LibraryRecord.objects.filter(scope=_scope(sid)).count() == 3, message="worker indexing")
    assert library.search(_scope(sid), "regulator every quarter").hits[0].page == 3


# --- providers ---------------------------------------------------------------


def _result(doc, page, score, provider="library", text="x"):
    return SearchResult(
        provider=provider, doc_id=doc, filename=f"{doc}.pdf", text=text, score=score, page=page, relevance_score=score
    )


def test_deduplicate_keeps_the_best_score_per_document_page():
    results = [_result("abc", 1, 0.90), _result("abc", 1, 0.95), _result("def", 2, 0.85), _result("abc", 2, 0.5)]
    deduped = deduplicate_results(results)
    assert [(r.doc_id, r.page, r.relevance_score) for r in deduped] == [
        ("abc", 1, 0.95),
        ("def", 2, 0.85),
        ("abc", 2, 0.5),
    ]


def test_deduplicate_100_results():
    results = [_result(f"d{i % 10}", i % 5, (i * 37 % 100) / 100) for i in range(100)]
    deduped = deduplicate_results(results)
    assert len(deduped) == len({(r.doc_id, r.page) for r in results})
    for kept in deduped:
        assert kept.relevance_score == max(r.relevance_score for r in results if r.location_key == kept.location_key)


class FakeSearxng:
    """SearXNG's JSON API on loopback; `mode` picks how it answers."""

    def __init__(self):
        self.mode = "ok"
        self.queries: list[dict] = []
        self.answer_late = threading.Event()  # "slow" holds its answer until this is set (stop())
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.queries.append({"path": urlparse(self.path).path, **parse_qs(urlparse(self.path).query)})
                if fake.mode == "forbidden":
                    return self._send(403, b"Forbidden")
                if fake.mode == "garbage":
                    return self._send(200, b"<html>not json</html>")
                if fake.mode == "slow":  # no answer until the client has given up
                    fake.answer_late.wait(timeout=60)
                body = {
                    "query": fake.queries[-1]["q"][0],
                    "results": [
                        {
                            "url": "https://example.org/b",
                            "title": "Leak <b>study</b>",
                            "content": "Night flow fell.",
                            "engine": "duckduckgo",
                            "score": 0.5,
                        },
                        {
                            "url": "https://example.org/a",
                            "title": "Water losses",
                            "content": "Losses were 18 %.",
                            "engine": "wikipedia",
                            "score": 2.0,
                            "publishedDate": "2022-06-01T00:00:00",
                        },
                        {"title": "no url, skipped"},
                    ],
                }
                self._send(200, json.dumps(body).encode())

            def _send(self, status, body):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self):
        self.answer_late.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def searxng():
    fake = FakeSearxng()
    yield fake
    fake.stop()


def test_searxng_results_are_parsed_and_ordered_by_score(searxng):
    results = SearxngSearch(searxng.url + "/").search("water losses", 5)
    assert searxng.queries == [{"path": "/search", "q": ["water losses"], "format": ["json"]}]
    assert [(r.url, r.filename, r.score) for r in results] == [
        ("https://example.org/a", "Water losses", 2.0),
        ("https://example.org/b", "Leak <b>study</b>", 0.5),
    ]
    assert results[0].timestamp == "2022-06-01T00:00:00" and results[0].location == "https://example.org/a"
    assert SearxngSearch(searxng.url).search("water", 1)[0].url == "https://example.org/a"


@pytest.mark.parametrize(
    "mode, message",
    [("forbidden", "HTTP 403 (is the json format enabled"), ("garbage", "unusable answer"), ("slow", "unreachable")],
)
def test_searxng_failures_raise_search_errors(searxng, mode, message):
    searxng.mode = mode
    with pytest.raises(SearchError, match=message.replace("(", r"\(")):
        SearxngSearch(searxng.url, timeout=0.3).search("water", 5)


def test_search_all_combines_library_and_web_and_survives_a_failing_provider(member, searxng):
    api, _team = member
    sid = api.create_session()
    _upload(api, sid, {"report.pdf": (FIXTURES / "report.pdf").read_bytes()})
    providers = [LibrarySearch(_scope(sid)), SearxngSearch(searxng.url)]
    response = search_all(providers, "water losses programme cost", 10)
    assert response.errors == []
    assert {r.provider for r in response.results} == {"library", "searxng"}
    assert max(r.relevance_score for r in response.results if r.provider == "library") == 1.0
    assert max(r.relevance_score for r in response.results if r.provider == "searxng") == 1.0
    assert [r.relevance_score for r in response.results] == sorted(
        (r.relevance_score for r in response.results), reverse=True
    )

    searxng.mode = "forbidden"
    response = search_all(providers, "water losses programme cost", 10)
    assert response.errors and response.errors[0].startswith("searxng: ")
    assert {r.provider for r in response.results} == {"library"}


def test_providers_come_from_settings(settings):
    settings.GROUNDWORK_SEARCH_PROVIDERS = ["library", "searxng"]
    settings.GROUNDWORK_SEARXNG_URL = ""
    with pytest.raises(ValueError, match="GROUNDWORK_SEARXNG_URL"):
        providers_for_scope("team:1")
    settings.GROUNDWORK_SEARXNG_URL = "http://127.0.0.1:9"
    assert [p.name for p in providers_for_scope("team:1")] == ["library", "searxng"]
    with pytest.raises(ValueError, match="unknown search provider"):
        providers_for_scope("team:1", ["bing"])


# --- ContextBuilder ----------------------------------------------------------


class StaticProvider:
    name = "static"

    def __init__(self, results):
        self.results = results

    def search(self, query, limit):
        return self.results[:limit]


def _sources(n, words=40):
    return [
        SearchResult(
            provider="static",
            doc_id=f"doc{i}",
            filename=f"file{i}.pdf",
            page=i + 1,
            text=" ".join(f"Sentence {i}.{w} holds a fact." for w in range(words)),
            score=float(n - i),
        )
        for i in range(n)
    ]


def test_context_is_numbered_in_rank_order_with_document_and_page():
    context = ContextBuilder([StaticProvider(_sources(3, words=5))]).build_context("q")
    assert not context.truncated and context.errors == []
    headers = [line for line in context.formatted_text.splitlines() if line.startswith("[Document")]
    assert headers == [
        "[Document 1: file0.pdf, Page 1]",
        "[Document 2: file1.pdf, Page 2]",
        "[Document 3: file2.pdf, Page 3]",
    ]
    assert context.get_citation_map()[2].doc_id == "doc1"
    assert context.total_tokens == estimate_tokens(context.formatted_text)


def test_context_respects_max_sources_and_drops_lowest_scored_first():
    builder = ContextBuilder([StaticProvider(_sources(12))], max_sources=10, max_tokens=100_000)
    context = builder.build_context("q", num_results=12)
    assert [s.doc_id for s in context.sources] == [f"doc{i}" for i in range(10)] and not context.truncated

    one_source = estimate_tokens(builder.format_source_citation(_sources(1)[0], 1))
    tight = ContextBuilder([StaticProvider(_sources(10))], max_tokens=int(one_source * 3.5))
    context = tight.build_context("q")
    assert context.truncated and [s.doc_id for s in context.sources] == ["doc0", "doc1", "doc2"]
    assert context.total_tokens <= int(one_source * 3.5)


def test_a_best_source_too_big_for_the_budget_is_cut_at_a_sentence():
    context = ContextBuilder([StaticProvider(_sources(2, words=400))], max_tokens=120).build_context("q")
    assert context.truncated and len(context.sources) == 1
    body = context.formatted_text.split("\n", 1)[1]
    assert body.endswith("holds a fact.\n[truncated]")
    assert context.total_tokens <= 120


def test_section_and_web_citations():
    results = [
        SearchResult(
            provider="library",
            doc_id="d",
            filename="notes.md",
            text="Pumps.",
            score=2.0,
            section_path="Field notes > Northgate",
            position=2,
        ),
        SearchResult(
            provider="searxng", doc_id="https://e.org", filename="A page", text="Web.", score=1.0, url="https://e.org"
        ),
    ]
    text = ContextBuilder([StaticProvider(results)]).build_context("q").formatted_text
    assert text.splitlines()[0] == "[Document 1: notes.md, Section: Field notes > Northgate]"
    assert "[Document 2: A page, https://e.org]" in text


def test_context_from_the_library_end_to_end(member):
    api, _team = member
    sid = _session_with_report_and_notes(api)
    context = ContextBuilder(providers_for_scope(_scope(sid)), max_sources=2).build_context("capital cost programme")
    assert context.formatted_text.startswith("[Document 1: report.pdf, Page 2]\nCosts and maintenance")
    assert context.sources[0].sourceref == "report.pdf::S2"


# --- management command ------------------------------------------------------


def test_search_command_prints_ranked_results(member):
    api, _team = member
    sid = _session_with_report_and_notes(api)
    out = StringIO()
    call_command("search", "regulator every quarter", "--session", sid, "--context", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("  1. 1.000 (score ") and lines[0].endswith("report.pdf, Page 3  report.pdf::S3")
    assert "--- context: " in out.getvalue() and "[Document 1: report.pdf, Page 3]" in out.getvalue()
    with pytest.raises(CommandError, match="no research session"):
        call_command("search", "x", "--session", "00000000-0000-0000-0000-000000000000", stdout=StringIO())
