"""Requests over the upload limit are refused by their Content-Length, before the body is read.

Django's ASGI handler reads a whole body (spooled to a temporary file) before any
middleware or view runs, and the multipart parser then splits it into uploads; a
view's own check (research_app.api.decorators.limit_upload_size, kept for WSGI and
the test client) comes after both. This layer answers the same JSON 413 first.
"""

import json

from django.conf import settings

from workspaces.api.decorators import oversized_upload_message


def content_length(scope: dict) -> int:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


class RefuseOversizedBodies:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            length, limit = content_length(scope), settings.GROUNDWORK_MAX_UPLOAD_BYTES
            if length > limit:
                body = json.dumps({"error": oversized_upload_message(length, limit), "limit_bytes": limit}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 413,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
