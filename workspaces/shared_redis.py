"""One Redis client per URL for what the processes share outside Celery (model-call limits, push pacing)."""

import redis
from django.conf import settings

_clients: dict[str, redis.Redis] = {}


def client() -> redis.Redis:
    url = settings.REDIS_URL
    if url not in _clients:
        _clients[url] = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    return _clients[url]
