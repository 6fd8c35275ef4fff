"""Search by meaning over the library (context_app.meaning): windows, vectors, hybrid ranking, fallback.

The vectors come from a fake OpenAI-compatible server (tests/fake_embeddings.py) through the
real SDK; the real local model has its own tests (tests/llm_platform/test_minilm.py)."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from context_app import library, meaning
from context_app.library import SearchMode
from context_app.models import ContextFile, LibraryRecord, LibraryWindow
from context_app.pipeline import jobs
from llm_platform.models import LLMCall
from tests.factories import ContextApi, extract_uploads, make_member
from workspaces.models import ResearchSession
from workspaces.services import team_cache_scope

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(autouse=True)
def vectors_made_here(monkeypatch):
    """These tests make the vectors themselves (meaning.embed_file, the worker job's service) and queue
    no job for them: a session-wide test worker embedding the same windows meanwhile would race them."""
    monkeypatch.setattr(jobs, "enqueue_embedding", lambda file_id: None)


@pytest.fixture
def api():
    user, _team = make_member()
    return ContextApi(user)


def _library(api, files: dict[str, bytes]) -> tuple[str, str]:
    sid = api.create_session()
    assert api.upload(sid, files).status_code == 201
    extract_uploads()
    for file_id in ContextFile.objects.filter(context_set__session_id=sid).values_list("pk", flat=True):
        meaning.embed_file(file_id)
    return sid, team_cache_scope(ResearchSession.objects.get(pk=sid).team)


def test_windows_cover_each_record_within_the_word_limit():
    text = " ".join(f"Sentence {i} says a little more about pumps." for i in range(60))
    bounds = meaning.window_bounds(text, size=30)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    assert all(len(text[a:b].split()) <= 30 for a, b in bounds)
    assert all(text[b - 1] == "." for a, b in bounds[:-1])  # they end at a sentence's end where one is near
    assert "".join(text[a:b] + " " for a, b in bounds).split() == text.split()


def words(count: int, word: str) -> str:
    return " ".join([word] * (count - 1) + [f"{word}."])


def test_windows_keep_short_paragraphs_whole_and_pack_neighbours_that_fit():
    paragraphs = [words(20, "alpha"), words(20, "beta"), words(60, "gamma"), words(10, "delta")]
    text = "\n\n".join(paragraphs)
    windows = [text[a:b] for a, b in meaning.window_bounds(text, size=48)]
    assert windows[0] == f"{paragraphs[0]}\n\n{paragraphs[1]}"  # 40 words: one window
    assert all(len(window.split()) <= 48 for window in windows)
    gammas = [window for window in windows if "gamma" in window]
    assert len(gammas) == 2 and not any("beta" in window for window in gammas), "a long paragraph is cut alone"
    assert windows[-1].endswith(paragraphs[3]) and "gamma" in windows[-1], "its tail and the next short one"
    assert " ".join(windows).split() == text.split()


def test_a_window_is_embedded_under_its_heading_and_the_documents_lead():
    records = [
        LibraryRecord(text="# numfmt(1)", section_path="numfmt(1)"),
        LibraryRecord(text="## NAME\n\nnumfmt - Convert numbers from/to human-readable strings", section_path="x"),
    ]
    lead = meaning.document_lead(records)
    assert lead == "numfmt - Convert numbers from/to human-readable strings"
    options = LibraryRecord(
        text="## OPTIONS\n\n--to=UNIT auto-scale output numbers to UNITs", section_path="numfmt(1) > OPTIONS"
    )
    start = options.text.index("--to")
    assert meaning.window_text(options, start, len(options.text), lead) == (
        f"numfmt(1) > OPTIONS: {lead}\n--to=UNIT auto-scale output numbers to UNITs"
    )
    assert meaning.document_lead([records[0]]) == "", "a document of headings alone has no lead"


def test_every_window_gets_a_vector_once_and_the_chip_counts_them(api, remote_embeddings):
    sid, _scope = _library(api, {name: (FIXTURES / name).read_bytes() for name in ("report.pdf", "notes.md")})
    files = ContextFile.objects.filter(context_set__session_id=sid)
    windows = LibraryWindow.objects.filter(record__file__in=files)
    assert windows.exists() and not windows.filter(embedding=None).exists()
    for file in files:
        assert file.meaning_windows == file.meaning_embedded == windows.filter(record__file=file).count() > 0
    calls = LLMCall.objects.filter(task="embed").count()

    for file in files:  # again, as a retried job would
        meaning.embed_file(file.pk)
    api.parse(sid)
    extract_uploads()
    assert LLMCall.objects.filter(task="embed").count() == calls


def test_a_changed_file_embeds_only_its_own_windows(api, remote_embeddings):
    sid, _scope = _library(
        api, {"a.md": b"# Pumps\n\nThe north pump runs at night.\n", "b.md": b"# Valves\n\nValves.\n"}
    )
    sent = len(remote_embeddings.inputs)
    file_a = ContextFile.objects.get(context_set__session_id=sid, filename="a.md")
    api.replace(sid, str(file_a.pk), "a.md", b"# Pumps\n\nThe north pump now runs by day.\n")
    extract_uploads()
    meaning.embed_file(file_a.pk)
    new_inputs = remote_embeddings.inputs[sent:]
    assert new_inputs and all("pump" in text.lower() for text in new_inputs)


def test_hybrid_search_fuses_both_rankings_and_each_mode_can_be_asked_for(api, remote_embeddings):
    sid, scope = _library(api, {name: (FIXTURES / name).read_bytes() for name in ("report.pdf", "notes.md")})
    query = "capital cost of the programme in euros"

    hybrid = library.search(scope, query, 5)
    dense = library.search(scope, query, 5, mode=SearchMode.DENSE)
    keyword = library.search(scope, query, 5, mode=SearchMode.BM25)

    assert (hybrid.mode, dense.mode, keyword.mode) == (SearchMode.HYBRID, SearchMode.DENSE, SearchMode.BM25)
    assert not hybrid.warning and hybrid.hits and dense.hits and keyword.hits
    assert hybrid.hits[0].filename == "report.pdf" and hybrid.hits[0].page == 2
    fused_ids = {hit.record_id for hit in hybrid.hits}
    assert fused_ids <= {hit.record_id for hit in library.search(scope, query, 20, mode=SearchMode.DENSE).hits} | {
        hit.record_id for hit in library.search(scope, query, 20, mode=SearchMode.BM25).hits
    }


def test_a_session_searches_only_its_own_vectors(api, remote_embeddings):
    sid, scope = _library(api, {"memo.txt": b"Chlorine dosing is checked every morning by the day crew."})
    other = api.create_session()
    assert api.upload(other, {"other.txt": b"Chlorine dosing at the second plant is weekly."}).status_code == 201
    extract_uploads()
    meaning.embed_file(ContextFile.objects.get(filename="other.txt").pk)
    own = ContextFile.objects.get(filename="memo.txt").context_set_id

    hits = library.search(scope, "chlorine dosing", 5, context_set_id=own, mode=SearchMode.DENSE).hits
    assert [hit.filename for hit in hits] == ["memo.txt"]


@pytest.mark.parametrize("mode", ["down", "html", "nan", "slow"])
def test_meaning_unavailable_gives_keyword_results_and_a_warning(api, remote_embeddings, settings, mode):
    sid, scope = _library(api, {name: (FIXTURES / name).read_bytes() for name in ("report.pdf",)})
    remote_embeddings.mode = mode  # slow: no answer before the client's 2 s timeout

    found = library.search(scope, "capital cost of the programme in euros", 5)

    assert found.mode == SearchMode.BM25 and "keywords only" in found.warning
    assert found.hits[0].filename == "report.pdf" and found.hits[0].page == 2


def test_files_end_ready_and_searchable_when_the_embeddings_server_is_down(api, remote_embeddings):
    remote_embeddings.mode = "down"
    sid, scope = _library(api, {"memo.txt": b"Chlorine dosing is checked every morning."})
    file = ContextFile.objects.get(context_set__session_id=sid)
    assert file.meaning_embedded == 0 and file.meaning_windows > 0
    assert library.search(scope, "chlorine dosing", 5, mode=SearchMode.BM25).hits[0].filename == "memo.txt"
    assert meaning.files_to_embed() == [file.pk]  # the backfill takes it up once the server is back

    remote_embeddings.mode = "ok"
    from llm_platform import embeddings

    embeddings.reset_provider()
    meaning.embed_file(file.pk)
    file.refresh_from_db()
    assert file.meaning_embedded == file.meaning_windows and meaning.files_to_embed() == []


def test_the_search_command_takes_a_mode_and_prints_the_fallback_warning(api, remote_embeddings):
    sid, _scope = _library(api, {"memo.txt": b"Chlorine dosing is checked every morning."})
    out, err = StringIO(), StringIO()
    call_command("search", "chlorine dosing", session=sid, mode="dense", stdout=out, stderr=err)
    assert "memo.txt" in out.getvalue() and not err.getvalue()

    remote_embeddings.mode = "down"  # (the first query's vector is cached: a new one goes to the server)
    out, err = StringIO(), StringIO()
    call_command("search", "chlorine dosing every morning", session=sid, stdout=out, stderr=err)
    assert "memo.txt" in out.getvalue() and "keywords only" in err.getvalue()


def test_deleting_a_file_drops_its_windows_from_the_next_search(api, remote_embeddings):
    sid, scope = _library(api, {"memo.txt": b"Chlorine dosing is checked every morning."})
    file = ContextFile.objects.get(context_set__session_id=sid)
    assert library.search(scope, "chlorine dosing", 5, mode=SearchMode.DENSE).hits
    assert api.delete(f"/api/sessions/{sid}/context/files/{file.pk}").status_code == 200
    assert not LibraryRecord.objects.filter(file_id=file.pk).exists()
    assert library.search(scope, "chlorine dosing", 5, mode=SearchMode.DENSE).hits == []


def test_the_backfill_command_embeds_what_was_indexed_while_embeddings_were_off(api, remote_embeddings, settings):
    settings.GROUNDWORK_EMBEDDINGS = "off"
    sid = api.create_session()
    assert api.upload(sid, {"memo.txt": b"Chlorine dosing is checked every morning."}).status_code == 201
    extract_uploads()
    settings.GROUNDWORK_EMBEDDINGS = "openai"
    out = StringIO()

    call_command("embed_library", stdout=out)

    assert "1 file(s) to embed" in out.getvalue() and "1/1 memo.txt: 1/1 windows" in out.getvalue()
    assert meaning.files_to_embed() == []


def test_each_batch_of_vectors_tells_the_page_how_far_it_got(api, remote_embeddings, settings, monkeypatch):
    pushed = []
    monkeypatch.setattr(meaning, "notify_context_changed_soon", pushed.append)
    settings.GROUNDWORK_EMBEDDINGS_BATCH_SIZE = 2
    sid, _scope = _library(api, {"notes.md": (FIXTURES / "notes.md").read_bytes()})
    file = ContextFile.objects.get(context_set__session_id=sid)
    assert file.meaning_windows > 2 and file.meaning_embedded == file.meaning_windows
    assert pushed == [file.context_set_id] * -(-file.meaning_windows // 2)  # one (paced) push a batch
