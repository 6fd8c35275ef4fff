"""NODE_SUFFICIENCY offline: is every part of the question answered by some finding or context item?

A question that asks several things (clauses joined by "and", ";" or ",": split_clauses) is
explored part by part: its own search mixes the parts' evidence, and each part searched on its
own finds its best passages, so it is never sufficient itself and decomposes into its clauses.

With embeddings, a part (each clause of a question that asks several things) is answered when
some evidence is SUFFICIENT_SIMILARITY close to it in meaning: a question in a colleague's words
shares few terms with the files' answer, and one that shares most of its terms with a sentence on
the same subject is not answered by it. Without embeddings, the share of the question's terms that
some evidence mentions decides (SUFFICIENT_COVERAGE). An unanswered clause is a gap in its own
words; otherwise every uncovered run of terms is one.
"""

from __future__ import annotations

from llm_platform import embeddings
from llm_platform.extractive import uncovered_phrases
from llm_platform.task_envelope import read_task
from llm_platform.terms import cut_text, question_terms, quote_list, surface_words

from ..split import plural
from .inputs import context_items, dicts_of, input_text, required_question, term_set
from .questions import question_parts, split_clauses, thing_phrase, without_frame

SUFFICIENT_COVERAGE = 0.75
# The cosine (all-MiniLM-L6-v2) at which a finding answers a part of the question (tuned on the
# man-page questions' tune split: bench/research_quality_bench.py).
SUFFICIENT_SIMILARITY = 0.5
MAX_GAPS = 10  # node_sufficiency.schema.json
MAX_REASONING_CHARS = 2000


def node_sufficiency(prompt: str) -> dict:
    """Sufficient iff there is evidence and every clause is answered by meaning (without embeddings: the
    evidence mentions ≥ 75 % of the question's terms)."""
    _, inputs = read_task(prompt)
    question = required_question(inputs, "NODE_SUFFICIENCY")
    findings = [f for f in dicts_of(inputs.get("findings")) if input_text(f.get("text"))]
    items = context_items(inputs.get("context_items"))
    to_cover = without_frame(question)  # what evidence must mention: not the words of our own frame
    terms = question_terms(to_cover)
    from_findings = set().union(*(term_set(f["text"]) for f in findings))
    from_items = set().union(*(term_set(item["text"]) for item in items))
    covered = [term for term in terms if term in from_findings or term in from_items]
    coverage = len(covered) / len(terms) if terms else 1.0
    has_evidence = bool(findings or items)
    clauses = split_clauses(question)
    unanswered = _unanswered_clauses(question, [f["text"] for f in findings] + [item["text"] for item in items])
    if len(clauses) > 1:
        is_sufficient = False
    elif unanswered is None:  # embeddings off or unavailable: terms decide
        is_sufficient = has_evidence and coverage >= SUFFICIENT_COVERAGE
    else:
        is_sufficient = has_evidence and not unanswered

    if unanswered == [] and has_evidence:
        gaps = []  # every part is answered in meaning: a term the answer words otherwise is no gap
    elif unanswered and len(clauses) > 1:
        gaps = [f"No passage answers “{clause}” yet." for clause in unanswered]
    elif unanswered:
        gaps = []  # one part unanswered in meaning: its gap is the part (below), not the terms it words otherwise
    else:  # without embeddings the terms decide, so an uncovered term is a gap
        verbs = question_parts(to_cover)[1]  # a gap names a thing: "network", not "network losing"
        phrases = [thing_phrase(phrase, to_cover, verbs) for phrase in uncovered_phrases(to_cover, set(covered))]
        gaps = [f"No evidence yet on “{phrase}”." for phrase in phrases if phrase]
    if unanswered and not gaps:
        # Of a question in our frame ("What is known about …") the gap names what it is about, not our words. Where
        # findings were drawn for it, they bear on it: what is missing is a passage that answers it whole ("… need
        # to know about safety" has eight findings on safety, none 0.5 near the question).
        in_part = " on its own yet; the findings bear on it in part." if findings else " yet."
        gaps = [
            f"No passage answers “{question.rstrip('?')}”{in_part}"
            if to_cover == question
            else f"No evidence yet on “{to_cover.rstrip('?')}”."
        ]
    if not has_evidence and not gaps:
        gaps = ["No search findings and no items from the user's files bear on this question yet."]
    words = surface_words(to_cover)
    reasoning = _sufficiency_reasoning(
        findings_count=len(findings),
        items_count=len(items),
        covered=[words[t] for t in covered],
        total=len(terms),
        by_files=[words[t] for t in covered if t in from_items],
        gaps_count=len(gaps),
        coverage=coverage,
        is_sufficient=is_sufficient,
        unanswered=unanswered,
        asked=len(clauses),
    )
    return {"is_sufficient": is_sufficient, "reasoning": reasoning, "gaps": gaps[:MAX_GAPS]}


def _unanswered_clauses(question: str, evidence: list[str]) -> list[str] | None:
    """The clauses of the question that no evidence is close to in meaning; None without embeddings."""
    clauses = split_clauses(question) or [question]
    if not evidence:
        return clauses if embeddings.enabled() else None
    unanswered = []
    for clause in clauses:
        cosines = embeddings.closeness(clause, evidence)
        if cosines is None:
            return None
        if float(cosines.max()) < SUFFICIENT_SIMILARITY:
            unanswered.append(clause)
    return unanswered


def _sufficiency_reasoning(
    *,
    findings_count: int,
    items_count: int,
    covered: list[str],
    total: int,
    by_files: list[str],
    gaps_count: int,
    coverage: float,
    is_sufficient: bool,
    unanswered: list[str] | None,
    asked: int,
) -> str:
    against = (
        f"Judged against {plural(findings_count, 'search finding')} and "
        f"{plural(items_count, 'item')} from the user's files"
    )
    if total:
        terms = f"{len(covered)} of {plural(total, 'key term')} covered"
        if covered:
            terms += f" ({quote_list(covered)})"
    else:
        terms = "the question has no key terms to check"
    parts = [f"{against}: {terms}"]
    if by_files:
        parts.append(f"the user's files cover {quote_list(by_files)}")
    if gaps_count:
        parts.append(f"{plural(gaps_count, 'gap')} {'remains' if gaps_count == 1 else 'remain'}")
    threshold = f"{round(SUFFICIENT_COVERAGE * 100)} %"
    if not findings_count and not items_count:
        verdict = "Not sufficient: there is no evidence yet."
    elif asked > 1:
        verdict = f"Not sufficient on its own: the question asks {asked} things, each is searched on its own."
    elif unanswered is not None:
        verdict = (
            "Sufficient: some evidence answers every part of the question in meaning."
            if is_sufficient
            else f"Not sufficient: no evidence answers {quote_list(unanswered)} in meaning."
        )
    elif is_sufficient:
        verdict = f"Sufficient: coverage {round(coverage * 100)} % reaches {threshold}."
    else:
        verdict = f"Not sufficient: coverage {round(coverage * 100)} % is below {threshold}."
    return cut_text("; ".join(parts) + ". " + verdict, MAX_REASONING_CHARS)
