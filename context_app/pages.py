"""A cited source as a page (`/sources/{version}/{span}/`), and as the fragment the page's source dialog
shows (`?fragment`): the same templates, resolved by the one resolver (context_app.provenance)."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from . import provenance

SOURCE_FRAGMENTS = ("title", "meta", "spans")


def source_context(source: dict, viewing_session_id: str | None) -> dict:
    spans = source.get("spans", [])
    origin = source["origin_session"].get("id")
    return {
        "source": source,
        "spans": spans,
        "highlight": source["span_id"],
        "header": next((span for span in spans if span["locator"] == "header"), None),
        "from_other_session": bool(origin and origin != viewing_session_id),
    }


@login_required
def source_page(request, version, span):
    source = provenance.resolve(request.user, [(version, span)]).get((version, span))
    if source is None:
        raise Http404("source not found")
    context = source_context(source, request.GET.get("session"))
    if "fragment" in request.GET:
        return HttpResponse(
            "".join(render_to_string(f"context/_source.html#{name}", context) for name in SOURCE_FRAGMENTS)
        )
    return render(request, "context/source_page.html", context)
