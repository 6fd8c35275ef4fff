"""A session's cost ledger (SPEC §8 Usage): its model calls (llm_platform.ledger) and what the
digest cache saved it (its DigestCacheHit rows, one more query); and the Usage panel's fragments
(templates/context/_usage.html), which the page's live pushes carry after a parse or a run changed it."""

from django.db.models import Sum
from django.template.loader import render_to_string

from llm_platform.ledger import session_ledger
from llm_platform.spending import TOKEN_KINDS

from .models import ContextSet, DigestCacheHit


def session_usage(context_set: ContextSet) -> dict:
    hits = (
        DigestCacheHit.objects.filter(context_set=context_set)
        .order_by()
        .values("task", "provider", "model")
        .annotate(calls=Sum("calls"), **{kind: Sum(kind) for kind in TOKEN_KINDS})
    )
    return session_ledger(context_set.session, hits)


def usage_fragments(context_set: ContextSet) -> str:
    return render_to_string("context/_usage.html#fragments", {"usage": session_usage(context_set)})
