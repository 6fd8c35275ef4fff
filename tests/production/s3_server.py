"""A real S3-compatible server on loopback for the test session: moto in server mode.

Its own process (`python -m moto.server`), so the test process, its worker threads and
separate Celery worker processes all reach it over HTTP like they would reach S3.
"""

import subprocess
import sys
import time
import urllib.request
import uuid

from tests.redis_server import free_port

ACCESS_KEY = "groundwork-test"
SECRET_KEY = "groundwork-test-secret"
REGION = "us-east-1"


class S3Server:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("moto server exited at start")
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1)
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto server did not start within 30 s") from None
                time.sleep(0.1)

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )

    def new_bucket(self) -> str:
        name = f"groundwork-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def env(self, bucket: str) -> dict:
        """What a process of the product needs in its environment to store files in `bucket`."""
        return {
            "STORAGE_BACKEND": "s3",
            "AWS_STORAGE_BUCKET_NAME": bucket,
            "AWS_S3_ENDPOINT_URL": self.url,
            "AWS_S3_REGION_NAME": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        }

    def keys(self, bucket: str) -> dict[str, bytes]:
        client = self.client()
        listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
        return {item["Key"]: client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read() for item in listed}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def use_bucket(settings, s3_server: S3Server, bucket: str) -> str:
    """Point this process's default storage at `bucket` (through the pytest-django `settings` fixture)."""
    settings.STORAGE_BACKEND = "s3"
    settings.AWS_STORAGE_BUCKET_NAME = bucket
    settings.AWS_S3_ENDPOINT_URL = s3_server.url
    settings.AWS_S3_REGION_NAME = REGION
    settings.AWS_S3_ACCESS_KEY_ID = ACCESS_KEY
    settings.AWS_S3_SECRET_ACCESS_KEY = SECRET_KEY
    # Last: changing STORAGES drops the storage instances Django built from the old settings.
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage"}}
    return bucket
