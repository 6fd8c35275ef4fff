"""The real stack for tests: a redis-server of our own, a Celery worker, Channels over Redis."""

import pytest

from tests.redis_server import RedisServer

_redis: RedisServer | None = None


def pytest_configure(config):
    global _redis
    from django.conf import settings

    _redis = RedisServer()
    settings.REDIS_URL = _redis.url
    settings.CELERY_BROKER_URL = _redis.url
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [_redis.url]}}
    }
    settings.GROUNDWORK_LLM = "offline"
    settings.GROUNDWORK_LLM_BACKOFF_SECONDS = 0.01
    from config.celery import app

    app.conf.broker_url = _redis.url


def pytest_unconfigure(config):
    if _redis is not None:
        _redis.stop()


@pytest.fixture(scope="session")
def redis_url():
    return _redis.url


@pytest.fixture(scope="session")
def celery_worker_thread(django_db_setup, django_db_blocker):
    """A real Celery worker (threads pool, 2 at a time) consuming from our Redis."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    with django_db_blocker.unblock():
        with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30) as worker:
            yield worker


from tests.fake_anthropic import fake_anthropic  # noqa: E402,F401  (fixture)
