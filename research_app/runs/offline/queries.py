"""NODE_QUERIES offline: the question itself, its keywords, then its quoted phrases and
its runs of two or more content words (a crude noun phrase).
"""

from __future__ import annotations

from llm_platform.extractive import content_runs
from llm_platform.task_envelope import read_task
from llm_platform.terms import QUOTATION, comparison_key, cut_text, surface_words

from .inputs import bounded, input_text, required_question

MAX_QUERIES = 8  # node_queries.schema.json
DEFAULT_MAX_QUERIES = 4
MAX_QUERY_CHARS = 300
MIN_QUOTED_CHARS, MAX_QUOTED_CHARS = 3, 200  # a quoted phrase searched on its own


def node_queries(prompt: str) -> dict:
    """The question, its keywords, then its quoted phrases and multi-word phrases: distinct, at most max_queries."""
    _, inputs = read_task(prompt)
    question = required_question(inputs, "NODE_QUERIES")
    limit = bounded(inputs.get("max_queries"), DEFAULT_MAX_QUERIES, MAX_QUERIES)
    candidates = [question, question_keywords(question)]
    candidates += [f'"{phrase}"' for phrase in quoted_phrases(question)]
    candidates += [" ".join(run) for run in content_runs(question) if len(run) >= 2]
    queries: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        query = cut_text(candidate, MAX_QUERY_CHARS)
        key = comparison_key(query)
        if query and key and key not in seen:
            seen.add(key)
            queries.append(query)
    return {"queries": queries[:limit]}


def question_keywords(question: str) -> str:
    """The question's content words, each stem once, as written."""
    return " ".join(surface_words(question).values())


def quoted_phrases(text: str) -> list[str]:
    quoted = (match.group(1) for match in QUOTATION.finditer(text))
    return [input_text(q) for q in quoted if MIN_QUOTED_CHARS <= len(q) <= MAX_QUOTED_CHARS and input_text(q)]
