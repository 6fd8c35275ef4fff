"""Search results -> a token-budgeted context with numbered citations (seed 002 ContextBuilder).

    [Document 1: crisis.pdf, Page 3]
    The financial crisis of 2008 was caused by...

    [Document 2: notes.md, Section: Causes > Housing]
    Subprime mortgages played a key role...

Sources keep rank order (best first) and are numbered 1..n in that order. The
budget drops the lowest-scored sources first; when even the best one alone does
not fit, its text is cut at a sentence (else word) boundary and marked.
Token counts come from the Context IR's counter, so they mean the same here as
in every other prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from llm_platform.ir.budget import boundary_prefixes, longest_fitting_prefix
from llm_platform.ir.tokens import estimate_tokens

from .providers import SearchProvider, SearchResult, search_all

CITATION_SEPARATOR = "\n\n"
SEPARATOR_TOKENS = 1
TRUNCATED_MARKER = "[truncated]"


@dataclass(frozen=True)
class ResearchContext:
    formatted_text: str
    sources: list[SearchResult]  # in citation order: sources[0] is [Document 1]
    total_tokens: int
    truncated: bool  # sources were dropped or cut to fit max_tokens
    errors: list[str] = field(default_factory=list)  # providers that failed

    def get_citation_map(self) -> dict[int, SearchResult]:
        return {number: source for number, source in enumerate(self.sources, start=1)}

    def to_dict(self) -> dict:
        return {
            "formatted_text": self.formatted_text,
            "sources": [s.to_dict() for s in self.sources],
            "total_tokens": self.total_tokens,
            "truncated": self.truncated,
            "errors": self.errors,
        }


class ContextBuilder:
    def __init__(
        self,
        providers: Sequence[SearchProvider],
        *,
        max_sources: int = 10,
        max_tokens: int = 10_000,
        counter: Callable[[str], int] = estimate_tokens,
    ):
        if max_sources < 1 or max_tokens < 1:
            raise ValueError("max_sources and max_tokens must be positive")
        self.providers = list(providers)
        self.max_sources = max_sources
        self.max_tokens = max_tokens
        self.counter = counter

    def build_context(self, query: str, num_results: int = 10) -> ResearchContext:
        """Search, deduplicate by (document, page), keep max_sources, fit max_tokens, number them."""
        response = search_all(self.providers, query, num_results)
        sources = response.results[: self.max_sources]
        fitted, truncated = self.truncate_to_budget(sources, self.max_tokens)
        text = self.format_sources(fitted)
        return ResearchContext(text, fitted, self.counter(text) if text else 0, truncated, response.errors)

    def format_source_citation(self, source: SearchResult, citation_num: int) -> str:
        body = source.text + (f"\n{TRUNCATED_MARKER}" if source.extra.get("truncated") else "")
        return f"[Document {citation_num}: {source.filename}, {source.location}]\n{body}"

    def format_sources(self, sources: Sequence[SearchResult]) -> str:
        return CITATION_SEPARATOR.join(self.format_source_citation(s, n) for n, s in enumerate(sources, start=1))

    def estimate_tokens(self, text: str) -> int:
        return self.counter(text)

    def truncate_to_budget(self, sources: Sequence[SearchResult], max_tokens: int) -> tuple[list[SearchResult], bool]:
        """The best sources that fit, best first, and whether anything was dropped or cut.

        Costs add up block by block (plus one token per separator), an upper
        bound of counting the joined text, so the result never exceeds the budget.
        """
        kept: list[SearchResult] = []
        used = 0
        for number, source in enumerate(sources, start=1):
            cost = self.counter(self.format_source_citation(source, number)) + SEPARATOR_TOKENS
            if used + cost > max_tokens:
                if not kept:
                    cut = self._cut_to_fit(source, max_tokens)
                    return ([cut] if cut is not None else []), True
                return kept, True
            kept.append(source)
            used += cost
        return kept, False

    def _cut_to_fit(self, source: SearchResult, max_tokens: int) -> SearchResult | None:
        """The longest boundary-cut version of the best source that fits alone, if any does."""

        def cut(text: str) -> SearchResult:
            return replace(source, text=text, extra={**source.extra, "truncated": True})

        def fits(text: str) -> bool:
            return self.counter(self.format_source_citation(cut(text), 1)) + SEPARATOR_TOKENS <= max_tokens

        for prefixes in boundary_prefixes(source.text):
            text = longest_fitting_prefix(prefixes, fits)
            if text is not None:
                return cut(text)
        return None
