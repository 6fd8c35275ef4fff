"""The Research tab's live fragments: the same partials the page renders (templates/research/_research_tab.html)."""

from django.template.loader import render_to_string

from .pane import ResearchPane

TAB = "research/_research_tab.html"
# Every container of the tab that shows the run, in page order; the run usage line is its own template.
FRAGMENTS = (
    "runs",
    "notice",
    "state",
    "cancel",
    "progress",
    "tree",
    "detail",
    "meta",
    "downloads",
    "report",
    "stream",
    "debug",
)
LIST_FRAGMENTS = ("runs", "notice")


def research_fragments(pane: ResearchPane, *, names: tuple[str, ...] = FRAGMENTS, append: bool = False) -> str:
    """The named containers as one fragment. With `append`, the stream holds only its new lines and
    says so (data-swap="append"): the page adds them after the ones it shows."""
    # No request here: forms carry no CSRF token or Idempotency-Key field (page_form_fields); the
    # page's script posts them with its own headers.
    context = {"research": pane, "session_id": str(pane.session.pk), "append": append}
    html = [render_to_string(f"{TAB}#{name}", context) for name in names]
    if "state" in names:
        html.append(render_to_string("research/_run_usage.html", context))
    return "".join(html)
