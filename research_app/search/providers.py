"""Search providers: the team's library and web search, behind one small interface.

A provider answers `search(query, limit)` with results best first, or raises
SearchError with a message fit for a thought-stream event. `search_all` asks
several providers, keeps going when one fails, puts every result on one 0..1
relevance scale (each provider's own score divided by its best), and
deduplicates by (document, page).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from django.conf import settings

from context_app import library


@dataclass(frozen=True)
class SearchResult:
    """One page, section or web page (seed 002 SourceDocument, in our terms)."""

    provider: str  # "library" | "searxng"
    doc_id: str  # library: the document's text hash; web: the URL
    filename: str  # library: the file's name; web: the page title
    text: str  # the page's / section's text, or the web snippet
    score: float  # the provider's own score (BM25, SearXNG score)
    relevance_score: float = 0.0  # 0..1, comparable across providers (set by search_all)
    page: int | None = None  # 1-based PDF page; None for unpaginated files and web pages
    position: int = 0  # record order within the file (sections of unpaginated files)
    extension: str = ""
    section_path: str = ""  # "Introduction > Methods"
    parent_heading: str = ""
    url: str = ""
    timestamp: str = ""  # ISO upload or publication time
    sourceref: str = ""  # library only: "report.pdf::S4", opens the raw preview at that span
    file_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Library only: the exact text version and span the result cites (its record's first; the record
    # runs to last_span), and the session the file belongs to.
    version: str = ""
    span: str = ""
    last_span: str = ""
    origin_session_id: str = ""
    origin_session_title: str = ""

    @property
    def location_key(self) -> tuple[str, str]:
        """What counts as the same hit: (document, page), else (document, section)."""
        return library.location_key(self.doc_id, self.page, self.section_path, self.position)

    @property
    def location(self) -> str:
        """Where in the document, for a citation: "Page 3", "Section: Methods > Sampling", "Part 2"."""
        if self.url:
            return self.url
        if self.page is not None:
            return f"Page {self.page}"
        if self.section_path:
            return f"{library.SECTION_LOCATION}{self.section_path}"
        return f"Part {self.position}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SearchError(Exception):
    """A provider could not answer; the message is safe to show."""

    results: list[SearchResult] = []


class SearchDegraded(SearchError):
    """A provider answered less well than it should, with `results` still worth having (the
    library by keywords alone when meaning is unavailable); the message says why."""

    def __init__(self, message: str, results: list[SearchResult]):
        super().__init__(message)
        self.results = results


class SearchProvider(Protocol):
    name: str

    def search(self, query: str, limit: int) -> list[SearchResult]: ...


@dataclass(frozen=True)
class SearchResponse:
    results: list[SearchResult]
    errors: list[str]  # "searxng: timed out after 10 s", one per failed provider


class LibrarySearch:
    """The team's uploaded documents (context_app.library: BM25, fused with meaning where embeddings are on)."""

    name = "library"

    def __init__(self, scope: str, mode: library.SearchMode | None = None, own_session: str = ""):
        self.scope = scope
        self.mode = mode
        self.own_session = own_session  # the session searching: its own copy of a document is the hit

    def search(self, query: str, limit: int) -> list[SearchResult]:
        found = library.search(self.scope, query, limit, mode=self.mode, own_session_id=self.own_session)
        results = [
            SearchResult(
                provider=self.name,
                doc_id=hit.document_id,
                filename=hit.filename,
                text=hit.text,
                score=hit.score,
                page=hit.page,
                position=hit.position,
                extension=hit.filename.rsplit(".", 1)[-1].lower() if "." in hit.filename else hit.file_format,
                section_path=hit.section_path,
                parent_heading=hit.parent_heading,
                timestamp=hit.uploaded_at,
                sourceref=hit.sourceref,
                file_id=hit.file_id,
                version=hit.version,
                span=hit.first_span,
                last_span=hit.last_span,
                origin_session_id=hit.origin_session_id,
                origin_session_title=hit.origin_session_title,
            )
            for hit in found.hits
        ]
        if found.warning:
            raise SearchDegraded(found.warning, results)
        return results


