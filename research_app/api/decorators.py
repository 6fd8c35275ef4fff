"""The run loaders for run views; the other decorators are every app's (workspaces.api.decorators)."""

from functools import wraps

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
