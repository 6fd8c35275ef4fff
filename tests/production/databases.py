"""Which database the suite runs on: SQLite (the embedded default) or a PostgreSQL of its own.

`GROUNDWORK_TEST_DATABASE=postgres pytest …` (the second part of `make test`) starts a
throwaway cluster (tests/production/postgres_server.py) before pytest-django creates
the test database, and points the `default` alias at it.
"""

import os

import environ

_server = None


def wants_postgres() -> bool:
    return os.environ.get("GROUNDWORK_TEST_DATABASE", "sqlite") == "postgres"


def use_postgres_if_asked(settings) -> None:
    global _server
    if not wants_postgres():
        return
    from django.db import connections

    from tests.production.postgres_server import PostgresServer

    _server = PostgresServer()
    settings.DATABASES = {"default": environ.Env.db_url_config(_server.url)}
    # The connection handler read settings.DATABASES when Django set up (no connection was
    # opened: pytest-django blocks the database until a test asks): read them again.
    for wrapper in connections.all(initialized_only=True):
        wrapper.close()
        del connections[wrapper.alias]
    connections.__dict__.pop("settings", None)
    connections._settings = None


def stop() -> None:
    if _server is not None:
        _server.stop()


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL for another process (daphne, a Celery worker) that opens the test database."""
    if settings_dict["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{settings_dict['NAME']}"
    user, password = settings_dict.get("USER") or "", settings_dict.get("PASSWORD") or ""
    credentials = f"{user}:{password}@" if password else f"{user}@" if user else ""
    return f"postgres://{credentials}{settings_dict['HOST']}:{settings_dict['PORT']}/{settings_dict['NAME']}"
