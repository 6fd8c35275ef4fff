"""`make run`'s beat keeps its schedule in GROUNDWORK_VAR_DIR.

A newcomer's `GROUNDWORK_VAR_DIR=/tmp/… make run` in a fresh checkout (no var/ in it) once had
beat exit at start ("No such file or directory: 'var/celerybeat-schedule.dat'") and restart
every second: the Procfile named a path relative to where the run started.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.one_database  # no database: the Procfile's beat and the var dir
def test_beat_started_outside_the_checkout_keeps_its_schedule_in_the_var_dir(tmp_path, redis_url):
    procfile = dict(line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    var_dir, elsewhere = tmp_path / "var", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ,
        "GROUNDWORK_VAR_DIR": str(var_dir),
        "REDIS_URL": redis_url,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    beat = subprocess.Popen(
        ["bash", "-c", f"exec {procfile['beat']}"],
        cwd=elsewhere,  # no var/ here
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(var_dir.glob("celerybeat-schedule*")) and beat.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert beat.poll() is None, beat.stdout.read().decode()[-2000:]
        assert list(var_dir.glob("celerybeat-schedule*")), "beat keeps its schedule in the var dir"
        assert not (elsewhere / "var").exists()
    finally:
        beat.terminate()
        beat.wait(timeout=30)