class SearxngSearch:
    """A SearXNG instance's JSON API: GET <base>/search?q=…&format=json."""

    name = "searxng"

    def __init__(self, base_url: str, *, timeout: float = 10.0):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"SearXNG URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def search(self, query: str, limit: int) -> list[SearchResult]:
        url = f"{self.base_url}/search?" + urllib.parse.urlencode({"q": query, "format": "json"})
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read(5 * 1024 * 1024)
        except urllib.error.HTTPError as exc:
            hint = " (is the json format enabled in its settings.yml?)" if exc.code == 403 else ""
            raise SearchError(f"searxng answered HTTP {exc.code}{hint}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SearchError(f"searxng unreachable: {reason}") from exc
        try:
            payload = json.loads(body)
            items = payload["results"]
            if not isinstance(items, list):
                raise TypeError("results is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            raise SearchError(f"searxng sent an unusable answer: {exc}") from exc
        results = []
        for rank, item in enumerate(i for i in items if isinstance(i, dict) and i.get("url")):
            score = item.get("score")
            results.append(
                SearchResult(
                    provider=self.name,
                    doc_id=str(item["url"]),
                    filename=str(item.get("title") or item["url"])[:300],
                    text=str(item.get("content") or ""),
                    # SearXNG's score grows with the number of engines agreeing; without one, rank order.
                    score=float(score) if isinstance(score, int | float) else 1.0 / (rank + 1),
                    url=str(item["url"]),
                    timestamp=str(item.get("publishedDate") or ""),
                    extra={"engine": item.get("engine", "")},
                )
            )
        results.sort(key=lambda r: -r.score)
        return results[:limit]


def deduplicate_results(results: Sequence[SearchResult]) -> list[SearchResult]:
    """One result per (document, page), the best-scored one; best first, stable for ties."""
    best: dict[tuple[str, str], SearchResult] = {}
    for result in results:
        kept = best.get(result.location_key)
        if kept is None or result.relevance_score > kept.relevance_score:
            best[result.location_key] = result
    return sorted(best.values(), key=lambda r: -r.relevance_score)  # stable: ties keep first-seen order


def normalise(results: Sequence[SearchResult]) -> list[SearchResult]:
    """Relevance 0..1: each score over the provider's best score in this answer."""
    top = max((r.score for r in results), default=0.0)
    return [replace(r, relevance_score=round(r.score / top, 6) if top > 0 else 0.0) for r in results]


def search_all(providers: Sequence[SearchProvider], query: str, limit: int) -> SearchResponse:
    """Ask every provider; a failing one becomes an error line, not a failed search."""
    results: list[SearchResult] = []
    errors: list[str] = []
    for provider in providers:
        try:
            results.extend(normalise(provider.search(query, limit)))
        except SearchError as exc:
            results.extend(normalise(exc.results))
            errors.append(f"{provider.name}: {exc}")
    return SearchResponse(deduplicate_results(results)[:limit], errors)


def providers_for_scope(
    scope: str,
    names: Sequence[str] | None = None,
    *,
    library_mode: library.SearchMode | None = None,
    own_session: str = "",
) -> list[SearchProvider]:
    """The configured providers (GROUNDWORK_SEARCH_PROVIDERS) for a team's library scope; the library
    ranks by `library_mode` (default: hybrid where embeddings are on, else BM25) and gives `own_session`'s
    copy of a document its teammates also hold."""
    providers: list[SearchProvider] = []
    for name in names if names is not None else settings.GROUNDWORK_SEARCH_PROVIDERS:
        if name == "library":
            providers.append(LibrarySearch(scope, library_mode, own_session))
        elif name == "searxng":
            if not settings.GROUNDWORK_SEARXNG_URL:
                raise ValueError("search provider searxng needs GROUNDWORK_SEARXNG_URL")
            providers.append(
                SearxngSearch(settings.GROUNDWORK_SEARXNG_URL, timeout=settings.GROUNDWORK_SEARCH_TIMEOUT_SECONDS)
            )
        else:
            raise ValueError(f"unknown search provider {name!r}; known: library, searxng")
    return providers
