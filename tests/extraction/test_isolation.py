"""The extraction child (extraction/isolation.py): each extraction starts the next one's child, and a
child no extraction took ends with the process that started it, however that process ends."""

import subprocess
import sys
import time
from pathlib import Path

from extraction import ExtractionLimits, isolation

ROOT = Path(__file__).resolve().parents[2]


def extract(text: bytes):
    return isolation.extract_in_child(text, "site.txt", "text/plain", ExtractionLimits())


def test_an_extraction_runs_in_the_child_the_one_before_it_started():
    assert "pumps" in extract(b"Site 1 replaced 4 pumps.\n").text
    spare = isolation._Spare.child
    assert spare is not None and spare.poll() is None, "started for the next file, waiting on its stdin"
    assert "valves" in extract(b"Site 2 replaced 9 valves.\n").text
    assert spare.wait(timeout=10) == 0, "the spare did the second extraction and ended"
    assert isolation._Spare.child is not spare and isolation._Spare.child.poll() is None


def test_a_spare_ends_when_its_worker_is_killed_before_using_it():
    """os._exit skips every clean-up, as kill -9 of a worker does: the spare reads the end of its stdin
    and exits, no process is left behind."""
    script = (
        "import os, sys\n"
        "from extraction import isolation\n"
        "from extraction import ExtractionLimits\n"
        "isolation.extract_in_child(b'a line', 'a.txt', 'text/plain', ExtractionLimits())\n"
        "print(isolation._Spare.child.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    spare = int(done.stdout.strip())
    deadline = time.monotonic() + 10
    while _alive(spare) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(spare)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended and not yet reaped by init, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_child_loads_no_stemmer_and_no_mail_parser_before_it_reads():
    """Every file is read in a child of its own, so what `import extraction` loads is paid once a file: loading
    the stemmer (llm_platform.terms) and the e-mail package made a thousand text files' parse 50 s longer."""
    script = "import sys, extraction; print(sorted(m for m in ('snowballstemmer', 'email.parser') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr
