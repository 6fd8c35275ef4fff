"""Batch ingest: a large parse sends its Task A calls through the provider's batch API (issue 14).

Off by default. When GROUNDWORK_LLM_BATCH_MIN_FILES is set, a context set opted in
(ContextSet.batch_ingest) and a provider with a batch API (anthropic: Message
Batches, billed at half price, answered within 24 hours), a parse that claims at
least that many files needing a model call sends their requests in one batch
instead of a call each. The files stay `parsing`, their JSON says "queued in batch"
(serializers.digest_detail), and the stuck-file recovery leaves them alone.

poll_batches (Celery beat, every GROUNDWORK_LLM_BATCH_POLL_SECONDS) asks the provider
about every submitted batch; once one has ended, each answer is an LLMCall with
batch=True and goes through the same path as a call's answer: the same checks
(model_task, with its one repair call, made at once), the digest cache, the file's
status. A request the batch did not answer (errored, expired) is parsed with a call
of its own. A file too large for one request, or whose digest is cached, is parsed
as always.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from llm_platform import gateway, limiter
from llm_platform.base import LLMRequest, ProviderError
from llm_platform.models import LLMBatch

from . import digest_cache, leases, pipeline
from .claims import claim
from .digests.generate import file_digest_from_answer, file_digest_request, prompt_version
from .models import ContextFile, ContextSet, DigestStatus, FileText
from .notify import notify_context_changed

logger = logging.getLogger(__name__)

# Requests per batch: full-size Task A requests (GROUNDWORK_DIGEST_INPUT_TOKENS, 60,000 tokens,
# about 240 kB) keep a batch under the Message Batches API's 256 MB; a larger parse sends several.
MAX_BATCH_REQUESTS = 500


def waits_for_extraction(context_set_id) -> bool:
    """A set that sends its parses as batches claims nothing while files are still being extracted:
    uploads are extracted one by one in the worker, and a parse dispatched meanwhile would send
    them a few at a time, each too few for a batch. Its parse is requested, so the last
    extraction dispatches it again (pipeline.after_change)."""
    if settings.GROUNDWORK_LLM_BATCH_MIN_FILES <= 0:
        return False
    return ContextFile.objects.filter(
        context_set_id=context_set_id,
        context_set__batch_ingest=True,
        digest_status=DigestStatus.PARSING,
        extracted_text_hash="",
    ).exists()


def submit_if_due(context_set_id, claimed: list[tuple]) -> list[tuple]:
    """Send the claimed files' Task A as one batch when the set wants it; the (file id, text hash)
    pairs left for a call each (all of them when no batch was sent)."""
    minimum = settings.GROUNDWORK_LLM_BATCH_MIN_FILES
    if minimum <= 0 or len(claimed) < minimum:
        return claimed
    context_set = ContextSet.objects.filter(pk=context_set_id, batch_ingest=True).first()
    provider = gateway.get_provider()
    if context_set is None or not hasattr(provider, "submit_batch"):
        return claimed
    requests, batched, left = _batch_requests(context_set, claimed, provider)
    if len(requests) < minimum:
        return claimed
    custom_ids = list(requests)
    for start in range(0, len(custom_ids), MAX_BATCH_REQUESTS):
        chunk = custom_ids[start : start + MAX_BATCH_REQUESTS]
        if not _submit(context_set, provider, {c: requests[c] for c in chunk}, {c: batched[c] for c in chunk}):
            left += [(uuid.UUID(batched[c]["file_id"]), batched[c]["extracted_text_hash"]) for c in chunk]
    return left


def _submit(context_set: ContextSet, provider, requests: dict[str, LLMRequest], batched: dict[str, dict]) -> bool:
    """One batch sent and its files marked queued in it; False when the provider refused it."""
    try:
        batch_id = provider.submit_batch(requests)
    except ProviderError as exc:  # the batch API is unavailable: the files are parsed one call each
        logger.warning("batch of %d Task A requests for %s not accepted: %s", len(requests), context_set.pk, exc)
        return False
    with transaction.atomic():
        batch = LLMBatch.objects.create(
            session_id=context_set.session_id,
            provider=provider.name,
            model=provider.model,
            provider_batch_id=batch_id,
            requests=batched,
        )
        ContextFile.objects.filter(pk__in=[entry["file_id"] for entry in batched.values()]).update(llm_batch=batch)
    logger.info("Task A of %d files of %s queued in batch %s", len(requests), context_set.pk, batch_id)
    return True


def _batch_requests(context_set: ContextSet, claimed: list[tuple], provider) -> tuple[dict, dict, list[tuple]]:
    """({custom_id: request}, {custom_id: what it is for}, the files left for a call each)."""
    files = {f.pk: f for f in ContextFile.objects.filter(pk__in=[pk for pk, _hash in claimed])}
    texts = {t.file_id: t for t in FileText.objects.current().filter(file_id__in=files)}
    requests: dict[str, LLMRequest] = {}
    batched: dict[str, dict] = {}
    left = []
    for file_id, text_hash in claimed:
        file, text = files.get(file_id), texts.get(file_id)
        request = None
        if file is not None and text is not None and text.extracted_text_hash == text_hash:
            if not digest_cache.is_cached(context_set.cache_scope, pipeline.file_cache_key(file)):
                # (a cached digest costs no call: digest_file takes it)
                request = file_digest_request(file.filename, file.format, text.spans, provider)
        if request is None:
            left.append((file_id, text_hash))
            continue
        custom_id = str(file_id)
        requests[custom_id] = request
        batched[custom_id] = {"file_id": str(file_id), "extracted_text_hash": text_hash}
    return requests, batched, left


def poll_batches() -> int:
    """Take the answers of every submitted batch that has ended; the number of batches taken."""
    taken = 0
    for batch_pk in LLMBatch.objects.filter(status=LLMBatch.Status.SUBMITTED).values_list("pk", flat=True):
        taken += take_batch(batch_pk)
    return taken


@limiter.bulk()  # an ingest: its repair calls yield to interactive ones, as digest_file's do
def take_batch(batch_pk) -> bool:
    """One batch: nothing while it runs; once ended, each file's answer through the answer path."""
    batch = LLMBatch.objects.filter(pk=batch_pk, status=LLMBatch.Status.SUBMITTED).first()
    if batch is None:  # taken by another poll
        return False
    provider = gateway.get_provider()
    if _identity(provider) != (batch.provider, batch.model):
        # Another provider now: its answers would be cached under the wrong key. Ended untaken,
        # its files (queued, no worker holds them) go back to the queue at once.
        logger.warning("batch %s abandoned: the provider is now %s:%s", batch.provider_batch_id, *_identity(provider))
        if _end(batch):
            for context_set_id in pipeline.recover_unheld_jobs(_context_set_id(batch), queued=True):
                pipeline.enqueue_parse(context_set_id)
        return False
    try:
        results = provider.batch_results(batch.provider_batch_id)
    except ProviderError as exc:
        logger.warning("batch %s could not be polled: %s", batch.provider_batch_id, exc)
        return False
    if results is None or not _end(batch):  # still running, or another poll took it
        return False
    for custom_id, entry in batch.requests.items():
        answer = results.get(custom_id, ProviderError("the batch returned no result for this request"))
        _take_answer(batch, entry["file_id"], entry["extracted_text_hash"], answer, provider)
    notify_context_changed(_context_set_id(batch))
    return True


