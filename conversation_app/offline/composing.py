"""The answer a turn gives: the candidates used, in their own words, each with the sentence it refers
back to and the one it announces, led by what the session lacks when it lacks part of the question;
cited by their SourceRefs, or else by their chunk's key.
"""

from __future__ import annotations

from llm_platform.sourcerefs import REF_GROUP
from llm_platform.terms import cut_text, quote_list

from ..turn_text import sentence_key
from .answering import refers_back
from .candidates import Candidate, source_refs

# Limits of chat_turn.schema.json.
MAX_SENTENCE_CHARS = 500
MAX_ANSWER_CHARS = 6000
MAX_CITATIONS = 20
MAX_CITATION_CHARS = 300
_CLOSED = tuple(".!?…)]\"”'’")


def compose_answer(used: list[Candidate], uncovered: list[str]) -> dict:
    """The candidates `used` in their own words; led by what the session lacks when `uncovered` is given."""
    body = " ".join(_closed(cut_text(c.text, MAX_SENTENCE_CHARS)) for c in _said(used))
    if uncovered:
        quoted = quote_list(uncovered)
        if not used:
            return {
                "answer": f"This session's files, digests and reports say nothing about {quoted}.",
                "citations": [],
                "needs": [],
            }
        from_supply, from_session = any(c.supplied for c in used), any(not c.supplied for c in used)
        if from_supply and from_session:
            closest = "here is what was supplied for it and the closest they hold:"
        elif from_supply:
            closest = "here is what was supplied for it:"
        else:
            closest = "the closest they hold:"
        body = f"This session's files and reports say nothing about {quoted}; {closest} {body}"
    return {"answer": cut_text(body, MAX_ANSWER_CHARS), "citations": _citations(used), "needs": []}


def _closed(sentence: str) -> str:
    """The sentence with its SourceRefs inside its end, as a passage's come ("… instead of 24
    (release_notes.html::S4)."): a digest's fact has them after its full stop, which left them a sentence of
    their own, cited by nothing."""
    last = next((ref for ref in REF_GROUP.finditer(sentence) if ref.end() == len(sentence)), None)
    if last is not None:
        body = sentence[: last.start()].rstrip()
        if body.endswith((".", "!", "?")) and not body.endswith(".."):
            return f"{body[:-1]} {last.group()}{body[-1]}"
    return sentence if sentence.endswith(_CLOSED) else f"{sentence}."


def _said(used: list[Candidate]) -> list[Candidate]:
    """The candidates `used`, each preceded by the sentence it refers back to ("… a similar list …" before "…
    put this list in a requirements.txt file") and followed by the one it announces (Candidate.announced)."""
    said: list[Candidate] = []
    keys = {sentence_key(c.text) for c in used}

    def say(text: str, candidate: Candidate) -> None:
        if sentence_key(text) not in keys:
            keys.add(sentence_key(text))
            said.append(Candidate(text, frozenset(), candidate.order, False, False, candidate.keys))

    for candidate in used:
        if candidate.prior and refers_back(candidate):
            say(candidate.prior, candidate)
        said.append(candidate)
        if candidate.announced:
            say(candidate.announced, candidate)
    return said


def _citations(used: list[Candidate]) -> list[str]:
    cited: list[str] = []
    for candidate in _said(used):
        cited += source_refs(candidate.text) or candidate.keys[:1]
    cited = [ref for ref in dict.fromkeys(cited) if len(ref) <= MAX_CITATION_CHARS]
    return cited[:MAX_CITATIONS]
