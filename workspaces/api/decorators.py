"""Small decorators so each API view body holds only its action; every app's API uses this one set.

Order on a view: @api_view (auth) → @limit_upload_size → @idempotent → @with_session → @with_revision
→ @with_body. A refusal is returned, not raised, so @idempotent stores it and replays it.
"""

import hashlib
import re
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.template.defaultfilters import filesizeformat
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from .. import idempotency
from ..selectors import visible_session
from . import bodies
from .errors import error

MUTATING_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
_IF_MATCH = re.compile(r'^\s*(?:W/)?"?(\d+)"?\s*$')


def loading(url_kwarg: str, find: Callable[[Any, Any], Any], not_found: str):
    """A decorator that passes the object `find(user, <the URL's url_kwarg>)` gives in place of
    the id, and answers 404 with `not_found` when it gives None (not there, or not this user's)."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            found = find(request.user, kwargs.pop(url_kwarg))
            if found is None:
                return error(not_found, 404)
            return view(request, found, *args, **kwargs)

        return wrapper

    return decorate


# Loads the session named by `sid` for its members; everyone else gets 404.
with_session = loading("sid", visible_session, "session not found")


def with_session_id(view):
    """Loads the session the query (GET) or the body names as `session_id`, for its members; else 404."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        data = request.query_params if request.method == "GET" else request.data
        session_id = data.get("session_id") if isinstance(data, Mapping) else None
        session = visible_session(request.user, session_id) if session_id else None
        if session is None:
            return error("session not found", 404)
        return view(request, session, *args, **kwargs)

    return wrapper


def with_body(body_class: type[bodies.Body], methods=("POST", "PUT", "PATCH")):
    """Checks the body of `methods` with `body_class` and passes its values as `body`; else a 400."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in methods:
                return view(request, *args, **kwargs)
            body, message = bodies.check(body_class, request.data)
            if message is not None:
                return error(message, 400)
            return view(request, *args, body=body, **kwargs)

        return wrapper

    return decorate


def expected_revision(request) -> int | None:
    """`If-Match: "<revision>"`; absent (or `*`) means the current revision."""
    raw = request.headers.get("If-Match", "").strip()
    if raw in ("", "*"):
        return None
    match = _IF_MATCH.match(raw)
    if match is None:
        raise ValueError(f'If-Match must be a revision like "3", got {raw!r}')
    return int(match.group(1))


def with_revision(view):
    """Passes `expected_revision` from If-Match; a malformed header is a 400."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            revision = expected_revision(request)
        except ValueError as exc:
            return error(str(exc), 400)
        return view(request, *args, expected_revision=revision, **kwargs)

    return wrapper


def oversized_upload_message(length: int, limit: int) -> str:
    return f"the upload is {filesizeformat(length)}; the limit is {filesizeformat(limit)}"


def limit_upload_size(view):
    """The 413 for a body over the limit. Under daphne, config/request_limits.py answers it before the body
    is read; this check is for the other ways in (WSGI, the test client)."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        limit = settings.GROUNDWORK_MAX_UPLOAD_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return error(oversized_upload_message(length, limit), 413, limit_bytes=limit)
        return view(request, *args, **kwargs)

    return wrapper


def idempotent(view):
    """Requires Idempotency-Key on mutations and replays/refuses repeats (see workspaces.idempotency)."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method not in MUTATING_METHODS:
            return view(request, *args, **kwargs)
        key = (request.headers.get("Idempotency-Key") or _form_idempotency_key(request)).strip()
        if not key:
            return error("Idempotency-Key header is required for this request", 400)
        if len(key) > 255:
            return error("Idempotency-Key is longer than 255 characters", 400)
        claim = idempotency.claim_key(request.user, key, _fingerprint(request))
        if claim.conflict == "mismatch":
            return error("Idempotency-Key was already used for a different request", 422)
        if claim.conflict == "in_flight":
            return error("a request with this Idempotency-Key is still in progress", 409)
        if claim.replay is not None:
            return _replayed(claim.replay)
        try:
            response = _as_bytes(view(request, *args, **kwargs))
        except BaseException:
            idempotency.abandon(claim.record)
            raise
        idempotency.complete(claim.record, response.status_code, response.content, dict(response.items()))
        return response

    return wrapper


def _form_idempotency_key(request) -> str:
    """The key a page's form carries as a field (workspaces.templatetags.forms), posted without script
    (DRF's POST holds a form's fields, and nothing for a JSON body)."""
    return request.POST.get("idempotency_key", "")


def _fingerprint(request) -> str:
    files = [
        (field, upload.name, _content_digest(upload))
        for field in sorted(request.FILES)
        for upload in request.FILES.getlist(field)
    ]
    data = request.data
    if not isinstance(data, Mapping):  # a JSON list or bare value: the view refuses it, 400; never a 500 here
        fields = {"": data}
    else:
        fields = {
            name: data.getlist(name) if hasattr(data, "getlist") else data[name]
            for name in data
            if name not in request.FILES
        }
    return idempotency.request_fingerprint(
        request.method, request.path, request.headers.get("If-Match", ""), fields, files
    )


def _content_digest(upload) -> bytes:
    """SHA-256 of an uploaded file, read in chunks: a 50 MB upload is never held in memory."""
    digest = hashlib.sha256()
    upload.seek(0)
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.digest()


def _as_bytes(response) -> HttpResponse:
    """Render once, so the stored body and the first answer are the same bytes."""
    if isinstance(response, Response):
        rendered = HttpResponse(
            JSONRenderer().render(response.data), status=response.status_code, content_type="application/json"
        )
        for name, value in response.items():
            if name.lower() != "content-type":
                rendered[name] = value
        return rendered
    return response


def _replayed(record) -> HttpResponse:
    response = HttpResponse(bytes(record.response_body or b""), status=record.response_status)
    for name, value in record.response_headers.items():
        response[name] = value
    response[idempotency.REPLAYED_HEADER] = "true"
    return response
