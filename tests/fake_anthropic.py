"""A small fake of Anthropic's Messages API on loopback, for the real SDK to talk to.

By default it answers like a competent model: it runs the offline digest handlers
on the request it received. Scripted behaviours, consumed one per request, make it
fail in the ways real services do (("status", 429, {"retry-after": "1"}) sends headers too).
"""

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from context_app.llm.base import LLMRequest, ProviderError
from context_app.llm.gateway import reset_providers
from context_app.llm.offline import OfflineProvider
from context_app.llm.task_envelope import task_name

API_KEY = "test-key"


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.behaviours: deque = deque()
        self.failing_markers: dict[str, int] = {}  # prompt substring → HTTP status, until cleared
        self.slow_tasks: dict[str, float] = {}  # TASK name → seconds every request of it waits, until cleared
        self.lock = threading.Lock()
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
                with fake.lock:
                    fake.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                            "at": time.monotonic(),
                        }
                    )
                if api_key_of(self.headers) != API_KEY:
                    return self._error(401, "authentication_error", "invalid API key")
                if self.path == "/v1/messages/count_tokens":
                    return self._json(200, {"input_tokens": len(json.dumps(body)) // 4})
                if self.path != "/v1/messages":
                    return self._error(404, "not_found_error", f"no route {self.path}")
                prompt = json.dumps(body.get("messages", []))
                with fake.lock:
                    failing = [status for marker, status in fake.failing_markers.items() if marker in prompt]
                    slow = fake.slow_tasks.get(task_name(prompt_text(body)), 0) if fake.slow_tasks else 0
                if slow:
                    time.sleep(slow)
                behaviour = ("status", failing[0]) if failing else fake._next_behaviour()
                kind = behaviour[0]
                if kind == "delay":  # ("delay", seconds): answer late, past a short client timeout
                    time.sleep(behaviour[1])
                    kind = "answer"
                if kind == "status":  # ("status", 429) or ("status", 429, {"retry-after": "2"}): headers too
                    kinds = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}
                    headers = behaviour[2] if len(behaviour) > 2 else {}
                    return self._error(behaviour[1], kinds.get(behaviour[1], "api_error"), "scripted failure", headers)
                if kind == "text":
                    return self._message(body, behaviour[1])
                if kind == "invalid_json":
                    return self._message(body, "Sure! Here is the digest: {this is not json")
                try:
                    answer = json.loads(_offline_answer(body))
                except ProviderError as exc:  # e.g. a TASK the offline handlers don't know
                    return self._error(400, "invalid_request_error", str(exc))
                if kind == "rewrite":  # ("rewrite", task, fn): fn(answer) -> answer, for that TASK only
                    if task_name(text_of(body["messages"][0]["content"])) == behaviour[1]:
                        answer = behaviour[2](answer)
                    else:
                        with fake.lock:
                            fake.behaviours.appendleft(behaviour)  # not its task yet: keep it for later
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
                return self._message(body, json.dumps(answer))

            def _message(self, request_body: dict, text: str):
                self._json(
                    200,
                    {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": request_body.get("model"),
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": len(json.dumps(request_body)) // 4, "output_tokens": len(text) // 4},
                    },
                )

            def _error(self, status: int, error_type: str, message: str, headers: dict | None = None):
                self._json(status, {"type": "error", "error": {"type": error_type, "message": message}}, headers)

            def _json(self, status: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
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


def _offline_answer(body: dict) -> str:
    prompt = text_of(body["messages"][0]["content"])
    return OfflineProvider().complete(LLMRequest(task="fake", system=body.get("system", ""), prompt=prompt)).text


def prompt_text(body: dict) -> str:
    """The text of a Messages request's first message ("" without one)."""
    messages = body.get("messages") or [{"content": ""}]
    return text_of(messages[0]["content"])


def text_of(content: str | list[dict]) -> str:
    """The text of a message: a plain string, or the text blocks of an envelope request."""
    if isinstance(content, str):
        return content
    return "\n".join(block["text"] for block in content if block.get("type") == "text")


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
