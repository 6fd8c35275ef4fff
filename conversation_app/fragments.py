"""The chat pane's live fragments: the same partials the page renders (templates/conversation/_chat.html)."""

from django.template.loader import render_to_string

from workspaces.models import ResearchSession

from .selectors import chat_pane

FRAGMENTS = ("state", "log", "requests")


def chat_fragments(session: ResearchSession) -> str:
    # No request here: forms carry no CSRF token or Idempotency-Key field ("NOTPROVIDED" renders no
    # token); the page's script posts them with its own headers.
    context = {"pane": chat_pane(session), "session_id": str(session.pk), "csrf_token": "NOTPROVIDED"}
    return "".join(render_to_string(f"conversation/_chat.html#{name}", context) for name in FRAGMENTS)
