"""Races, recovery and the aggregate tree: the pipeline's promises under stress."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from context_app import services
from context_app.models import ContextFile, ContextSet, DigestStatus
from context_app.pipeline import aggregate as aggregate_stage
from context_app.pipeline import digest as digest_stage
from context_app.pipeline import dispatch as dispatch_stage
from context_app.pipeline import recovery as recovery_stage
from llm_platform.models import LLMCall
from llm_platform.sourcerefs import ref_key
from tests import session_worker
from tests.factories import ContextApi, make_member, model_calls, wait_until

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def context_set_of(sid) -> ContextSet:
    return ContextSet.objects.get(session_id=sid)


@pytest.mark.django_db(transaction=True)
def test_a_digest_job_for_replaced_content_is_dropped(api, eager, monkeypatch):
    sid = api.create_session()
    api.upload(sid, {"plan.txt": b"The first plan budgets 40 pumps for 2024."})
    file = ContextFile.objects.get()
    old_hash = file.extracted_text_hash
    ContextFile.objects.filter(pk=file.pk).update(digest_status=DigestStatus.PARSING)

    real_generate = digest_stage.generate_file_digest

    def replace_while_the_model_runs(**kwargs):
        generated = real_generate(**kwargs)
        services.replace_file(
            context_set_of(sid), file.pk, services.Upload("plan.txt", b"The second plan budgets 55 pumps.")
        )
        return generated

    monkeypatch.setattr(digest_stage, "generate_file_digest", replace_while_the_model_runs)
    digest_stage.digest_file(file.pk, old_hash)
    file.refresh_from_db()
    assert file.extracted_text_hash != old_hash
    assert file.digest_status == DigestStatus.STALE and file.digest is None, "the stale result must not be shown"

    digest_stage.digest_file(file.pk, old_hash)  # a redelivered copy of the old job
    assert model_calls(sid, "per_file_digest") == 1


@pytest.mark.django_db(transaction=True)
def test_an_aggregate_built_from_old_inputs_is_dropped(api, eager, monkeypatch):
    sid = api.create_session()
    api.upload(sid, {"a.txt": b"Site A used 12 MWh in 2022.", "b.txt": b"Site B used 19 MWh in 2022."})
    real_tree = aggregate_stage.aggregate_tree
    built_from: list[list[str]] = []

    def delete_while_building(context_set, files):
        digest = real_tree(context_set, files)
        built_from.append(sorted(f.filename for f in files))
        if len(built_from) == 1:  # the first build loses the race against a delete
            services.delete_file(context_set_of(sid), ContextFile.objects.get(filename="b.txt").pk)
        return digest

    monkeypatch.setattr(aggregate_stage, "aggregate_tree", delete_while_building)
    services.request_parse(context_set_of(sid))
    context_set = context_set_of(sid)
    assert built_from == [["a.txt", "b.txt"], ["a.txt"]], "the stale build is redone from current inputs"
    assert context_set.aggregate_digest_status == DigestStatus.READY
    assert context_set.aggregate_revision == context_set.revision
    assert "b.txt" not in str(context_set.aggregate_digest.content)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("moves_to", [DigestStatus.PARSING, DigestStatus.STALE])
def test_a_file_that_starts_moving_before_the_aggregate_is_claimed_keeps_it_waiting(api, eager, monkeypatch, moves_to):
    """A file claimed for Task A (-> parsing) or just extracted (-> stale, with a text) between the
    aggregate's checks and its claim: the aggregate must wait for it, not be built without it."""
    sid = api.create_session()
    api.upload(sid, {"a.txt": b"Site A used 12 MWh in 2022.", "b.txt": b"Site B used 19 MWh in 2022."})
    services.request_parse(context_set_of(sid))
    assert model_calls(sid, "aggregate_digest") == 1
    ContextSet.objects.filter(session_id=sid).update(aggregate_digest_status=DigestStatus.STALE, parse_requested=True)
    real_parsing_wanted = dispatch_stage.parsing_wanted

    def file_moves_meanwhile(context_set):
        ContextFile.objects.filter(filename="b.txt").update(digest_status=moves_to)
        return real_parsing_wanted(context_set)

    monkeypatch.setattr(dispatch_stage, "parsing_wanted", file_moves_meanwhile)
    dispatch_stage.schedule_aggregate_if_due(context_set_of(sid).pk)
    assert context_set_of(sid).aggregate_digest_status == DigestStatus.STALE
    assert model_calls(sid, "aggregate_digest") == 1


