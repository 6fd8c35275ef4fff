"""Offline extractive digests: what the `offline` provider answers to Task A and Task B.

Deterministic sentence selection, no model: sentences that carry figures,
definitions, obligations, examples, reasoning or pointers become facts of the
matching kind, hedged sentences become uncertainties, and each cites the span it
was taken from. Claims are the source's own words (cut at a word boundary).
"""

import re

from .envelopes import parse_aggregate_envelope, parse_per_file_envelope
from .prompts import SCHEMA_VERSION

GENERATOR = "offline-extractive"
MAX_FACTS = 40
MAX_UNCERTAINTIES = 15
MAX_CLAIM_CHARS = 400

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])|\n+")
_HEADING_MARK = re.compile(r"^\s*#{1,6}\s+|^\s*[=-]{3,}\s*$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_FIGURE = re.compile(r"\d")
_DATE = re.compile(r"\b(1[89]\d\d|20\d\d)\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d", re.I)
_UNIT = re.compile(
    r"\d\s?(%|percent|per cent|€|\$|£|eur|usd|km|kg|m3|m³|hours?|days?|years?|million|billion|thousand)", re.I
)

# (kind, cue pattern), checked in this order: the first match decides the kind.
_KIND_CUES: list[tuple[str, re.Pattern]] = [
    (
        "conflict",
        re.compile(r"\b(however|contrary to|contradict\w*|in contrast|disagree\w*|whereas|but other)\b", re.I),
    ),
    (
        "definition",
        re.compile(r"\b(is defined as|are defined as|means|refers to|is known as|stands for|denotes)\b", re.I),
    ),
    (
        "constraint",
        re.compile(
            r"\b(must|shall|required|requires|mandatory|at most|at least|no more than|deadline|limit(ed)?|cap(ped)?|prohibit\w*|may not)\b",
            re.I,
        ),
    ),
    ("case", re.compile(r"\b(for example|for instance|e\.g\.|case study|in one case|such as)\b", re.I)),
    (
        "analysis",
        re.compile(
            r"\b(because|therefore|thus|suggests?|indicates?|implies|due to|as a result|attributed to|led to|explains?|conclude\w*)\b",
            re.I,
        ),
    ),
    (
        "lead",
        re.compile(
            r"\b(see |further (work|research|study)|contact|next step|to be (published|confirmed)|will publish|follow[- ]up|recommend\w*|should be (investigated|checked))\b",
            re.I,
        ),
    ),
]
_HEDGE = re.compile(
    r"\b((?-i:may)|might|could|possibly|perhaps|unclear|uncertain\w*|unknown|not (yet )?known|approximately|about(?= \d)|roughly|"
    r"estimated?|preliminary|likely|unlikely|appears?|seems?|not yet|tentative|unconfirmed|reportedly|to be confirmed)\b|\?",
    re.I,
)


def _sentences(text: str) -> list[str]:
    pieces = [_LIST_MARK.sub("", p).strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    return [p for p in pieces if not _HEADING_MARK.match(p) and len(re.findall(r"\w+", p)) >= 3]


def _cut(text: str, limit: int = MAX_CLAIM_CHARS) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + "…"


def _kind(sentence: str) -> str | None:
    for kind, cue in _KIND_CUES:
        if cue.search(sentence):
            return kind
    if _FIGURE.search(sentence) or _DATE.search(sentence):
        return "fact"
    return None


def _reliability(sentence: str, kind: str, hedged: bool) -> tuple[str, str]:
    if hedged:
        return "low", "offline extractive: hedged wording"
    if kind == "fact" and (_UNIT.search(sentence) or _DATE.search(sentence)):
        return "high", "offline extractive: a measured or dated figure stated in the source"
    if kind in ("definition", "constraint"):
        return "high", f"offline extractive: {kind} stated in the source"
    return "medium", "offline extractive: plain statement in the source"


def _normal(claim: str) -> str:
    return re.sub(r"[^\w%]+", " ", claim.lower()).strip()


def per_file_digest(prompt: str) -> dict:
    filename, file_format, spans = parse_per_file_envelope(prompt)
    facts: list[dict] = []
    uncertainties: list[dict] = []
    seen: dict[str, dict] = {}
    first_sentence: tuple[str, str] | None = None
    summary_parts: list[str] = []
    for span in spans:
        ref = f"{filename}::{span['span_id']}"
        for sentence in _sentences(span["text"]):
            first_sentence = first_sentence or (sentence, ref)
            if len(summary_parts) < 3 and len(sentence) > 40:
                summary_parts.append(_cut(sentence, 240))
            hedged = bool(_HEDGE.search(sentence))
            if hedged and len(uncertainties) < MAX_UNCERTAINTIES:
                uncertainties.append({"text": _cut(sentence), "sources": [ref]})
            kind = _kind(sentence)
            if kind is None:
                continue
            claim = _cut(sentence)
            key = _normal(claim)
            if key in seen:
                if ref not in seen[key]["sources"]:
                    seen[key]["sources"].append(ref)
                continue
            if len(facts) >= MAX_FACTS:
                continue
            reliability, note = _reliability(sentence, kind, hedged)
            fact = {
                "id": f"F{len(facts) + 1}",
                "kind": kind,
                "claim": claim,
                "sources": [ref],
                "reliability": reliability,
                "reliability_note": note,
            }
            seen[key] = fact
            facts.append(fact)
    if not facts and first_sentence:
        sentence, ref = first_sentence
        facts.append(
            {
                "id": "F1",
                "kind": "fact",
                "claim": _cut(sentence),
                "sources": [ref],
                "reliability": "medium",
                "reliability_note": "offline extractive: the document's opening statement",
            }
        )
    if not facts and spans:  # no sentence of three words: cite the first span as it stands
        ref = f"{filename}::{spans[0]['span_id']}"
        facts.append(
            {
                "id": "F1",
                "kind": "fact",
                "claim": _cut(spans[0]["text"]) or filename,
                "sources": [ref],
                "reliability": "low",
                "reliability_note": "offline extractive: fragmentary text",
            }
        )
    summary = " ".join(summary_parts) or (facts[0]["claim"] if facts else f"{filename} holds no readable sentences.")
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "single",
        "generator": GENERATOR,
        "document": {"filename": filename, "format": file_format},
        "summary": summary,
        "facts": facts,
        "uncertainties": uncertainties,
    }


def _subject_and_numbers(claim: str) -> tuple[str, tuple[str, ...]]:
    numbers = tuple(re.findall(r"\d+(?:[.,]\d+)?", claim))
    words = [w for w in re.findall(r"[a-z]{4,}", claim.lower())]
    return " ".join(words[:4]), numbers


def aggregate_digest(prompt: str) -> dict:
    manifest, digests = parse_aggregate_envelope(prompt)
    merged: dict[str, dict] = {}
    by_subject: dict[str, list[dict]] = {}
    uncertainties: dict[str, dict] = {}
    documents: list[dict] = []
    for digest in digests:
        nested = digest.get("documents") if digest.get("mode") == "batch" else None
        if nested:
            documents.extend(nested)
        else:
            documents.append(
                {
                    "filename": digest.get("document", {}).get("filename", ""),
                    "summary": _cut(digest.get("summary", ""), 300),
                }
            )
        for fact in digest.get("facts", []):
            key = _normal(fact["claim"])
            if key in merged:
                merged[key]["sources"] += [s for s in fact["sources"] if s not in merged[key]["sources"]]
                continue
            copy = {k: v for k, v in fact.items() if k != "id"}
            copy["sources"] = list(fact["sources"])
            merged[key] = copy
            if copy.get("kind") != "conflict":
                by_subject.setdefault(_subject_and_numbers(copy["claim"])[0], []).append(copy)
        for item in digest.get("uncertainties", []):
            uncertainties.setdefault(
                _normal(item["text"]), {"text": item["text"], "sources": list(item.get("sources", []))}
            )
    facts = list(merged.values())
    facts += _conflicts(by_subject, merged)
    facts = facts[: MAX_FACTS * 2]
    for number, fact in enumerate(facts, start=1):
        fact["id"] = f"F{number}"
    names = [entry["filename"] for entry in manifest]
    summary_bits = [f"{d['filename']}: {_cut(d['summary'], 200)}" for d in documents if d.get("summary")]
    summary = (
        f"{len(names)} file(s). " + " ".join(summary_bits) if summary_bits else f"{len(names)} file(s) with no summary."
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "batch",
        "generator": GENERATOR,
        "document": {"filename": "__BATCH__", "format": "mixed"},
        "batch": {"files": manifest},
        "summary": _cut(summary, 1500),
        "facts": facts,
        "uncertainties": list(uncertainties.values())[: MAX_UNCERTAINTIES * 2],
        "documents": documents,
    }


def _conflicts(by_subject: dict[str, list[dict]], merged: dict[str, dict]) -> list[dict]:
    """Same opening words, different figures, different files: flag it as a conflict."""
    conflicts = []
    for subject, facts in sorted(by_subject.items()):
        if not subject or len(facts) < 2:
            continue
        for a, b in zip(facts, facts[1:], strict=False):
            files_a = {s.split("::")[0] for s in a["sources"]}
            files_b = {s.split("::")[0] for s in b["sources"]}
            numbers_a, numbers_b = _subject_and_numbers(a["claim"])[1], _subject_and_numbers(b["claim"])[1]
            if files_a != files_b and numbers_a and numbers_b and numbers_a != numbers_b:
                conflicts.append(
                    {
                        "kind": "conflict",
                        "claim": _cut(f"Sources disagree: “{a['claim']}” vs “{b['claim']}”", 600),
                        "sources": a["sources"] + [s for s in b["sources"] if s not in a["sources"]],
                        "reliability": "low",
                        "reliability_note": "offline extractive: same subject, different figures in different files",
                    }
                )
                a["reliability"] = b["reliability"] = "low"
    return conflicts
