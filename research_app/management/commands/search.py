"""`python manage.py search "<query>" --session <sid>`: ranked search results, for debugging relevance."""

import textwrap
import uuid

from django.core.management.base import BaseCommand, CommandError

from context_app.library import SearchMode
from research_app.search import ContextBuilder, providers_for_scope, search_all
from workspaces.models import ResearchSession
from workspaces.services import team_cache_scope


class Command(BaseCommand):
    help = "Search a session's team library (and configured web providers); print ranked results."

    def add_arguments(self, parser):
        parser.add_argument("query")
        parser.add_argument("--session", required=True, help="research session id (its team's library is searched)")
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument(
            "--mode",
            choices=[mode.value for mode in SearchMode],
            help="how the library ranks: bm25, dense (by meaning) or hybrid (default: hybrid with embeddings on)",
        )
        parser.add_argument(
            "--provider", action="append", dest="providers", help="library or searxng (repeatable; default: settings)"
        )
        parser.add_argument(
            "--context", action="store_true", help="also print the ContextBuilder's cited context for the query"
        )
        parser.add_argument("--max-tokens", type=int, default=10_000, help="token budget for --context")

    def handle(self, *args, query, session, limit, mode, providers, context, max_tokens, **options):
        research_session = ResearchSession.objects.select_related("team").filter(pk=_uuid(session)).first()
        if research_session is None:
            raise CommandError(f"no research session {session!r}")
        try:
            scope = team_cache_scope(research_session.team)
            search_providers = providers_for_scope(
                scope, providers, library_mode=SearchMode(mode) if mode else None, own_session=str(research_session.pk)
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        response = search_all(search_providers, query, limit)
        for error in response.errors:
            self.stderr.write(self.style.WARNING(f"warning: {error}"))
        if not response.results:
            self.stdout.write("no results")
        for rank, result in enumerate(response.results, start=1):
            cite = f"  {result.sourceref}" if result.sourceref else ""
            self.stdout.write(
                f"{rank:>3}. {result.relevance_score:.3f} (score {result.score:.3f}, {result.provider})  "
                f"{result.filename}, {result.location}{cite}"
            )
            if result.origin_session_id:
                where = "this session" if result.origin_session_id == str(research_session.pk) else "another session"
                self.stdout.write(f"       from {where}: {result.origin_session_title}")
            snippet = " ".join(result.text.split())
            self.stdout.write(textwrap.indent(textwrap.shorten(snippet, 220, placeholder=" …"), "       "))
        if context:
            builder = ContextBuilder(search_providers, max_sources=limit, max_tokens=max_tokens)
            built = builder.build_context(query, num_results=limit)
            self.stdout.write(
                f"\n--- context: {len(built.sources)} sources, {built.total_tokens} tokens, "
                f"truncated={built.truncated} ---\n{built.formatted_text}"
            )


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise CommandError(f"not a session id: {value!r}") from None
