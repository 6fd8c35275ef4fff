"""The SourceRef grammar (seed 000 source_ref): `<filename>::S<n>`, optionally `::<hint>`.

The one definition every check, parser and the browser use. A filename never contains
"::" (uploads replace it) but may contain single colons, even a trailing one
("notes:" → "notes:::S1"). Spans are numbered from S1.
"""

import re
from collections.abc import Iterable

FILENAME = r"(?:[^:\n]|:(?!:))+:?"
SPAN = r"S[1-9][0-9]*"
SOURCE_REF = re.compile(rf"(?P<file>{FILENAME})::(?P<span>{SPAN})(?:::(?P<hint>[^\n]*))?")
# A SourceRef inside prose, up to a space, "(", "[" or "," before it (the hint is not read).
# A parenthesised group of SourceRefs in prose: "… fell by 18 percent (valves.md::S2, memo.md::S1)."
REF_GROUP = re.compile(rf"\(([^()]*::{SPAN}[^()]*)\)")
IN_TEXT = re.compile(rf"[^\s(\[,]+::{SPAN}")


def split_ref(ref: object) -> tuple[str, str, str | None] | None:
    """(filename, span_id, hint or None) of a SourceRef, or None when it is not one."""
    match = SOURCE_REF.fullmatch(ref) if isinstance(ref, str) else None
    return (match["file"], match["span"], match["hint"]) if match else None


def written_refs(refs: Iterable[str]) -> re.Pattern[str]:
    """The pattern of `refs` as prose writes them, each whole: longest first, so "a.md::S12" is never read as
    "a.md::S1" followed by "2". Its group 1 is the SourceRef found. `refs` must not be empty."""
    ordered = sorted(refs, key=len, reverse=True)
    return re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, ordered)) + r")(?![0-9])")


def ref_key(ref: object) -> str | None:
    """`file::S4` of a SourceRef (the hint dropped), or None when it is not one."""
    parts = split_ref(ref)
    return f"{parts[0]}::{parts[1]}" if parts else None
