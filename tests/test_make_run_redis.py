"""`make run`'s Redis: the one answering at REDIS_URL, else one it starts on that URL's own port.

A newcomer's REDIS_URL on another port once got a redis-server on 6379 and workers that never
connected (bin/redis-procfile-line decides the Procfile's redis line).
"""

import socket
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bin" / "redis-procfile-line"


def procfile_line(url: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, url], capture_output=True, text=True, timeout=30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_redis_answering_at_the_url_is_used_as_it_is(redis_url):
    answer = procfile_line(redis_url)
    assert (answer.returncode, answer.stdout) == (0, "")


def test_a_loopback_url_nobody_answers_gets_a_redis_on_its_own_port_and_password():
    port = free_port()
    answer = procfile_line(f"redis://:s3cret@localhost:{port}/2")
    assert answer.returncode == 0
    name, _, command = answer.stdout.strip().partition(": ")
    assert name == "redis"
    assert f"--port {port} " in command and command.endswith("--requirepass s3cret")
    assert "--bind 127.0.0.1" in command


def test_a_redis_elsewhere_that_does_not_answer_stops_make_run_saying_so():
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): never a host, and no name to resolve where DNS may not answer.
    answer = procfile_line("redis://192.0.2.1:6379/0")
    assert answer.returncode == 1
    assert answer.stdout == ""
    assert "no Redis answers at REDIS_URL=redis://192.0.2.1:6379/0" in answer.stderr
