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

from django.utils import timezone

from digests.generate import file_digest_from_answer, file_digest_request, prompt_version
from llm_platform import gateway, limiter
from llm_platform.base import ProviderError
from llm_platform.models import LLMBatch
from workspaces import leases
from workspaces.claims import claim

from .models import FILE_JOB, ContextFile, DigestStatus, FileText
from .notify import notify_context_changed
from .pipeline import jobs
from .pipeline.digest import finish_file_digest, store_file_digest
from .pipeline.recovery import recover_unheld_jobs
from .selectors import context_set_id_of

logger = logging.getLogger(__name__)


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
            for context_set_id in recover_unheld_jobs(context_set_id_of(batch.session_id), queued=True):
                jobs.enqueue_parse(context_set_id)
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
    notify_context_changed(context_set_id_of(batch.session_id))
    return True


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
    with leases.holding(FILE_JOB, file_id, extracted_text_hash=text_hash) as held:
        if not held:
            logger.info("dropping batch answer for file %s: another worker holds its job", file_id)
            return
        answered = _digest_from_answer(batch, file_id, text_hash, answer, provider)
    if not answered:
        jobs.enqueue_digest(file_id, text_hash)


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
    stored, error = store_file_digest(
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
    finish_file_digest(file, text_hash, stored, error)
    return True
