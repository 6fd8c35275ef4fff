"""The run loader for run views; the other decorators are every app's (workspaces.api.decorators)."""

from functools import wraps

from workspaces.api.errors import error

from ..selectors import visible_run


def with_run(view):
    """Loads the run named by `rid` for the members of its session's team; everyone else gets 404."""

    @wraps(view)
    def wrapper(request, rid, *args, **kwargs):
        run = visible_run(request.user, rid)
        if run is None:
            return error("run not found", 404)
        return view(request, run, *args, **kwargs)

    return wrapper
