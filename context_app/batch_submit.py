"""Batch ingest, the sending side: a large parse's Task A requests go to the provider as one batch.

When the set wants it (see batch_ingest.py for the whole feature), dispatch_parse hands
its claimed files here; what is sent is taken back by batch_ingest.poll_batches.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction

from digests.generate import file_digest_request
from llm_platform import gateway
from llm_platform.base import LLMRequest, ProviderError
from llm_platform.models import LLMBatch

from . import digest_cache
from .digest_cache import file_cache_key
from .models import ContextFile, ContextSet, DigestStatus, FileText

logger = logging.getLogger(__name__)

# Requests per batch: full-size Task A requests (GROUNDWORK_DIGEST_INPUT_TOKENS, 60,000 tokens,
# about 240 kB) keep a batch under the Message Batches API's 256 MB; a larger parse sends several.
MAX_BATCH_REQUESTS = 500


def waits_for_extraction(context_set_id) -> bool:
    """A set that sends its parses as batches claims nothing while files are still being extracted:
    uploads are extracted one by one in the worker, and a parse dispatched meanwhile would send
    them a few at a time, each too few for a batch. Its parse is requested, so the last
    extraction dispatches it again (pipeline.dispatch.after_extraction)."""
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
            if not digest_cache.is_cached(context_set.cache_scope, file_cache_key(file)):
                # (a cached digest costs no call: digest_file takes it)
                request = file_digest_request(file.filename, file.format, text.spans, provider)
        if request is None:
            left.append((file_id, text_hash))
            continue
        custom_id = str(file_id)
        requests[custom_id] = request
        batched[custom_id] = {"file_id": str(file_id), "extracted_text_hash": text_hash}
    return requests, batched, left
