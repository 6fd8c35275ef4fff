"""The content-addressed digest cache (SPEC §2.1).

A per-file digest is determined by (extracted_text_hash, chunking_version,
prompt_version, provider+model); an aggregate node by the hashes of its input
digests. Entries are shared by every context set of one scope (a team).
"""

import json

from django.db import IntegrityError, transaction

from digests.generate import PER_FILE_DIGEST, GeneratedDigest, prompt_version
from digests.relabel import digest_hash, relabel_digest
from extraction import CHUNKING_VERSION, sha256_hex
from llm_platform.gateway import get_provider
from llm_platform.models import LLMCall

from .models import ContextFile, DigestCacheEntry, DigestCacheHit, StoredDigest


def provider_identity() -> str:
    provider = get_provider()
    return f"{provider.name}:{provider.model}"


def digest_cache_key(extracted_text_hash: str, chunking_version: str, prompt_version: str) -> str:
    parts = ["file", extracted_text_hash, chunking_version, prompt_version, provider_identity()]
    return sha256_hex("\x1f".join(parts))


def aggregate_cache_key(manifest: list[dict], input_hashes: list[str], prompt_version: str) -> str:
    payload = json.dumps(
        ["aggregate", manifest, input_hashes, prompt_version, provider_identity()],
        sort_keys=True,
        separators=(",", ":"),
    )
    return sha256_hex(payload)


def cached_file_digest(file: ContextFile, cache_key: str) -> StoredDigest | None:
    """The cached digest for this key, relabelled to the file's name when it was built under another;
    a hit is recorded for the file's session with the calls it did not make (the cost ledger)."""
    entry = (
        DigestCacheEntry.objects.select_related("digest")
        .filter(scope=file.context_set.cache_scope, cache_key=cache_key)
        .first()
    )
    if entry is None:
        return None
    DigestCacheEntry.objects.filter(pk=entry.pk).update(hits=entry.hits + 1)
    record_hit(file, entry.digest)
    if entry.filename == file.filename:
        return entry.digest
    content = relabel_digest(entry.digest.content, entry.filename, file.filename)
    return StoredDigest.objects.create(
        kind=StoredDigest.Kind.FILE,
        content=content,
        digest_hash=digest_hash(content),
        prompt_version=entry.digest.prompt_version,
        provider=entry.digest.provider,
        model=entry.digest.model,
        validation_report=entry.digest.validation_report,
        usage=entry.digest.usage,
    )


def record_hit(file: ContextFile, digest: StoredDigest) -> DigestCacheHit:
    usage = digest.usage
    return DigestCacheHit.objects.create(
        context_set_id=file.context_set_id,
        digest=digest,
        task=PER_FILE_DIGEST.recorded_as,
        provider=digest.provider,
        model=digest.model,
        subject=f"file:{file.pk}",
        calls=usage.get("calls", 0),
        **{kind: usage.get(kind, 0) for kind in LLMCall.TOKEN_KINDS},
    )


def is_cached(scope: str, cache_key: str) -> bool:
    return DigestCacheEntry.objects.filter(scope=scope, cache_key=cache_key).exists()


def cached_aggregate(scope: str, cache_key: str) -> StoredDigest | None:
    entry = DigestCacheEntry.objects.select_related("digest").filter(scope=scope, cache_key=cache_key).first()
    return entry.digest if entry else None


def store_digest(
    *,
    scope: str,
    cache_key: str,
    kind: str,
    generated: GeneratedDigest,
    filename: str = "",
) -> StoredDigest:
    stored = StoredDigest.objects.create(
        kind=kind,
        content=generated.content,
        digest_hash=digest_hash(generated.content),
        prompt_version=generated.prompt_version,
        provider=generated.provider,
        model=generated.model,
        validation_report=generated.dropped,
        usage=generated.usage,
    )
    try:
        # Two workers may race on the same content: the first entry wins, both digests stay valid.
        with transaction.atomic():
            DigestCacheEntry.objects.create(
                scope=scope, cache_key=cache_key, kind=kind, digest=stored, filename=filename
            )
    except IntegrityError:
        pass
    return stored


def file_cache_key(file: ContextFile) -> str:
    return digest_cache_key(file.extracted_text_hash, CHUNKING_VERSION, prompt_version())