@pytest.mark.django_db(transaction=True)
def test_a_file_finishing_while_the_aggregate_fails_still_gets_its_aggregate(api, eager, monkeypatch):
    """Regression for a race: the failing build's bookkeeping ended Parse now while a file had just come in."""
    sid = api.create_session()
    api.upload(sid, {"empty.txt": b"   \n", "alpha.txt": b"The pilot ran from March 2021 to June 2022."})
    alpha = ContextFile.objects.get(filename="alpha.txt")
    ContextFile.objects.filter(pk=alpha.pk).update(digest_status=DigestStatus.PARSING)  # claimed by a worker
    ContextSet.objects.filter(session_id=sid).update(aggregate_digest_status=DigestStatus.PARSING, parse_requested=True)

    # Worker 2 finishes alpha's digest right after worker 1 wrote its "no usable context" aggregate;
    # alpha's own scheduling step runs last.
    deferred = []
    monkeypatch.setattr(digest_stage, "after_file_digest", lambda *args: deferred.append(args))
    real_write = aggregate_stage._write_aggregate

    def write_then_let_alpha_finish(*args):
        status = real_write(*args)
        digest_stage.digest_file(alpha.pk, alpha.extracted_text_hash)
        return status

    monkeypatch.setattr(aggregate_stage, "_write_aggregate", write_then_let_alpha_finish)
    aggregate_stage.build_aggregate(context_set_of(sid).pk)
    monkeypatch.undo()
    digest_stage.after_file_digest(*deferred.pop())

    context_set = context_set_of(sid)
    assert context_set.aggregate_digest_status == DigestStatus.READY
    assert context_set.aggregate_digest is not None and context_set.parse_requested is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker_thread")
def test_files_left_parsing_by_a_dead_worker_are_recovered(api):
    sid = api.create_session()
    api.upload(sid, {"a.txt": b"Site A used 12 MWh in 2022."})
    api.extracted(sid)  # the worker's extraction holds the file's lease while it runs
    expired = timezone.now() - timedelta(seconds=1)
    ContextFile.objects.update(
        digest_status=DigestStatus.PARSING, lease_owner="gone@elsewhere#b00t#4242", lease_expires_at=expired
    )
    context_set_of(sid).__class__.objects.update(parse_requested=True)
    assert recovery_stage.recover_unheld_jobs() == {context_set_of(sid).pk}
    api.parse(sid)
    manifest = api.settle(sid)
    assert manifest["files"][0]["digest_status"] == "ready"
    assert model_calls(sid, "per_file_digest") == 1


