"""NODE_SUFFICIENCY offline: the share of the question's terms that some finding or
context item mentions; enough evidence and 75 % coverage make it sufficient,
and every uncovered run of terms is a gap.
"""

from __future__ import annotations

from llm_platform.extractive import uncovered_phrases
from llm_platform.task_envelope import read_task
from llm_platform.terms import cut_text, question_terms, quote_list, surface_words

from ..split import plural
from .inputs import context_items, dicts_of, input_text, required_question, term_set

SUFFICIENT_COVERAGE = 0.75
MAX_GAPS = 10  # node_sufficiency.schema.json
MAX_REASONING_CHARS = 2000


def node_sufficiency(prompt: str) -> dict:
    """Sufficient iff there is some evidence and the evidence mentions ≥ 75 % of the question's terms."""
    _, inputs = read_task(prompt)
    question = required_question(inputs, "NODE_SUFFICIENCY")
    findings = [f for f in dicts_of(inputs.get("findings")) if input_text(f.get("text"))]
    items = context_items(inputs.get("context_items"))
    terms = question_terms(question)
    from_findings = set().union(*(term_set(f["text"]) for f in findings))
    from_items = set().union(*(term_set(item["text"]) for item in items))
    covered = [term for term in terms if term in from_findings or term in from_items]
    coverage = len(covered) / len(terms) if terms else 1.0
    has_evidence = bool(findings or items)
    is_sufficient = has_evidence and coverage >= SUFFICIENT_COVERAGE

    gaps = [f"No evidence yet on “{phrase}”." for phrase in uncovered_phrases(question, set(covered))]
    if not has_evidence and not gaps:
        gaps = ["No search findings and no items from the user's files bear on this question yet."]
    words = surface_words(question)
    reasoning = _sufficiency_reasoning(
        findings_count=len(findings),
        items_count=len(items),
        covered=[words[t] for t in covered],
        total=len(terms),
        by_files=[words[t] for t in covered if t in from_items],
        gaps_count=len(gaps),
        coverage=coverage,
        is_sufficient=is_sufficient,
    )
    return {"is_sufficient": is_sufficient, "reasoning": reasoning, "gaps": gaps[:MAX_GAPS]}


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
    elif is_sufficient:
        verdict = f"Sufficient: coverage {round(coverage * 100)} % reaches {threshold}."
    else:
        verdict = f"Not sufficient: coverage {round(coverage * 100)} % is below {threshold}."
    return cut_text("; ".join(parts) + ". " + verdict, MAX_REASONING_CHARS)
