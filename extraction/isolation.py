"""Extraction in a child process of its own, under a wall-clock and a memory limit.

A hostile file (a PDF whose pages share one heavy content stream, a DOCX that
unpacks to gigabytes, a regex a reader did not foresee) can burn CPU inside one
library call, where no budget check runs, or grow the process by gigabytes. So
the worker never extracts in its own process: it starts
`python -m extraction.isolation`, which sets RLIMIT_AS on itself, reads the
request and the file's bytes from stdin and writes the document (text and
spans) as JSON to stdout. The worker kills it at the wall-clock limit.

A scan is read by OCR a page at a time (extraction.ocr), seconds a page: the child
tells of each page on stderr ("OCR page 12/80", a line the worker shows on the
file's chip), and each such line gives it the wall-clock limit afresh, so the limit
holds for each page rather than for a long scan as a whole. Killing it kills its
process group: the `tesseract` processes it started go with it.

A subprocess, not multiprocessing: a Celery prefork pool child is daemonic, and
daemonic processes may not start multiprocessing children. The child imports
only what reading a file needs (no Django), so it starts in a tenth of a second; and
each extraction starts the next one's child (it waits on its stdin for the request),
so a worker going through many small files does not wait for that tenth each time.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from . import ExtractedDocument, ExtractionError, ExtractionLimits, Span, extract_document

# The child: this module run by the worker's own interpreter.
CHILD = (sys.executable, "-m", "extraction.isolation")
# Room on top of the wall-clock limit for the interpreter to start and the answer to be read.
STARTUP_SECONDS = 5.0
# A line on the child's stderr that starts with this is news of a long read ("OCR page 12/80"):
# the wall clock starts again (each page read by OCR has the limit to itself) and the worker
# shows it on the file's chip.
PROGRESS = b"\x1egroundwork-progress "
# The child's other stderr (a traceback's last line names what failed) is kept up to this much.
STDERR_KEPT = 64 * 1024


def extract_in_child(
    data: bytes,
    filename: str,
    declared_mime: str | None,
    limits: ExtractionLimits,
    on_progress: Callable[[str], None] | None = None,
) -> ExtractedDocument:
    """extract_document(…) in a child process; every way the child can fail is an ExtractionError.

    The child is killed (with the `tesseract` processes it started: its own process group)
    GROUNDWORK_EXTRACT_SECONDS (+ STARTUP_SECONDS) after it started or last told of progress.
    """
    request = {"filename": filename, "declared_mime": declared_mime, "limits": limits.__dict__}
    child = _started_child()
    output: list[bytes] = []
    feeder = threading.Thread(target=_feed, args=(child.stdin, json.dumps(request).encode() + b"\n" + data))
    reader = threading.Thread(target=_drain, args=(child.stdout, output))
    try:
        feeder.start()
        reader.start()
        errors = _watch(child, limits, on_progress)
        child.wait(timeout=_wall_clock(limits))
        reader.join()
    except subprocess.TimeoutExpired:
        _kill(child)
        raise limits.timeout_error() from None
    except BaseException:
        _kill(child)
        raise
    finally:
        feeder.join()
        reader.join()
        child.stdout.close()
        child.stderr.close()
    if child.returncode == -signal.SIGXCPU:
        raise limits.timeout_error()
    if child.returncode != 0:
        if child.returncode == -signal.SIGKILL or b"MemoryError" in errors:
            raise limits.memory_error()  # killed for memory (the kernel's OOM killer) or out of address space
        tail = errors.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
        raise ExtractionError("corrupt", f"could not extract text: the extractor failed ({tail[0][:200]})")
    try:
        answer = json.loads(b"".join(output))
    except ValueError:
        raise ExtractionError("corrupt", "could not extract text: the extractor's answer was cut short") from None
    return _document_from_json(answer)


class _Spare:
    """The child started for this process's next extraction, with the command it runs."""

    lock = threading.Lock()
    child: subprocess.Popen | None = None
    command: tuple[str, ...] = ()
    owner = 0  # the pid that started it: a forked worker starts its own


def _started_child() -> subprocess.Popen:
    """The spare child when it is still waiting for a request (else a new one), and a new spare."""
    with _Spare.lock:
        spare, _Spare.child = _Spare.child, None
        if spare is not None and _Spare.owner != os.getpid():  # forked from its owner: the owner's to use
            for stream in (spare.stdin, spare.stdout, spare.stderr):
                stream.close()
            spare = None
        if spare is not None and (_Spare.command != CHILD or spare.poll() is not None):
            _discard(spare)
            spare = None
        child = spare or _start_child()
        _Spare.child, _Spare.command, _Spare.owner = _start_child(), CHILD, os.getpid()
    return child


