"""What a turn that cannot answer asks a person for.

A note on the terms the session does not cover, anchored to the most relevant
artifact the prompt lacks in full; and the document the message names, unless
the prompt already carries it whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.ir.budget import SUMMARY_PREFIX
from llm_platform.ir.render import TRUNCATED_MARKER
from llm_platform.task_envelope import evidence_chunks
from llm_platform.terms import content_terms, cut_text, quote_list

from .candidates import PASSAGE_KEY, TITLE_KEY, Candidate, chunk_key, index_titles
from .message import DOCUMENT_NOUNS, DOCUMENT_WORD, FILENAME

# Limits of chat_turn.schema.json.
MAX_NEEDS = 5
MAX_NEED_CHARS = 500
MAX_ANCHOR_CHARS = 300
_FILE_KEYS = ("digest:", PASSAGE_KEY)  # artifacts made of the session's files (see _relevant_key)


def context_needs(
    message: str,
    uncovered: list[str],
    mentioned: list[str],
    candidates: list[Candidate],
    wanted: set[str],
    prompt: str,
) -> list:
    """A note on what the session lacks, anchored to the most relevant artifact the prompt lacks in full; and
    the document the message names, unless the prompt already carries it whole."""
    note = {"kind": "note", "description": cut_text(_lacking(uncovered, mentioned), MAX_NEED_CHARS)}
    artifacts = _artifacts(prompt)
    anchor = _relevant_key(candidates, wanted, artifacts)
    if anchor:
        note["anchor"] = anchor
    needs = [note]
    filenames = list(dict.fromkeys(FILENAME.findall(message)))
    for name in filenames:
        holder = next((key for key in artifacts if name.lower() in key.lower()), "")
        if holder and artifacts[holder].whole:
            continue  # the session holds it and the prompt carries all of it: it was read, and says nothing
        need = {
            "kind": "file",
            "description": cut_text(f"The document the question refers to: “{name}”.", MAX_NEED_CHARS),
        }
        if holder and len(holder) <= MAX_ANCHOR_CHARS:
            need["anchor"] = holder
        needs.append(need)
    words = {word.lower().replace("attached", "attachment") for word in DOCUMENT_WORD.findall(message)}
    noun = next((noun for noun in DOCUMENT_NOUNS if noun in words), "")
    if noun and not filenames:
        needs.append({"kind": "file", "description": f"The {noun} the question refers to: attach it."})
    return needs[:MAX_NEEDS]


def _lacking(uncovered: list[str], mentioned: list[str]) -> str:
    """What the session lacks, in the question's words: the phrases it never mentions; and when it mentions
    some ("smart meters") without answering, those first: a lone word it lacks ("new") says little alone."""
    if mentioned:
        said = f"This session's files, digests and reports mention {quote_list(mentioned)}, but none answers this"
        if uncovered:
            said += f", and none mentions {quote_list(uncovered)}"
    elif uncovered:
        pronoun = "it" if len(uncovered) == 1 else "them"
        said = f"Context on {quote_list(uncovered)}: none of this session's files, digests or reports mention {pronoun}"
    else:
        said = "Context that answers this question"
    return f"{said}. Paste a note or attach a document."


@dataclass(frozen=True)
class _Artifact:
    title: str
    whole: bool  # the prompt carries all its text (not omitted, cut or summarised by the token budget)


def _artifacts(prompt: str) -> dict[str, _Artifact]:
    """key → artifact, for every keyed source of the prompt, in the Context Index's order."""
    whole: dict[str, bool] = {}
    titles = index_titles(prompt)
    for chunk in evidence_chunks(prompt):
        source = chunk.anchor.split("#", 1)[0]
        carried = (
            bool(chunk.text)
            and not chunk.text.startswith(SUMMARY_PREFIX)
            and f"{chunk.text}\n{TRUNCATED_MARKER}\n[/CHUNK]" not in prompt
        )
        whole[source] = whole.get(source, True) and carried
        titles.setdefault(source, chunk.title)
    artifacts: dict[str, _Artifact] = {}
    for source, title in titles.items():
        key = chunk_key(title)
        if key and key not in artifacts:
            artifacts[key] = _Artifact(title, whole.get(source, False))
    return artifacts


def _relevant_key(candidates: list[Candidate], wanted: set[str], artifacts: dict[str, _Artifact]) -> str:
    """The key of the artifact the prompt lacks in full that shares the most terms with the message, by its
    title or the part of its text the prompt shows; "" when none does.

    An artifact the prompt carries whole is never an anchor: the system would attach what was already read,
    and the request would never reach a person. Nor is a file's digest or passage: the passages are the
    library's best spans of the session's files for this question, and a digest restates those files, so
    attaching one would answer from what was already searched instead of asking.
    """
    shown: dict[str, int] = {}
    artifacts = {key: a for key, a in artifacts.items() if not key.startswith(_FILE_KEYS)}
    for candidate in candidates:
        for key in candidate.keys:
            shown[key] = max(shown.get(key, 0), len(wanted & candidate.terms))
    best, best_score = "", 0
    for key, artifact in artifacts.items():
        if artifact.whole or len(key) > MAX_ANCHOR_CHARS:
            continue
        about = TITLE_KEY.sub("", artifact.title.strip(), count=1)
        score = max(shown.get(key, 0), len(wanted & set(content_terms(about))))
        if score > best_score:
            best, best_score = key, score
    return best
