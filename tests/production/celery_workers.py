"""Separate Celery worker processes for a test: `celery -A config worker -n <name>` each.

They consume the suite's Redis and open the test database (a DATABASE_URL to the
SQLite file or the PostgreSQL database the test process uses), with whatever
extra environment the test gives (a model server, a bucket). Each writes its own
log, from which the tasks it ran are read: the log's worker is the task's host.
"""

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SUCCEEDED = re.compile(r"Task ([\w.]+)\[([0-9a-f-]{36})\] succeeded")


@dataclass
class TaskRun:
    name: str
    task_id: str
    hostname: str


class Worker:
    def __init__(
        self, hostname: str, env: dict, log_path: Path, concurrency: int = 2, pool: str = "threads", queues: str = ""
    ) -> None:
        self.hostname = hostname
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - open for the worker's lifetime
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-n",
                hostname,
                f"--pool={pool}",
                *([f"--queues={queues}"] if queues else []),
                f"--concurrency={concurrency}",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "0", **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def tasks(self, since: int = 0) -> list[TaskRun]:
        """The tasks this worker finished, from byte `since` of its log on."""
        text = self.log_path.read_bytes()[since:].decode(errors="replace")
        seen: dict[str, TaskRun] = {}
        for match in SUCCEEDED.finditer(text):  # a line may be logged twice (Celery's and Django's handler)
            seen.setdefault(match.group(2), TaskRun(match.group(1), match.group(2), self.hostname))
        return list(seen.values())

    def kill(self) -> None:
        """kill -9 of the worker's main process (its thread pool dies with it)."""
        self.process.kill()
        self.process.wait()
        self._log.close()

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # warm shutdown: running tasks finish
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def wait_ready(app, workers: list[Worker], timeout: float = 60) -> None:
    names = {worker.hostname for worker in workers}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for worker in workers:
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker {worker.hostname} exited; see {worker.log_path}")
        answered = {name for reply in app.control.ping(timeout=0.5) for name in reply}
        if names <= answered:
            return
    raise RuntimeError(f"workers {sorted(names)} did not answer within {timeout} s")