@pytest.mark.django_db(transaction=True)
def test_large_sets_aggregate_as_a_tree_and_one_change_reruns_only_its_path(api, eager, settings):
    settings.GROUNDWORK_AGGREGATE_FANOUT = 4
    sid = api.create_session()
    files = {f"doc-{i:02}.txt": f"District {i} replaced {i + 3} pumps in 20{10 + i}.".encode() for i in range(20)}
    api.upload(sid, files)
    services.request_parse(context_set_of(sid))
    first_build = model_calls(sid, "aggregate_digest")
    assert first_build > 2, "20 files with fan-out 4 need a tree"
    context_set = context_set_of(sid)
    aggregate = context_set.aggregate_digest.content
    assert sorted(f["filename"] for f in aggregate["batch"]["files"]) == sorted(files)
    cited_files = {ref_key(ref).split("::")[0] for fact in aggregate["facts"] for ref in fact["sources"]}
    assert cited_files == set(files)

    target = ContextFile.objects.get(filename="doc-07.txt")
    services.replace_file(
        context_set, target.pk, services.Upload("doc-07.txt", b"District 7 replaced 99 pumps in 2031.")
    )
    services.request_parse(context_set_of(sid))
    rebuilt = model_calls(sid, "aggregate_digest") - first_build
    assert 1 <= rebuilt < first_build
    assert model_calls(sid, "per_file_digest") == 21
    context_set.refresh_from_db()
    assert "99 pumps" in str(context_set.aggregate_digest.content)
    assert context_set.aggregate_revision == context_set.revision


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker_thread")
def test_every_real_format_goes_through_the_whole_pipeline(api):
    sid = api.create_session()
    names = ["report.pdf", "brief.docx", "notes.md", "page.html", "data.csv", "records.json", "legacy.txt"]
    response = api.upload(sid, {name: (FIXTURES / name).read_bytes() for name in names})
    assert response.status_code == 201
    api.parse(sid)
    manifest = api.settle(sid)
    assert {f["filename"]: f["digest_status"] for f in manifest["files"]} == {name: "ready" for name in names}
    formats = {f["filename"]: f["format"] for f in manifest["files"]}
    assert formats["report.pdf"] == "pdf" and formats["brief.docx"] == "docx" and formats["legacy.txt"] == "text"
    pdf = next(f for f in manifest["files"] if f["filename"] == "report.pdf")
    assert pdf["page_count"] == 3
    spans = api.get(pdf["preview_url"]).json()["spans"]
    assert [s["locator"] for s in spans] == ["p. 1", "p. 2", "p. 3"]
    aggregate = api.get(f"/api/sessions/{sid}/context/digest").json()["digest"]
    assert len(aggregate["batch"]["files"]) == 7
    assert LLMCall.objects.filter(task="per_file_digest").count() == 7


DISTRICTS = "".join(
    f"## District {n}\n\nIn 20{10 + n} district {n} replaced {n * 7} valves for {n + 1}.{n} million euros. "
    + "Crews may have worked at night to keep supply interruptions short. " * 4
    + "\n\n"
    for n in range(1, 13)
)


def test_span_windows_fit_the_budget_keep_order_and_cover_every_span():
    from digests.envelopes import per_file_envelope
    from digests.generate import span_windows
    from extraction import ExtractionLimits, extract_document
    from llm_platform.ir import estimate_tokens

    spans = [s.as_dict() for s in extract_document(DISTRICTS.encode(), "d.md", "", ExtractionLimits()).spans]
    windows = span_windows("d.md", "markdown", spans, 400)
    assert len(windows) > 2
    assert [s["span_id"] for w in windows for s in w] == [s["span_id"] for s in spans]
    assert all(estimate_tokens(per_file_envelope("d.md", "markdown", w)) <= 400 for w in windows)
    assert span_windows("d.md", "markdown", spans, 10**6) == [spans]
    assert [len(w) for w in span_windows("d.md", "markdown", spans, 1)] == [1] * len(spans)  # one span at least


@pytest.mark.django_db(transaction=True)
def test_a_file_larger_than_the_model_input_is_digested_in_windows(api, settings, celery_worker_thread):
    settings.GROUNDWORK_DIGEST_INPUT_TOKENS = 400
    sid = api.create_session()
    api.upload(sid, {"districts.md": DISTRICTS.encode()})
    api.parse(sid)
    manifest = api.settle(sid)
    file = manifest["files"][0]
    assert file["digest_status"] == "ready"
    digest = api.get(f"/api/sessions/{sid}/context/files/{file['file_id']}/digest").json()
    digest = digest.get("digest", digest)
    windows = model_calls(sid, "per_file_digest")
    assert windows > 2 and digest["windows"] == windows
    assert [f["id"] for f in digest["facts"]] == [f"F{n}" for n in range(1, len(digest["facts"]) + 1)]
    spans = {
        s["span_id"] for s in api.get(f"/api/sessions/{sid}/context/files/{file['file_id']}/preview").json()["spans"]
    }
    cited = {ref.split("::")[1] for f in digest["facts"] for ref in f["sources"]}
    assert cited <= spans and {"S2", f"S{len(spans)}"} <= cited  # facts from the first and the last window
    assert model_calls(sid, "aggregate_digest") == 1


