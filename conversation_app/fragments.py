"""The chat pane's live fragments: the same partials the page renders (templates/conversation/_chat.html)."""

from django.template.loader import render_to_string

from workspaces.models import ResearchSession

from .selectors import chat_pane

FRAGMENTS = ("state", "log", "requests")


def chat_fragments(session: ResearchSession) -> str:
    # No request here: the forms carry no CSRF token or Idempotency-Key field (page_form_fields); the
    # page's script posts them with its own headers.
    context = {"pane": chat_pane(session), "session_id": str(session.pk)}
    return "".join(render_to_string(f"conversation/_chat.html#{name}", context) for name in FRAGMENTS)
