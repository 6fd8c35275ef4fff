"""daphne serving the real ASGI app (HTTP + websockets) on the test database, for browser tests."""

import os
import subprocess
import sys
import time
import urllib.request

from tests.redis_server import free_port

UPLOAD_LIMIT_BYTES = 8 * 1024 * 1024


class LiveServer:
    def __init__(self, database_url: str, redis_url: str, log_path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "GROUNDWORK_LLM": "offline",
            "ANTHROPIC_API_KEY": "",
            # Low enough that a browser test can cross it quickly.
            "GROUNDWORK_MAX_UPLOAD_BYTES": str(UPLOAD_LIMIT_BYTES),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "config.asgi:application"],
            env=env,
            stdout=open(log_path, "ab"),  # noqa: SIM115 - kept open for the server's lifetime
            stderr=subprocess.STDOUT,
        )
        self.log_path = log_path
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited; see {self.log_path}")
            try:
                urllib.request.urlopen(f"{self.url}/accounts/login/", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("daphne did not start within 30 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
