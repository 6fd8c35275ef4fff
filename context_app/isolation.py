"""Extraction in a child process of its own, under a wall-clock and a memory limit.

A hostile file (a PDF whose pages share one heavy content stream, a DOCX that
unpacks to gigabytes, a regex a reader did not foresee) can burn CPU inside one
library call, where no budget check runs, or grow the process by gigabytes. So
the worker never extracts in its own process: it starts
`python -m context_app.isolation`, which sets RLIMIT_AS on itself, reads the
request and the file's bytes from stdin and writes the document (text and
spans) as JSON to stdout. The worker kills it at the wall-clock limit.

A subprocess, not multiprocessing: a Celery prefork pool child is daemonic, and
daemonic processes may not start multiprocessing children. The child imports
only context_app.extraction (no Django), so it starts in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys

from .extraction import ExtractedDocument, ExtractionError, ExtractionLimits, Span, extract_document

# Room on top of the wall-clock limit for the interpreter to start and the answer to be read.
STARTUP_SECONDS = 5.0


def extract_in_child(
    data: bytes, filename: str, declared_mime: str | None, limits: ExtractionLimits
) -> ExtractedDocument:
    """extract_document(…) in a child process; every way the child can fail is an ExtractionError."""
    request = {"filename": filename, "declared_mime": declared_mime, "limits": limits.__dict__}
    child = subprocess.Popen(
        [sys.executable, "-m", "context_app.isolation"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        start_new_session=True,  # a Ctrl-C of the worker's terminal is the worker's to handle
    )
    try:
        output, errors = child.communicate(json.dumps(request).encode() + b"\n" + data, timeout=_wall_clock(limits))
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise limits.timeout_error() from None
    except BaseException:
        child.kill()
        child.communicate()
        raise
    if child.returncode == -signal.SIGXCPU:
        raise limits.timeout_error()
    if child.returncode != 0:
        if child.returncode == -signal.SIGKILL or b"MemoryError" in errors:
            raise limits.memory_error()  # killed for memory (the kernel's OOM killer) or out of address space
        tail = errors.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
        raise ExtractionError("corrupt", f"could not extract text: the extractor failed ({tail[0][:200]})")
    try:
        answer = json.loads(output)
    except ValueError:
        raise ExtractionError("corrupt", "could not extract text: the extractor's answer was cut short") from None
    return _document_from_json(answer)


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
    )


def _document_as_json(document: ExtractedDocument) -> dict:
    return {
        "format": document.format,
        "mime_type": document.mime_type,
        "text": document.text,
        "spans": [span.as_dict() for span in document.spans],
        "page_count": document.page_count,
        "truncated": document.truncated,
    }


def main() -> None:
    """The child: limits first, then one extraction, its answer on stdout."""
    request = json.loads(sys.stdin.buffer.readline())
    limits = ExtractionLimits(**request["limits"])
    if limits.memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    # The CPU limit backs up the parent's wall-clock kill should the parent itself be gone.
    cpu_seconds = int(_wall_clock(limits)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    try:
        data = sys.stdin.buffer.read()
        document = extract_document(data, request["filename"], request["declared_mime"], limits)
        answer = {"document": _document_as_json(document)}
    except ExtractionError as exc:
        answer = {"error": {"code": exc.code, "message": exc.message}}
    except MemoryError:
        answer = {"error": {"code": "too_large", "message": limits.memory_error().message}}
    # ASCII JSON: a lone surrogate from a JSON file's "\ud800" survives the pipe.
    sys.stdout.buffer.write(json.dumps(answer).encode("ascii"))


if __name__ == "__main__":
    main()
