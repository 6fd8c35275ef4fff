"""A small fake of Anthropic's Messages API on loopback, for the real SDK to talk to.

By default it answers like a competent model: it runs the offline digest handlers
on the request it received. Scripted behaviours, consumed one per request, make it
fail in the ways real services do (("status", 429, {"retry-after": "1"}) sends headers too).

Prompt caching as the API bills it: a prefix that ends in a `cache_control` block
(system blocks first, then the messages' blocks) is written to the cache the first
time (`cache_creation_input_tokens`) and read from it when a later request repeats
it (`cache_read_input_tokens`); `input_tokens` is the rest. Tokens are bytes / 4.

Message Batches: POST /v1/messages/batches takes the requests; a batch is
`in_progress` for `batch_polls_before_end` retrievals, then `ended`, answered
(scripted behaviours included) and its results served as JSON lines.
"""

import json
import re
import threading
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llm_platform.base import LLMRequest, ProviderError
from llm_platform.gateway import reset_providers
from llm_platform.offline import OfflineProvider
from llm_platform.task_envelope import task_name

API_KEY = "test-key"
BATCH_PATH = re.compile(r"^/v1/messages/batches/([\w-]+)(/results)?$")
STREAM_PIECE = re.compile(r".+?(?:[.!?] |$)", re.S)  # a streamed answer arrives a sentence at a time


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.behaviours: deque = deque()
        self.failing_markers: dict[str, int] = {}  # prompt substring → HTTP status, until cleared
        self.cached_prefixes: set[str] = set()  # prompt caching: prefixes written to the cache
        self.batches: dict[str, dict] = {}
        self.min_cacheable_tokens = 0  # shorter prefixes are not cached (the API's minimum: 1024 for Sonnet)
        self.batch_polls_before_end = 1  # retrievals that still read `in_progress`
        self.slow_tasks: dict[str, float] = {}  # TASK name → seconds every request of it waits, until cleared
        self.lock = threading.Lock()
        self.streamed = 0  # answers sent as server-sent events (the request asked for `stream: true`)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval: shutdown() waits for it at every test's teardown.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def script(self, *behaviours: tuple) -> None:
        with self.lock:
            self.behaviours.extend(behaviours)

    def fail_when(self, marker: str, status: int) -> None:
        """Every request whose prompt contains `marker` fails, whatever the order of requests."""
        with self.lock:
            self.failing_markers[marker] = status

    def slow_down(self, task: str, seconds: float) -> None:
        """Every request of `task` (e.g. "PER_FILE_DIGEST") answers `seconds` late: a call stays in flight."""
        with self.lock:
            self.slow_tasks[task] = seconds

    def clear_slow_tasks(self) -> None:
        with self.lock:
            self.slow_tasks.clear()

    def clear_failures(self) -> None:
        with self.lock:
            self.failing_markers.clear()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def message_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"] == "/v1/messages"]

    def batch_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"] == "/v1/messages/batches"]

    def _record(self, handler: BaseHTTPRequestHandler, body: dict | None) -> None:
        with self.lock:
            self.requests.append(
                {
                    "path": handler.path,
                    "method": handler.command,
                    "headers": {k.lower(): v for k, v in handler.headers.items()},
                    "body": body,
                    "at": time.monotonic(),
                }
            )

    def answer(self, body: dict) -> tuple[int, dict, dict | None]:
        """(status, payload, headers) of a Messages API request: its scripted behaviour, else the offline answer."""
        prompt = json.dumps(body.get("messages", []))
        with self.lock:
            failing = [status for marker, status in self.failing_markers.items() if marker in prompt]
        behaviour = ("status", failing[0]) if failing else self._next_behaviour()
        kind = behaviour[0]
        if kind == "delay":  # ("delay", seconds): answer late, past a short client timeout
            time.sleep(behaviour[1])
            kind = "answer"
        if kind == "status":  # ("status", 429) or ("status", 429, {"retry-after": "2"}): headers too
            kinds = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}
            headers = behaviour[2] if len(behaviour) > 2 else {}
            return behaviour[1], error_body(kinds.get(behaviour[1], "api_error"), "scripted failure"), headers
        if kind == "text":
            return 200, self._message(body, behaviour[1]), None
        if kind == "invalid_json":
            return 200, self._message(body, "Sure! Here is the digest: {this is not json"), None
        try:
            answer = json.loads(_offline_answer(body))
        except ProviderError as exc:  # e.g. a TASK the offline handlers don't know
            return 400, error_body("invalid_request_error", str(exc)), None
        if kind == "rewrite":  # ("rewrite", task, fn): fn(answer) -> answer, for that TASK only
            if task_name(text_of(body["messages"][0]["content"])) == behaviour[1]:
                answer = behaviour[2](answer)
            else:
                with self.lock:
                    self.behaviours.appendleft(behaviour)  # not its task yet: keep it for later
        if kind == "invent_sources":
            for fact in answer["facts"]:
                fact["sources"].append("ghost.pdf::S999")
            answer["facts"].append(
                {
                    "id": "F999",
                    "kind": "fact",
                    "claim": "Invented claim.",
                    "sources": [answer["document"]["filename"] + "::S4242"],
                }
            )
        return 200, self._message(body, json.dumps(answer)), None

    def _message(self, request_body: dict, text: str) -> dict:
        total = len(json.dumps(request_body)) // 4
        cache_read, cache_creation = self._cache(request_body)
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": request_body.get("model"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(0, total - cache_read - cache_creation),
                "output_tokens": len(text) // 4,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_creation,
            },
        }

    def _cache(self, body: dict) -> tuple[int, int]:
        """(read, written) tokens: the longest marked prefix seen before is read, the longest marked one written."""
        blocks = [*_blocks(body.get("system")), *(b for m in body.get("messages", []) for b in _blocks(m["content"]))]
        marked = [
            json.dumps([body.get("model"), blocks[: i + 1]]) for i, block in enumerate(blocks) if "cache_control" in block
        ]
        prefixes = [p for p in marked if len(p) // 4 >= self.min_cacheable_tokens]
        with self.lock:
            read = max((len(p) // 4 for p in prefixes if p in self.cached_prefixes), default=0)
            written = max((len(p) // 4 for p in prefixes if p not in self.cached_prefixes), default=0)
            self.cached_prefixes.update(prefixes)
        return read, max(0, written - read)

    def _create_batch(self, requests: list[dict]) -> dict:
        with self.lock:
            batch_id = f"msgbatch_fake{len(self.batches) + 1}"
            self.batches[batch_id] = {"requests": requests, "polls": 0, "results": None}
        return self._batch_object(batch_id)

    def _poll_batch(self, batch_id: str) -> dict:
        batch = self.batches[batch_id]
        batch["polls"] += 1
        if batch["results"] is None and batch["polls"] > self.batch_polls_before_end:
            batch["results"] = [self._batch_result(r) for r in batch["requests"]]
        return self._batch_object(batch_id)

    def _batch_result(self, request: dict) -> dict:
        status, payload, _headers = self.answer(request["params"])
        if status == 200:
            return {"custom_id": request["custom_id"], "result": {"type": "succeeded", "message": payload}}
        return {"custom_id": request["custom_id"], "result": {"type": "errored", "error": payload}}

    def _batch_object(self, batch_id: str) -> dict:
        batch = self.batches[batch_id]
        ended = batch["results"] is not None
        created = datetime(2026, 11, 24, tzinfo=UTC)
        succeeded = sum(r["result"]["type"] == "succeeded" for r in batch["results"] or [])
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else len(batch["requests"]),
                "succeeded": succeeded,
                "errored": len(batch["results"] or []) - succeeded,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": created.isoformat(),
            "expires_at": (created + timedelta(days=1)).isoformat(),
            "ended_at": created.isoformat() if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _next_behaviour(self) -> tuple:
        with self.lock:
            return self.behaviours.popleft() if self.behaviours else ("answer",)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                fake._record(self, body)
                if api_key_of(self.headers) != API_KEY:
                    return self._error(401, "authentication_error", "invalid API key")
                if self.path == "/v1/messages/count_tokens":
                    return self._json(200, {"input_tokens": len(json.dumps(body)) // 4})
                if self.path == "/v1/messages/batches":
                    return self._json(200, fake._create_batch(body["requests"]))
                if self.path != "/v1/messages":
                    return self._error(404, "not_found_error", f"no route {self.path}")
                with fake.lock:
                    slow = fake.slow_tasks.get(task_name(prompt_text(body)), 0) if fake.slow_tasks else 0
                if slow:
                    time.sleep(slow)
                status, payload, headers = fake.answer(body)
                if status == 200 and body.get("stream"):
                    return self._events(payload)
                self._json(status, payload, headers)

            def do_GET(self):
                fake._record(self, None)
                if api_key_of(self.headers) != API_KEY:
                    return self._error(401, "authentication_error", "invalid API key")
                match = BATCH_PATH.match(self.path)
                if match is None or match.group(1) not in fake.batches:
                    return self._error(404, "not_found_error", f"no route {self.path}")
                if match.group(2):  # /results: one JSON line per request
                    lines = [json.dumps(r) for r in fake.batches[match.group(1)]["results"]]
                    return self._send(200, ("\n".join(lines) + "\n").encode(), "application/x-jsonl")
                self._json(200, fake._poll_batch(match.group(1)))

            def _events(self, message: dict):
                """The message as the Messages API streams it: server-sent events, the text in pieces."""
                text = message["content"][0]["text"]
                usage = message["usage"]
                delta = {"stop_reason": "end_turn", "stop_sequence": None}
                events = [
                    {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                    *(
                        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
                        for piece in STREAM_PIECE.findall(text)
                    ),
                    {"type": "content_block_stop", "index": 0},
                    {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage["output_tokens"]}},
                    {"type": "message_stop"},
                ]
                fake.streamed += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()

            def _error(self, status: int, error_type: str, message: str, headers: dict | None = None):
                self._json(status, error_body(error_type, message), headers)

            def _json(self, status: int, payload: dict, headers: dict | None = None):
                self._send(status, json.dumps(payload).encode(), "application/json", headers)

            def _send(self, status: int, data: bytes, content_type: str, headers: dict | None = None):
                try:
                    self.send_response(status)
                    self.send_header("content-type", content_type)
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        return Handler


def api_key_of(headers) -> str | None:
    """SDK releases send the key as x-api-key or as a bearer token."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else None)


def error_body(error_type: str, message: str) -> dict:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _offline_answer(body: dict) -> str:
    prompt = text_of(body["messages"][0]["content"])
    system = text_of(body.get("system") or "")
    return OfflineProvider().complete(LLMRequest(task="fake", system=system, prompt=prompt)).text


def _blocks(content: str | list[dict] | None) -> list[dict]:
    if not content:
        return []
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def prompt_text(body: dict) -> str:
    """The text of a Messages request's first message ("" without one)."""
    messages = body.get("messages") or [{"content": ""}]
    return text_of(messages[0]["content"])


def text_of(content: str | list[dict]) -> str:
    """The text of a message or system prompt: a plain string, or its text blocks (which join with nothing
    between them: the adapter splits an envelope's text into a cacheable context and the task)."""
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block.get("type") == "text")


@pytest.fixture
def fake_anthropic(settings):
    server = FakeAnthropic()
    settings.ANTHROPIC_API_KEY = API_KEY
    settings.ANTHROPIC_BASE_URL = server.url
    settings.GROUNDWORK_LLM = "anthropic"
    settings.GROUNDWORK_ANTHROPIC_MODEL = "claude-test-model"
    settings.GROUNDWORK_LLM_BACKOFF_SECONDS = 0.01
    reset_providers()
    yield server
    reset_providers()
    server.stop()
