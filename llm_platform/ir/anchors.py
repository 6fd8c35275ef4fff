"""Anchors: short, stable, parseable citations into a source (seed 004, "Anchor Format").

    <source_id>[#<location>[&<location>...]]

    source_id = "src:" + sha256(canonical content)[0:8]   e.g. src:9f3a7b2c
    location  = p=<page> | sec=<heading path> | s=<span id> | msg=<index> | r=<x,y,w,h>

Combinations join locations with "&" in the fixed order p, sec, s, msg, r, so
every anchor has exactly one spelling and `format_anchor(parse_anchor(a)) == a`.
A heading path is percent-encoded (spaces become %20) so an anchor never
contains whitespace, "#" or "&" and can be quoted inline in a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

SOURCE_ID_RE = re.compile(r"^src:[0-9a-f]{8}$")
SPAN_ID_RE = re.compile(r"^S[1-9][0-9]*$")
_POSITIVE_INT_RE = re.compile(r"^[1-9][0-9]*$")
_NON_NEGATIVE_INT_RE = re.compile(r"^(0|[1-9][0-9]*)$")
# Characters left as-is in a heading path; everything else is percent-encoded.
_SECTION_SAFE = "._-~>/:()"
_SECTION_ENCODED_RE = re.compile(r"^(?:[A-Za-z0-9._\-~>/:()]|%[0-9A-F]{2})+$")
# Canonical order of location keys in a combined anchor.
LOCATION_KEYS = ("p", "sec", "s", "msg", "r")


@dataclass(frozen=True)
class Anchor:
    """A source id plus optional page / section / span / message / region locations."""

    source_id: str
    page: int | None = None
    section: str | None = None  # "H2.3" or a heading path like "Intro > Methods"
    span: str | None = None  # "S4"
    message: int | None = None
    region: tuple[int, int, int, int] | None = None  # x, y, w, h

    def __post_init__(self) -> None:
        _check_source_id(self.source_id)
        if self.page is not None and (isinstance(self.page, bool) or not isinstance(self.page, int) or self.page < 1):
            raise ValueError(f"anchor page must be a positive integer, got {self.page!r}")
        if self.section is not None and not self.section.strip():
            raise ValueError("anchor section must not be empty")
        if self.span is not None and not SPAN_ID_RE.match(self.span):
            raise ValueError(f"anchor span must look like S<n> (n >= 1), got {self.span!r}")
        if self.message is not None and (
            isinstance(self.message, bool) or not isinstance(self.message, int) or self.message < 0
        ):
            raise ValueError(f"anchor message index must be a non-negative integer, got {self.message!r}")
        if self.region is not None:
            if len(self.region) != 4 or any(
                isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in self.region
            ):
                raise ValueError(f"anchor region must be four non-negative integers x,y,w,h, got {self.region!r}")

    @property
    def is_whole_source(self) -> bool:
        return self == Anchor(self.source_id)

    def __str__(self) -> str:
        return format_anchor(self)


def _check_source_id(source_id: object) -> None:
    if not isinstance(source_id, str) or not SOURCE_ID_RE.match(source_id):
        raise ValueError(f"source id must be 'src:' followed by 8 lowercase hex digits, got {source_id!r}")


def format_anchor(anchor: Anchor) -> str:
    """The one canonical spelling of an anchor."""
    locations: list[str] = []
    if anchor.page is not None:
        locations.append(f"p={anchor.page}")
    if anchor.section is not None:
        locations.append(f"sec={quote(anchor.section, safe=_SECTION_SAFE)}")
    if anchor.span is not None:
        locations.append(f"s={anchor.span}")
    if anchor.message is not None:
        locations.append(f"msg={anchor.message}")
    if anchor.region is not None:
        locations.append("r=" + ",".join(str(v) for v in anchor.region))
    return anchor.source_id + ("#" + "&".join(locations) if locations else "")


def parse_anchor(text: str) -> Anchor:
    """Parse a canonical anchor string; anything else raises ValueError saying why."""
    if not isinstance(text, str):
        raise ValueError(f"anchor must be a string, got {type(text).__name__}")
    source_id, hash_sign, fragment = text.partition("#")
    _check_source_id(source_id)
    if not hash_sign:
        return Anchor(source_id)
    if not fragment:
        raise ValueError(f"anchor {text!r} has an empty location after '#'")
    values: dict[str, str] = {}
    last_position = -1
    for part in fragment.split("&"):
        key, equals, value = part.partition("=")
        if not equals or not value:
            raise ValueError(f"anchor {text!r}: location {part!r} must be key=value")
        if key not in LOCATION_KEYS:
            raise ValueError(f"anchor {text!r}: unknown location {key!r} (expected one of {', '.join(LOCATION_KEYS)})")
        if key in values:
            raise ValueError(f"anchor {text!r}: location {key!r} given twice")
        position = LOCATION_KEYS.index(key)
        if position < last_position:
            raise ValueError(f"anchor {text!r}: locations must appear in the order {'&'.join(LOCATION_KEYS)}")
        last_position = position
        values[key] = value

    page = message = None
    section = span = None
    region = None
    if "p" in values:
        if not _POSITIVE_INT_RE.match(values["p"]):
            raise ValueError(f"anchor {text!r}: page must be a positive integer, got {values['p']!r}")
        page = int(values["p"])
    if "sec" in values:
        if not _SECTION_ENCODED_RE.match(values["sec"]):
            raise ValueError(
                f"anchor {text!r}: section {values['sec']!r} must be percent-encoded (no spaces, '#' or '&')"
            )
        section = unquote(values["sec"], errors="strict")
        if quote(section, safe=_SECTION_SAFE) != values["sec"]:
            raise ValueError(f"anchor {text!r}: section {values['sec']!r} is not canonically encoded")
    if "s" in values:
        span = values["s"]
    if "msg" in values:
        if not _NON_NEGATIVE_INT_RE.match(values["msg"]):
            raise ValueError(f"anchor {text!r}: message index must be a non-negative integer, got {values['msg']!r}")
        message = int(values["msg"])
    if "r" in values:
        numbers = values["r"].split(",")
        if len(numbers) != 4 or not all(_NON_NEGATIVE_INT_RE.match(n) for n in numbers):
            raise ValueError(f"anchor {text!r}: region must be x,y,w,h non-negative integers, got {values['r']!r}")
        region = (int(numbers[0]), int(numbers[1]), int(numbers[2]), int(numbers[3]))
    try:
        return Anchor(source_id, page=page, section=section, span=span, message=message, region=region)
    except ValueError as exc:
        raise ValueError(f"anchor {text!r}: {exc}") from None


def is_anchor(text: str) -> bool:
    try:
        parse_anchor(text)
    except ValueError:
        return False
    return True


# --- SourceRef <-> anchor -----------------------------------------------------
# Digests cite spans as SourceRefs "<filename>::S4" (SPEC §2.2); the IR cites the
# same span as "src:<id>#s=S4". Filenames never contain "::" (extraction replaces it).


def split_sourceref(sourceref: str) -> tuple[str, str]:
    """("report.pdf", "S4") from "report.pdf::S4"."""
    filename, sep, span = sourceref.rpartition("::")
    if not sep or not filename:
        raise ValueError(f"SourceRef {sourceref!r} must look like '<filename>::S<n>'")
    if "::" in filename:
        raise ValueError(f"SourceRef {sourceref!r}: filename must not contain '::'")
    if not SPAN_ID_RE.match(span):
        raise ValueError(f"SourceRef {sourceref!r}: span must look like S<n> (n >= 1), got {span!r}")
    return filename, span


def sourceref_to_anchor(sourceref: str, source_id: str) -> str:
    """Map the SourceRef "report.pdf::S4" and "src:1a2b3c4d" to "src:1a2b3c4d#s=S4"."""
    _filename, span = split_sourceref(sourceref)
    return format_anchor(Anchor(source_id, span=span))


def anchor_to_sourceref(anchor: str | Anchor, filenames: str | Mapping[str, str]) -> str:
    """Map "src:1a2b3c4d#s=S4" back to the SourceRef "report.pdf::S4".

    `filenames` is the filename itself or a mapping source_id -> filename (the
    lookup a caller holding many sources has anyway). The anchor must name a span.
    """
    parsed = parse_anchor(anchor) if isinstance(anchor, str) else anchor
    if parsed.span is None:
        raise ValueError(f"anchor {format_anchor(parsed)!r} names no span (#s=S<n>); a SourceRef needs one")
    if isinstance(filenames, str):
        filename = filenames
    else:
        try:
            filename = filenames[parsed.source_id]
        except KeyError:
            raise ValueError(f"no filename known for source {parsed.source_id!r}") from None
    if not filename or "::" in filename:
        raise ValueError(f"filename {filename!r} cannot appear in a SourceRef")
    return f"{filename}::{parsed.span}"
