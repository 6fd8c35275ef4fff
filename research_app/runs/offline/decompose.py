"""NODE_DECOMPOSE offline: a question of several clauses splits into its clauses;
otherwise the gaps' terms are partitioned among the children, one group each,
each asked as a well-formed question about the parent's subject (the parent's
verb is not asked about as a thing: "risks", not "risks threaten").
"""

from __future__ import annotations

from llm_platform.statements import ended
from llm_platform.task_envelope import read_task
from llm_platform.terms import (
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    and_list,
    comparison_key,
    cut_text,
    question_terms,
    quote_list,
    surface_words,
)

from ..split import plural
from .inputs import bounded, context_items, required_question, strings_of, term_set
from .queries import question_keywords, quoted_phrases
from .questions import (
    KEY_TERMS_FRAME,
    NARROWED_FRAME,
    question_ask,
    question_clauses,
    question_parts,
    thing_phrase,
    without_frame,
)

MAX_CHILDREN = 8  # node_decompose.schema.json
DEFAULT_MAX_CHILDREN = 4
MAX_CHILD_QUESTION_CHARS = 500
MAX_RATIONALE_CHARS = 800
# Words of a gap's wording ("No evidence yet on …") that are not its subject.
GAP_WORDS = frozenset(
    "evidence yet information missing unclear unknown lack lacking lacks found finding findings gap gaps "
    "need needed needs still source sources known data".split()
)


def node_decompose(prompt: str) -> dict:
    """Children that close the gaps: the question's clauses, else one child per group of gap terms."""
    _, inputs = read_task(prompt)
    question = required_question(inputs, "NODE_DECOMPOSE")
    gaps = strings_of(inputs.get("gaps"))
    items = context_items(inputs.get("context_items"))
    limit = bounded(inputs.get("max_children"), DEFAULT_MAX_CHILDREN, MAX_CHILDREN)
    subject, verbs = question_parts(question)
    gaps = [gap for gap in gaps if not _names_the_question(gap, question)]
    children = _clause_children(question, gaps, limit) or _gap_children(question, subject, verbs, gaps, limit)
    unique: list[dict] = []
    seen = {comparison_key(question)}
    for child in children:
        key = comparison_key(child["question"])
        if key not in seen:
            seen.add(key)
            unique.append(child)
    if not unique and not gaps:  # nothing narrower is missing: a child may only ask what the question asks
        ask = question_ask(question)
        if not ask:
            return {"children": []}  # asked again in other words, the question would find nothing new
        lead = question.partition(ask)[0].strip()
        without = f" without “{lead}”" if lead and lead != question.strip() else ""
        unique = [{"question": _as_question(ask), "rationale": f"Asks what the question asks{without}."}]
    if not unique:
        unique = [_narrowing_child(question, subject, verbs, gaps)]
        if comparison_key(unique[0]["question"]) == comparison_key(question):
            unique = [_narrowing_child(question, subject, verbs, [])]
    for child in unique:
        child["rationale"] = cut_text(
            child["rationale"] + _files_note(child["question"], subject, items), MAX_RATIONALE_CHARS
        )
    return {"children": unique[:limit]}


def _as_question(text: str) -> str:
    text = text.strip().rstrip("?.!,;:").strip()
    return cut_text(text[:1].upper() + text[1:] + "?", MAX_CHILD_QUESTION_CHARS)


def _clause_children(question: str, gaps: list[str], limit: int) -> list[dict]:
    """One child per clause (the subject standing in for "it"); [] when the question is one clause."""
    clauses = question_clauses(question)
    if len(clauses) < 2:
        return []
    gap_terms = [set(_gap_words(gap)) for gap in gaps]
    if limit == 1:  # the narrowest useful child: the first clause with an open gap
        with_gap = [c for c in clauses if any(terms & set(question_terms(c)) for terms in gap_terms)]
        clauses = (with_gap or clauses)[:1]
    elif len(clauses) > limit:
        clauses = clauses[: limit - 1] + [" and ".join(clauses[limit - 1 :])]
    children = []
    for clause in clauses:
        terms = set(question_terms(clause))
        open_gaps = [gap for gap, g_terms in zip(gaps, gap_terms, strict=True) if g_terms & terms]
        rationale = f"Covers the parent's clause “{clause}”."
        if open_gaps:
            rationale += f" Open gaps here: {ended('; '.join(open_gaps))}"
        children.append({"question": _as_question(clause), "rationale": rationale})
    return children


