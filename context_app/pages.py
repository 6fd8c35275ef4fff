"""The Context tab's server-rendered pieces: a cited source as a page (`/sources/{version}/{span}/`) and as
the fragment the source dialog shows (`?fragment`), a file's raw text as a page, and the file list's forms
posted without JavaScript (each calls the service its JSON endpoint calls, with the revision the page showed
as If-Match, then returns to the page). With JavaScript the same forms post to the JSON API."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser

from workspaces.api.decorators import idempotent, limit_upload_size, with_session
from workspaces.page_forms import back_to_page, page_form
from workspaces.selectors import parse_uuid, visible_session

from . import provenance, selectors, services
from .api.views import upload_of
from .digest_view import Choice, digest_view, header_span, no_text_yet, source_context
from .files_pane import context_stamp, files_fragments

SOURCE_FRAGMENTS = ("title", "meta", "spans")


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


@login_required
def file_preview_page(request, sid, fid):
    """A file's raw text, span by span: the Preview of a row, as a page, or (`?fragment`) as what the
    page's source dialog shows."""
    session = visible_session(request.user, sid)
    file = session.context_set.files.filter(pk=parse_uuid(fid)).first() if session is not None else None
    if file is None:
        raise Http404("file not found")
    spans = selectors.spans_of(file)
    context = {
        "raw_preview": file.filename,
        "spans": spans,
        "highlight": request.GET.get("span"),
        "header": header_span(spans),
        "empty": no_text_yet(file),
    }
    if "fragment" in request.GET:
        return HttpResponse(
            "".join(render_to_string(f"context/_source.html#{name}", context) for name in SOURCE_FRAGMENTS)
        )
    return render(request, "context/source_page.html", context)


def _on_files(request, session, service, *args, **kwargs):
    """Calls `service(context_set, *args, expected_revision=<the revision the page showed>)`, then returns to
    the file list."""
    revision = _shown_revision(request)
    return back_to_page(
        request,
        lambda: service(session.context_set, *args, expected_revision=revision, **kwargs),
        f"/sessions/{session.pk}/#context-tab",
    )


def _shown_revision(request) -> int | None:
    """The revision the page showed (its form's If-Match); a form without one acts on the current revision."""
    try:
        return int(request.POST["revision"])
    except (KeyError, ValueError):
        return None


def _file_form(service):
    """A page form acting on one file of the session: `service(context_set, file_id, expected_revision=…)`."""

    @page_form
    def view(request, session, fid):
        return _on_files(request, session, service, fid)

    return view


@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
@limit_upload_size
@idempotent
@with_session
def upload_page(request, session):
    uploads = [upload_of(f) for f in request.FILES.getlist("files")]
    return _on_files(request, session, services.upload_files, uploads)


@page_form
def options_page(request, session):
    auto_parse = request.POST.getlist("auto_parse")[-1:] == ["true"]  # the checkbox after its hidden "false"
    return _on_files(request, session, services.set_options, auto_parse=auto_parse)


@page_form
def parse_page(request, session):
    return _on_files(request, session, services.request_parse)


retry_page = _file_form(services.retry_file)
delete_page = _file_form(services.delete_file)


@login_required
def files_pane_fragments(request, sid):
    """The file list's fragments as the socket sends them (`{"type": "fragments", "html", "manifest"}`): what a
    tab reads after its own change, whatever its socket heard."""
    session = visible_session(request.user, sid)
    if session is None:
        raise Http404("session not found")
    manifest = selectors.manifest_of(session.context_set)
    return JsonResponse({"type": "fragments", "html": files_fragments(manifest), "manifest": context_stamp(manifest)})


@login_required
def digest_view_fragment(request, sid):
    """The parsed-context pane's view the query chooses (context_app.digest_view), as a fragment."""
    session = visible_session(request.user, sid)
    if session is None:
        raise Http404("session not found")
    context = digest_view(session, request.user, Choice.from_query(request.GET))
    return HttpResponse(render_to_string("context/_digest_view.html#view", context | {"session_id": str(sid)}))
