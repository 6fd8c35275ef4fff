"""Production settings from the environment, and /healthz for a load balancer.

`manage.py check --deploy` runs in a subprocess with the environment README's
"Running in production" gives, and must print no warning; without SECRET_KEY and
with DEBUG off the product refuses to start; `make run`'s DEBUG=1 still starts.
"""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent

PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "groundwork.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://groundwork.example.com",
    "HTTPS": "1",
    "TRUST_X_FORWARDED_PROTO": "1",
    "DATABASE_URL": "postgres://groundwork:secret@db.internal:5432/groundwork",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "STORAGE_BACKEND": "s3",
    "AWS_STORAGE_BUCKET_NAME": "groundwork-files",
    "AWS_S3_REGION_NAME": "eu-central-1",
}
# What the suite's own process sets, which a fresh production process would not have.
SUITE_ONLY = ("SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "STORAGE_BACKEND", "HTTPS")


def manage(*args: str, env: dict, tmp_path) -> subprocess.CompletedProcess:
    base = {key: value for key, value in os.environ.items() if key not in SUITE_ONLY}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", "GROUNDWORK_VAR_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_prints_nothing_with_the_production_env(tmp_path):
    result = manage("check", "--deploy", env=PRODUCTION_ENV, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "System check identified no issues (0 silenced).\n"
    assert result.stderr == ""


def test_debug_off_and_a_key_alone_are_secure_by_default(tmp_path):
    result = manage("check", "--deploy", env={"DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50)}, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "System check identified no issues (0 silenced).\n"
    assert result.stderr == ""


def test_plain_http_is_an_explicit_opt_out_that_check_deploy_warns_about(tmp_path):
    env = {**PRODUCTION_ENV, "HTTPS": "0"}
    result = manage("check", "--deploy", "--fail-level", "ERROR", env=env, tmp_path=tmp_path)
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr, result.stderr


@pytest.mark.parametrize("secret_key", [None, "", "groundwork-insecure-dev-key-change-me"])
def test_debug_off_without_a_secret_key_refuses_to_start(tmp_path, secret_key):
    env = {key: value for key, value in PRODUCTION_ENV.items() if key != "SECRET_KEY"}
    if secret_key is not None:
        env["SECRET_KEY"] = secret_key
    result = manage("check", env=env, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr and "DEBUG=1" in result.stderr


def test_the_key_make_run_writes_lets_manage_py_run_in_another_shell(tmp_path):
    # `make run` wrote var/secret_key; a fresh shell has neither DEBUG nor SECRET_KEY.
    (tmp_path / "secret_key").write_text(secrets.token_urlsafe(50) + "\n")
    result = manage("check", env={}, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr


def test_make_runs_debug_mode_starts_with_no_other_env(tmp_path):
    # `make run` on a fresh machine: DEBUG=1 from the Makefile and nothing else.
    result = manage("check", env={"DEBUG": "1"}, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


# --- /healthz ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_answers_200_when_all_is_well(client, settings):
    # A load balancer probes the instance by address over plain HTTP.
    settings.ALLOWED_HOSTS = ["groundwork.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST="10.0.3.7:8000")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok", "storage": "ok"}}
    assert response["Cache-Control"] == "no-store"
    assert not response.cookies, "no session, no CSRF cookie"
    assert client.head("/healthz", HTTP_HOST="10.0.3.7:8000").status_code == 200


@pytest.mark.django_db
def test_healthz_answers_503_naming_what_failed(client, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["database"] == "ok" and body["checks"]["storage"] == "ok"
    assert body["checks"]["redis"].startswith("error: ") and "127.0.0.1" not in body["checks"]["redis"]


def test_healthz_reports_a_database_it_cannot_reach(client, settings, monkeypatch):
    from config import health

    def unreachable():
        raise ConnectionError("database down")

    monkeypatch.setitem(health.CHECKS, "database", unreachable)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"] == {"database": "error: ConnectionError", "redis": "ok", "storage": "ok"}
