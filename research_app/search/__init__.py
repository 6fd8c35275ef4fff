"""Search for research nodes (SPEC §4, seed 002): providers, their combination, and the ContextBuilder."""

from .context_builder import ContextBuilder, ResearchContext
from .providers import (
    LibrarySearch,
    SearchError,
    SearchProvider,
    SearchResponse,
    SearchResult,
    SearxngSearch,
    deduplicate_results,
    providers_for_scope,
    search_all,
)

__all__ = [
    "ContextBuilder",
    "LibrarySearch",
    "ResearchContext",
    "SearchError",
    "SearchProvider",
    "SearchResponse",
    "SearchResult",
    "SearxngSearch",
    "deduplicate_results",
    "providers_for_scope",
    "search_all",
]
