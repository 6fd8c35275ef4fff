"""Batch ingest: a large parse's Task A through the Message Batches API (the real SDK, a fake API on loopback,
a real Redis and Celery worker), polled by the beat task, its answers validated and cached like a call's."""

import pytest

from context_app import batch_submit
from context_app.models import ContextFile, ContextSet, DigestCacheEntry, DigestStatus
from context_app.pipeline import dispatch as dispatch_stage
from context_app.pipeline import jobs
from context_app.pipeline import recovery as recovery_stage
from context_app.tasks import poll_llm_batches
from llm_platform.models import LLMBatch, LLMCall
from llm_platform.output_schema import sent_schema
from llm_platform.prompts import load_schema
from tests.context.test_context_flow import ALPHA, BETA, GAMMA
from tests.factories import ContextApi, make_member, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

FILES = {"alpha.txt": ALPHA, "beta.md": BETA, "gamma.txt": GAMMA}


@pytest.fixture
def api(fake_anthropic, settings):
    settings.GROUNDWORK_LLM_BATCH_MIN_FILES = 3
    user, _team = make_member()
    return ContextApi(user)


def uploaded(api: ContextApi, *, batch_ingest: bool) -> str:
    sid = api.create_session()
    assert api.patch(f"/api/sessions/{sid}/context", {"batch_ingest": batch_ingest}, format="json").status_code == 200
    assert api.upload(sid, FILES).status_code == 201
    api.extracted(sid)
    return sid


def test_a_large_parse_is_one_batch_polled_then_validated_and_cached(api, fake_anthropic):
    sid = uploaded(api, batch_ingest=True)
    api.parse(sid)

    def queued():
        files = api.manifest(sid)["files"]
        return all(f["digest_status"] == "parsing" and f["digest_detail"] == "queued in batch" for f in files)

    wait_until(queued, message="every file queued in the batch")
    [submitted] = fake_anthropic.batch_requests()
    assert fake_anthropic.message_requests() == []  # no call of its own
    requests = submitted["body"]["requests"]
    assert len(requests) == 3
    for request in requests:
        assert request["params"]["output_config"]["format"]["schema"] == sent_schema(load_schema("per_file_digest"))
        assert request["params"]["system"][0]["cache_control"] == {"type": "ephemeral"}

    fake_anthropic.script(("invalid_json",))  # the first answer the batch gives is not JSON
    poll_llm_batches.delay()  # still in progress: nothing taken
    batch_id = LLMBatch.objects.get().provider_batch_id
    wait_until(lambda: fake_anthropic.batches[batch_id]["polls"] == 1, message="the first poll")
    assert queued() and LLMBatch.objects.get().status == "submitted"

    poll_llm_batches.delay()  # ended: every answer through the checks and the cache
    manifest = api.settle(sid)
    assert {f["digest_status"] for f in manifest["files"]} == {"ready"}
    assert {f["digest_detail"] for f in manifest["files"]} == {""}
    assert manifest["aggregate_digest_status"] == "ready"
    assert LLMBatch.objects.get().status == "ended"

    batched = LLMCall.objects.filter(task="per_file_digest", batch=True)
    assert sorted(c.outcome for c in batched) == ["invalid", "ok", "ok"]  # taken in no particular order
    assert sum(c.cache_read_input_tokens for c in batched) > 0  # the system prompt, read from the cache
    # The invalid answer had its one repair call, at once (not batched).
    [repair] = LLMCall.objects.filter(task="per_file_digest", batch=False)
    invalid = batched.get(outcome="invalid")
    assert (repair.attempt, repair.outcome, repair.subject) == (2, "ok", invalid.subject)
    assert DigestCacheEntry.objects.filter(kind="file").count() == 3

    poll_llm_batches.apply()  # safe twice: an ended batch is not taken again
    assert LLMCall.objects.filter(task="per_file_digest").count() == 4


def test_a_set_not_opted_in_parses_with_a_call_per_file(api, fake_anthropic):
    sid = uploaded(api, batch_ingest=False)
    api.parse(sid)
    api.settle(sid)
    assert fake_anthropic.batch_requests() == []
    assert LLMCall.objects.filter(task="per_file_digest", batch=False).count() == 3


def queued_in_a_batch(api: ContextApi, model: str) -> ContextSet:
    """A set whose files are parsing, queued in a submitted batch of `model` (no worker holds them)."""
    sid = uploaded(api, batch_ingest=True)
    context_set = ContextSet.objects.get(session_id=sid)
    batch = LLMBatch.objects.create(
        session_id=sid, provider="anthropic", model=model, provider_batch_id=f"msgbatch_{model}"
    )
    ContextFile.objects.update(
        digest_status=DigestStatus.PARSING, lease_owner="", lease_expires_at=None, llm_batch=batch
    )
    return context_set


def test_files_queued_in_a_running_batch_are_not_taken_for_unheld(api):
    context_set = queued_in_a_batch(api, "claude-test-model")
    assert recovery_stage.recover_unheld_jobs(queued=True) == set()  # a batch answers within 24 h
    LLMBatch.objects.update(status=LLMBatch.Status.ENDED)  # ended without taking them: unheld after all
    assert recovery_stage.recover_unheld_jobs(queued=True) == {context_set.pk}


def test_a_batch_of_another_model_is_ended_untaken_and_its_files_requeued(api, fake_anthropic, monkeypatch):
    context_set = queued_in_a_batch(api, "an-older-model")
    requeued = []
    monkeypatch.setattr(jobs, "enqueue_parse", requeued.append)
    poll_llm_batches.apply()
    assert LLMBatch.objects.get().status == "ended"
    assert [r["path"] for r in fake_anthropic.requests] == []  # not even asked: its answers are not used
    assert requeued == [context_set.pk]
    assert set(ContextFile.objects.values_list("digest_status", flat=True)) == {DigestStatus.STALE}


def test_a_parse_larger_than_a_batch_is_sent_as_several(api, fake_anthropic, monkeypatch):
    monkeypatch.setattr(batch_submit, "MAX_BATCH_REQUESTS", 2)
    sid = uploaded(api, batch_ingest=True)
    api.parse(sid)
    wait_until(lambda: LLMBatch.objects.count() == 2, message="two batches")
    assert sorted(len(r["body"]["requests"]) for r in fake_anthropic.batch_requests()) == [1, 2]
    fake_anthropic.batch_polls_before_end = 0
    poll_llm_batches.delay()
    api.settle(sid)
    assert LLMCall.objects.filter(task="per_file_digest", batch=True, outcome="ok").count() == 3


def test_a_batch_set_claims_nothing_while_a_file_is_still_being_extracted(api, fake_anthropic):
    sid = uploaded(api, batch_ingest=True)
    context_set = ContextSet.objects.get(session_id=sid)
    extracting = ContextFile.objects.filter(filename="gamma.txt")
    text_hash = extracting.get().extracted_text_hash
    extracting.update(digest_status=DigestStatus.PARSING, extracted_text_hash="")  # as if still in the worker

    dispatch_stage.dispatch_parse(context_set.pk)
    assert fake_anthropic.batch_requests() == [] and fake_anthropic.message_requests() == []
    assert set(ContextFile.objects.values_list("digest_status", flat=True)) == {"stale", "parsing"}

    extracting.update(digest_status=DigestStatus.STALE, extracted_text_hash=text_hash)  # its extraction ends
    dispatch_stage.dispatch_parse(context_set.pk)
    [submitted] = fake_anthropic.batch_requests()
    assert len(submitted["body"]["requests"]) == 3  # the whole parse, not the two extracted first
