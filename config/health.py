"""GET /healthz for a load balancer: the database, Redis and file storage, each checked.

200 `{"status": "ok", "checks": {"database": "ok", "redis": "ok", "storage": "ok"}}` when
all answer; 503 with `"status": "error"` and the failed checks' error class otherwise.

Answered by a middleware placed first, before host validation, the SSL redirect and
sessions: a load balancer probes each instance by its address over plain HTTP, so
ALLOWED_HOSTS and SECURE_SSL_REDIRECT would refuse it. No auth, no session, no cookie;
the answer names no host, path or credential.
"""

import os
from pathlib import Path

import redis
from django.conf import settings
from django.core.files.storage import FileSystemStorage, storages
from django.db import connection
from django.http import JsonResponse

PATH = "/healthz"
TIMEOUT_SECONDS = 2.0
# A key that never exists: asking for it proves the bucket (or directory) answers.
PROBE_NAME = "healthz/probe"


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_redis() -> None:
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
    )
    try:
        client.ping()
    finally:
        client.close()


def check_storage() -> None:
    storage = storages["default"]
    if isinstance(storage, FileSystemStorage):
        # Local files: the media directory (or, before the first upload, the nearest parent) is writable.
        location = Path(storage.location)
        while not location.exists():
            location = location.parent
        if not os.access(location, os.W_OK | os.X_OK):
            raise PermissionError("media directory is not writable")
        return
    bucket = getattr(storage, "bucket_name", None)
    if bucket:  # S3 (django-storages): HEAD the bucket; a missing bucket or a refused key raises
        storage.connection.meta.client.head_bucket(Bucket=bucket)
        return
    storage.exists(PROBE_NAME)  # any other backend: asking for a name that never exists


CHECKS = {"database": check_database, "redis": check_redis, "storage": check_storage}


def healthz(request) -> JsonResponse:
    results = {}
    for name, check in CHECKS.items():
        try:
            check()
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure is the answer
            results[name] = f"error: {type(exc).__name__}"
    healthy = all(result == "ok" for result in results.values())
    response = JsonResponse({"status": "ok" if healthy else "error", "checks": results}, status=200 if healthy else 503)
    response["Cache-Control"] = "no-store"
    return response


class HealthCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == PATH and request.method in ("GET", "HEAD"):
            return healthz(request)
        return self.get_response(request)
