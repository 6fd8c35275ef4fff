"""Idempotency-Key semantics for every mutation under /api (SPEC §2.6).

Same key + same request within 24 h → the first response, byte for byte, with
`Idempotent-Replayed: true`. Same key + different request → 422. Same key while
the first is still running → 409.
"""

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from .models import IdempotencyRecord

REPLAYED_HEADER = "Idempotent-Replayed"
# Response headers worth replaying (the body carries everything else).
KEPT_HEADERS = ("Content-Type", "ETag", "Location")


@dataclass(frozen=True)
class Claim:
    record: IdempotencyRecord | None  # the new in-flight record, when this request runs
    replay: IdempotencyRecord | None  # the finished record to answer with
    conflict: str | None  # why the request is refused ("mismatch" or "in_flight")


def request_fingerprint(
    method: str, path: str, if_match: str, fields: dict, files: list[tuple[str, str, bytes]]
) -> str:
    """Over the parsed request, so a retried multipart upload with a new boundary still matches.

    `files`: (field, filename, SHA-256 digest of the content) per uploaded file.
    """
    digest = hashlib.sha256()
    head = {"method": method, "path": path, "if_match": if_match, "fields": fields}
    digest.update(json.dumps(head, sort_keys=True, default=str).encode())
    for field_name, filename, content_digest in files:
        digest.update(f"\x1e{field_name}\x1f{filename}\x1f".encode())
        digest.update(content_digest)
    return digest.hexdigest()


# Inserts tried when the key's holder frees it between our insert and our read.
CLAIM_ATTEMPTS = 5


def claim_key(user, key: str, fingerprint: str) -> Claim:
    expired_before = timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_TTL_SECONDS)
    IdempotencyRecord.objects.filter(user=user, key=key, created_at__lt=expired_before).delete()
    for _ in range(CLAIM_ATTEMPTS):
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(user=user, key=key, request_fingerprint=fingerprint)
            return Claim(record=record, replay=None, conflict=None)
        except IntegrityError:
            existing = IdempotencyRecord.objects.filter(user=user, key=key).first()
        if existing is not None:
            break
        # The request holding the key raised and freed it (abandon) after our insert failed: try again.
    else:
        return Claim(record=None, replay=None, conflict="in_flight")
    if existing.request_fingerprint != fingerprint:
        return Claim(record=None, replay=None, conflict="mismatch")
    if existing.response_status is None:
        return Claim(record=None, replay=None, conflict="in_flight")
    return Claim(record=None, replay=existing, conflict=None)


def complete(record: IdempotencyRecord, status: int, body: bytes, headers: dict) -> None:
    record.response_status = status
    record.response_body = body
    record.response_headers = {name: headers[name] for name in KEPT_HEADERS if name in headers}
    record.save(update_fields=["response_status", "response_body", "response_headers"])


def abandon(record: IdempotencyRecord) -> None:
    """The request crashed: free the key so a retry can run."""
    record.delete()
