"""The run loaders for run views; the other decorators are every app's (workspaces.api.decorators)."""

from functools import wraps

from rest_framework.negotiation import BaseContentNegotiation

from workspaces.api.decorators import loading
from workspaces.api.errors import error

from ..selectors import visible_run

# Loads the run named by `rid` for the members of its session's team; everyone else gets 404.
with_run = loading("rid", visible_run, "run not found")


def with_report(view):
    """After `with_run`: a run that has no report yet answers the JSON 404 naming its status."""

    @wraps(view)
    def wrapper(request, run, *args, **kwargs):
        if run.report is None:
            return error(f"the run has no report yet (status: {run.status})", 404, run_status=run.status)
        return view(request, run, *args, **kwargs)

    return wrapper


class _JsonWhateverIsAccepted(BaseContentNegotiation):
    """The first renderer (JSON) for every request: a file view's errors need no negotiation."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def any_accept(view):
    """Directly under @api_view, for a view that answers a file: a client whose Accept header asks for
    that file's type (`Accept: application/pdf`) gets it, and its errors as JSON, not DRF's 406."""
    view.content_negotiation_class = _JsonWhateverIsAccepted
    return view
