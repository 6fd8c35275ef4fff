"""The one error every service raises for a request it refuses.

The API turns it into `{"error": message, **extra}` with `status` (workspaces.api.errors);
a page shows its `message`. It lives in the bottom app so every app can raise it.
"""


class ApplicationError(Exception):
    """A refused request: `message` for the client, `status` the HTTP status, `extra` more JSON fields."""

    def __init__(self, message: str, status: int = 400, **extra):
        super().__init__(message)
        self.message = message
        self.status = status
        self.extra = extra