def _names_the_question(gap: str, question: str) -> bool:
    """Whether the gap quotes the whole question (NODE_SUFFICIENCY's gap of a question no evidence answers in
    meaning): asked again, in any frame, it finds nothing new."""
    asked = {comparison_key(question), comparison_key(without_frame(question))}
    return any(comparison_key(phrase) in asked for phrase in quoted_phrases(gap))


def _gap_words(gap: str) -> dict[str, str]:
    """stem → word of what a gap is about: its quoted phrase(s) if any, else its content words minus gap wording."""
    quoted = quoted_phrases(gap)
    if quoted:
        return surface_words(" ".join(quoted))
    return surface_words(gap, OVERLAP_STOP_WORDS | QUESTION_WORDS | GAP_WORDS)


def _gap_children(question: str, subject: str, verbs: frozenset[str], gaps: list[str], limit: int) -> list[dict]:
    """One child per gap, its terms taken by no other child (a partition); the overflow merged into the last."""
    groups: list[tuple[str, str]] = []  # (phrase, gap)
    taken: set[str] = set()
    for gap in gaps:
        words = {stem: word for stem, word in _gap_words(gap).items() if stem not in taken}
        if words:
            taken.update(words)
            groups.append((thing_phrase(" ".join(words.values()), question, verbs), gap))
    if limit == 1:
        groups = groups[:1]
    elif len(groups) > limit:
        tail = groups[limit - 1 :]
        phrases = [p for p, _ in tail if p]
        merged = and_list(phrases, MAX_CHILDREN) if phrases else ""
        groups = groups[: limit - 1] + [(merged, " ".join(ended(g) for _, g in tail))]
    return [
        {"question": _narrowed(question, subject, verbs, phrase), "rationale": f"Covers the gap: {ended(gap)}"}
        for phrase, gap in groups
    ]


def _narrowed(question: str, subject: str, verbs: frozenset[str], phrase: str) -> str:
    """A full, well-formed question about `phrase` that keeps the parent's subject."""
    if subject and (not phrase or set(question_terms(phrase)) <= set(question_terms(subject))):
        return _as_question(f"{NARROWED_FRAME}{subject}")
    if subject and set(question_terms(subject)) <= set(question_terms(phrase)):
        return _as_question(f"{NARROWED_FRAME}{phrase}")  # the phrase already names the subject
    if subject:
        return _as_question(f"{NARROWED_FRAME}{phrase} for {subject}")
    if phrase:
        return _as_question(f"{NARROWED_FRAME}{phrase}")
    return _key_terms_question(question)


def _narrowing_child(question: str, subject: str, verbs: frozenset[str], gaps: list[str]) -> dict:
    """The one child when nothing splits: narrowed to the first gap, or to the question's own key terms."""
    named = " ".join(_gap_words(gaps[0]).values()) if gaps else ""
    if named:  # a gap that names nothing ("No passage answers “what are we doing about it” yet") narrows nothing
        phrase = thing_phrase(named, question, verbs)
        return {
            "question": _narrowed(question, subject, verbs, phrase),
            "rationale": f"Narrows to the first gap: {ended(gaps[0])}",
        }
    return {
        "question": _key_terms_question(question),
        "rationale": "No gap names a thing to look for; narrows the question to direct statements on its key terms.",
    }


def _key_terms_question(question: str) -> str:
    """The question narrowed to its own key terms (not those of a frame it is written in)."""
    asked = without_frame(question)
    return _as_question(f"{KEY_TERMS_FRAME}{question_keywords(asked) or asked.rstrip('?.! ')}")


def _files_note(child_question: str, subject: str, items: list[dict]) -> str:
    """ " The user's files bear on it: …" when context items share the child's own terms."""
    own = set(question_terms(child_question)) - set(question_terms(subject))
    terms = own or set(question_terms(child_question))
    mentioning = [item for item in items if terms & term_set(item["text"])]
    if not mentioning:
        return ""
    shared = set().union(*(terms & term_set(item["text"]) for item in mentioning))
    words = surface_words(child_question)
    named = [words[t] for t in question_terms(child_question) if t in shared]
    return (
        f" The user's files bear on it: {plural(len(mentioning), 'context item')} "
        f"{'mentions' if len(mentioning) == 1 else 'mention'} {quote_list(named)}."
    )
