"""Fixtures of the production path: S3 (moto in server mode), PostgreSQL-only tests."""

import pytest

from tests.production import databases
from tests.production.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Server


@pytest.fixture(scope="session")
def s3_server():
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(s3_server, settings, tmp_path):
    """STORAGE_BACKEND=s3 for this test, on a new bucket of the suite's S3 server.

    Local media goes to an empty directory, so a test can show nothing was written there.
    """
    bucket = s3_server.new_bucket()
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.STORAGE_BACKEND = "s3"
    settings.AWS_STORAGE_BUCKET_NAME = bucket
    settings.AWS_S3_ENDPOINT_URL = s3_server.url
    settings.AWS_S3_REGION_NAME = REGION
    settings.AWS_S3_ACCESS_KEY_ID = ACCESS_KEY
    settings.AWS_S3_SECRET_ACCESS_KEY = SECRET_KEY
    # Last: changing STORAGES drops the storage instances Django built from the old settings.
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage"}}
    return bucket


@pytest.fixture
def postgres_only():
    if not databases.wants_postgres():
        pytest.skip("runs on PostgreSQL: the second part of `make test` (GROUNDWORK_TEST_DATABASE=postgres)")
