"""Fixtures of the production path: S3 (moto in server mode on loopback)."""

import pytest

from tests.production.s3_server import S3Server, use_bucket


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
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return use_bucket(settings, s3_server, s3_server.new_bucket())
