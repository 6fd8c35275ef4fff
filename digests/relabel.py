"""SourceRef relabelling for cache reuse under another filename, and the digest hash.

The content-addressed cache may hand a digest written for "draft.pdf" to a file
called "final.pdf" with the same text. Its citations must then name the new
file: `draft.pdf::S3::p. 2` → `final.pdf::S3::p. 2`. Nothing else changes, so
the result is as valid as the original was.
"""

import copy
import hashlib
import json

from llm_platform.sourcerefs import split_ref


def digest_hash(digest: dict) -> str:
    """sha256 of the canonical JSON: key order and spacing do not change it."""
    canonical = json.dumps(digest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def relabel_ref(ref: str, old_filename: str, new_filename: str) -> str:
    parts = split_ref(ref)
    if parts is None or parts[0] != old_filename:
        return ref
    _, span_id, hint = parts
    return f"{new_filename}::{span_id}" + (f"::{hint}" if hint is not None else "")


def relabel_digest(digest: dict, old_filename: str, new_filename: str) -> dict:
    """A deep copy citing `new_filename` wherever `old_filename` was cited or named."""
    relabelled = copy.deepcopy(digest)
    _relabel_in_place(relabelled, old_filename, new_filename)
    return relabelled


def _relabel_in_place(digest: dict, old: str, new: str) -> None:
    for section in ("facts", "uncertainties"):
        for item in digest.get(section) or []:
            if isinstance(item, dict) and isinstance(item.get("sources"), list):
                item["sources"] = [
                    relabel_ref(ref, old, new) if isinstance(ref, str) else ref for ref in item["sources"]
                ]
    document = digest.get("document")
    if isinstance(document, dict) and document.get("filename") == old:
        document["filename"] = new
    # Aggregates name files in batch.files and documents[] too.
    batch = digest.get("batch")
    for entry in (batch.get("files") or []) if isinstance(batch, dict) else []:
        if isinstance(entry, dict) and entry.get("filename") == old:
            entry["filename"] = new
    for nested in digest.get("documents") or []:
        if isinstance(nested, dict):
            if nested.get("filename") == old:
                nested["filename"] = new
            _relabel_in_place(nested, old, new)
