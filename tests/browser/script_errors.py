"""The uncaught script errors of the current browser test's pages (login() listens for them)."""

SCRIPT_ERRORS: list[str] = []