@pytest.fixture
def build_aggregate_runs():
    """How many times the worker has run build_aggregate, counted as it happens."""
    from celery.signals import task_postrun

    runs = []

    def count(sender=None, **kwargs):
        if sender is not None and sender.name == "context.build_aggregate":
            runs.append(1)

    task_postrun.connect(count, weak=False)
    yield runs
    task_postrun.disconnect(count)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker_thread")
@pytest.mark.parametrize("failing_task", ["per_file_digest", "aggregate_digest"])
def test_a_failed_aggregate_is_not_rebuilt_until_asked(api, scripted_llm, build_aggregate_runs, failing_task):
    """Regression: a failed aggregate re-queued itself from its own task, forever."""
    scripted_llm.go_down(failing_task)  # every model call for this task fails, as an unavailable provider's do
    sid = api.create_session()
    api.upload(sid, {"a.txt": b"The pilot ran from March 2021 to June 2022.\n"})
    api.parse(sid)
    manifest = api.settle(sid)
    assert manifest["aggregate_digest_status"] == "error"
    assert manifest["aggregate_error"]["message"]
    if failing_task == "per_file_digest":
        assert not build_aggregate_runs, "every file failed: there is nothing to aggregate, so nothing is built"
    else:  # the failed build wrote its error before its task returned: count it once it has
        wait_until(lambda: build_aggregate_runs, message="the failed build's task to return")
    builds, calls = len(build_aggregate_runs), model_calls(sid, "aggregate_digest", attempt=None)
    # A rebuild queued by the failed one is in the broker or running until the worker is idle (a looping
    # one never lets it be: the wait fails); once it is, any rebuild has run and been counted.
    session_worker.wait_until_idle(timeout=30)
    assert len(build_aggregate_runs) == builds
    assert model_calls(sid, "aggregate_digest", attempt=None) == calls
    assert context_set_of(sid).parse_requested is False

    scripted_llm.come_back()  # the outage ends; Parse now (or Retry) rebuilds
    if failing_task == "per_file_digest":
        api.post(f"/api/sessions/{sid}/context/files/{api.file_id(sid, 'a.txt')}/retry")
    else:
        api.parse(sid)
    assert api.settle(sid)["aggregate_digest_status"] == "ready"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker_thread")
def test_a_new_prompt_version_reruns_task_a_at_the_next_parse(api, settings):
    """Seed 000 §6.2: prompt changes → prompt_version changes → Task A again; nothing else does."""
    sid = api.create_session()
    api.upload(sid, {"a.txt": b"The pilot ran from March 2021 to June 2022.", "b.txt": b"It cost 2 million euros."})
    api.parse(sid)
    api.settle(sid)
    api.parse(sid)  # nothing changed: no call
    api.settle(sid)
    assert model_calls(sid, "per_file_digest") == 2

    settings.CONTEXT_PREPROCESS_PROMPT_VERSION = "v1.5"
    api.parse(sid)

    def digested_under_the_new_prompt():
        manifest = api.manifest(sid)
        done = all(f["prompt_version"] == "v1.5" and f["digest_status"] == "ready" for f in manifest["files"])
        return manifest if done and manifest["aggregate_digest_status"] == "ready" else None

    manifest = wait_until(digested_under_the_new_prompt, message="the files to be digested under v1.5")
    assert all(f["digest_status"] == "ready" for f in manifest["files"])
    assert model_calls(sid, "per_file_digest") == 4
    assert LLMCall.objects.filter(task="per_file_digest", prompt_version="v1.5").count() == 2
