"""SourceRef relabelling for cache reuse under another filename, and the digest hash."""

import copy
import hashlib
import json


def digest_hash(digest: dict) -> str:
    canonical = json.dumps(digest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def relabel_ref(ref: str, old_filename: str, new_filename: str) -> str:
    prefix = f"{old_filename}::"
    return new_filename + "::" + ref[len(prefix) :] if ref.startswith(prefix) else ref


def relabel_digest(digest: dict, old_filename: str, new_filename: str) -> dict:
    relabelled = copy.deepcopy(digest)
    for item in relabelled.get("facts", []) + relabelled.get("uncertainties", []):
        item["sources"] = [relabel_ref(ref, old_filename, new_filename) for ref in item.get("sources", [])]
    document = relabelled.get("document")
    if isinstance(document, dict) and document.get("filename") == old_filename:
        document["filename"] = new_filename
    return relabelled