def _start_child() -> subprocess.Popen:
    return subprocess.Popen(
        list(CHILD),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        start_new_session=True,  # a Ctrl-C of the worker's terminal is the worker's to handle
    )


def _discard(child: subprocess.Popen) -> None:
    """A child that was given no request (one left idle ends by itself when its worker does: see main)."""
    _kill(child)
    for stream in (child.stdin, child.stdout, child.stderr):
        stream.close()


@atexit.register
def discard_spare() -> None:
    """Kill this process's spare child, if it has one (at exit; a bench that times a cold start)."""
    with _Spare.lock:
        if _Spare.child is not None and _Spare.owner == os.getpid():
            _discard(_Spare.child)
        _Spare.child = None


def _watch(child: subprocess.Popen, limits: ExtractionLimits, on_progress) -> bytes:
    """Read the child's stderr until it closes (the child ends): progress lines move the deadline
    and go to `on_progress`; the rest is kept. Past the deadline: subprocess.TimeoutExpired."""
    errors = bytearray()
    pending = b""
    deadline = time.monotonic() + _wall_clock(limits)
    descriptor = child.stderr.fileno()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(child.args, _wall_clock(limits))
        ready, _, _ = select.select([descriptor], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(descriptor, 65536)
        if not chunk:
            return bytes(errors + pending)
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line.startswith(PROGRESS):
                deadline = time.monotonic() + _wall_clock(limits)
                if on_progress is not None:
                    on_progress(json.loads(line[len(PROGRESS) :])["label"])
            else:
                errors += line + b"\n"
                del errors[:-STDERR_KEPT]


def _feed(stdin, payload: bytes) -> None:
    try:
        stdin.write(payload)
    except (BrokenPipeError, OSError):
        pass  # the child ended early; its exit status says why
    finally:
        try:
            stdin.close()
        except (BrokenPipeError, OSError):
            pass


def _drain(stdout, output: list[bytes]) -> None:
    while chunk := stdout.read(1 << 20):
        output.append(chunk)


def _kill(child: subprocess.Popen) -> None:
    """The child and what it started (its `tesseract` processes share its process group)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _wall_clock(limits: ExtractionLimits) -> float:
    return limits.seconds + STARTUP_SECONDS


def _document_from_json(answer: dict) -> ExtractedDocument:
    if "error" in answer:
        raise ExtractionError(answer["error"]["code"], answer["error"]["message"])
    document = answer["document"]
    return ExtractedDocument(
        format=document["format"],
        mime_type=document["mime_type"],
        text=document["text"],
        spans=[Span(**span) for span in document["spans"]],
        page_count=document["page_count"],
        truncated=document["truncated"],
        notes=tuple(document.get("notes", ())),
    )


def _document_as_json(document: ExtractedDocument) -> dict:
    return {
        "format": document.format,
        "mime_type": document.mime_type,
        "text": document.text,
        "spans": [span.as_dict() for span in document.spans],
        "page_count": document.page_count,
        "truncated": document.truncated,
        "notes": list(document.notes),
    }


def main() -> None:
    """The child: limits first, then one extraction, its answer on stdout."""
    line = sys.stdin.buffer.readline()
    if not line:
        return  # a spare child its worker did not need: the worker ended, or started another command
    request = json.loads(line)
    limits = ExtractionLimits(**request["limits"])
    if limits.memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    # The CPU limit backs up the parent's wall-clock kill should the parent itself be gone;
    # like the wall clock, it moves on with each page read by OCR (the hard limit stays).
    _allow_cpu(limits)
    try:
        data = sys.stdin.buffer.read()
        document = extract_document(
            data, request["filename"], request["declared_mime"], limits, progress=lambda label: _tell(label, limits)
        )
        answer = {"document": _document_as_json(document)}
    except ExtractionError as exc:
        answer = {"error": {"code": exc.code, "message": exc.message}}
    except MemoryError:
        answer = {"error": {"code": "too_large", "message": limits.memory_error().message}}
    # ASCII JSON: a lone surrogate from a JSON file's "\ud800" survives the pipe.
    sys.stdout.buffer.write(json.dumps(answer).encode("ascii"))


def _allow_cpu(limits: ExtractionLimits) -> None:
    """CPU seconds from now: the wall-clock limit's (a process's CPU time never passes its wall time)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(used.ru_utime + used.ru_stime + _wall_clock(limits)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _tell(label: str, limits: ExtractionLimits) -> None:
    _allow_cpu(limits)
    sys.stderr.buffer.write(PROGRESS + json.dumps({"label": label}).encode("ascii") + b"\n")
    sys.stderr.buffer.flush()


if __name__ == "__main__":
    main()