def _context_set_id(batch: LLMBatch):
    """The set whose files the batch digests (a batch is recorded, as every model call, by session)."""
    return ContextSet.objects.filter(session_id=batch.session_id).values_list("pk", flat=True).first()


def _identity(provider) -> tuple[str, str]:
    return provider.name, provider.model


def _end(batch: LLMBatch) -> bool:
    """Claimed once: a second poll of the same batch finds it ended and takes nothing."""
    return claim(
        LLMBatch.objects.filter(pk=batch.pk),
        field="status",
        from_=LLMBatch.Status.SUBMITTED,
        to=LLMBatch.Status.ENDED,
        ended_at=timezone.now(),
    )


def _take_answer(batch: LLMBatch, file_id, text_hash: str, answer, provider) -> None:
    """A file's batch answer, under the file's job lease as any Task A writes; a request the batch
    did not answer becomes a call of its own (queued once the lease is let go, so that job can take it)."""
    with leases.holding(leases.FILE_JOB, file_id, extracted_text_hash=text_hash) as held:
        if not held:
            logger.info("dropping batch answer for file %s: another worker holds its job", file_id)
            return
        answered = _digest_from_answer(batch, file_id, text_hash, answer, provider)
    if not answered:
        from .tasks import digest_file

        digest_file.delay(str(file_id), text_hash)


def _digest_from_answer(batch: LLMBatch, file_id, text_hash: str, answer, provider) -> bool:
    """True once the answer is dealt with (taken, or the file changed meanwhile); False when the batch
    did not answer the file's request."""
    file = (
        ContextFile.objects.select_related("context_set")
        .filter(pk=file_id, llm_batch=batch, digest_status=DigestStatus.PARSING, extracted_text_hash=text_hash)
        .first()
    )
    text = FileText.objects.current().filter(file_id=file_id, extracted_text_hash=text_hash).first()
    if file is None or text is None:
        logger.info("dropping batch answer for file %s: it changed while queued", file_id)
        return True
    ContextFile.objects.filter(pk=file.pk).update(llm_batch=None)
    request = file_digest_request(file.filename, file.format, text.spans, provider)
    subject = f"file:{file.id}"
    try:
        result = gateway.record_batch_answer(
            request,
            answer,
            provider=provider,
            prompt_version=prompt_version(),
            subject=subject,
            session_id=file.context_set.session_id,
        )
    except gateway.GatewayError:  # not answered in the batch: a call of its own, as any parse
        return False
    stored, error = pipeline.store_file_digest(
        file,
        lambda: file_digest_from_answer(
            result,
            filename=file.filename,
            format=file.format,
            spans=text.spans,
            subject=subject,
            session_id=file.context_set.session_id,
            provider=provider,
        ),
    )
    pipeline.finish_file_digest(file, text_hash, stored, error)
    return True
