"""The run loader for run views; the other decorators are every app's (workspaces.api.decorators)."""

from workspaces.api.decorators import loading

from ..selectors import visible_run

# Loads the run named by `rid` for the members of its session's team; everyone else gets 404.
with_run = loading("rid", visible_run, "run not found")
