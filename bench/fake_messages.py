"""A fake Anthropic Messages API for load: a fixed latency, a rate limit, and what it saw.

A smaller cousin of tests/fake_anthropic.py (which scripts failures one request at
a time): this one answers every request after `latency` seconds with the offline
handlers' answer (so digests validate), refuses with 429 + `retry-after` beyond
`max_concurrent` requests in flight or `per_minute` accepted in the last minute,
and measures the calls in flight (max, and the time-weighted mean over a window).

    fake = FakeMessages(latency=2.0, max_concurrent=32)
    ... ANTHROPIC_BASE_URL=fake.url ...
    fake.start_window(); ...; fake.figures()
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_KEY = "bench-key"


class FakeMessages:
    def __init__(
        self,
        *,
        latency: float = 2.0,
        max_concurrent: int | None = None,
        per_minute: int | None = None,
        retry_after: float = 1.0,
    ) -> None:
        self.latency = latency
        self.max_concurrent = max_concurrent
        self.per_minute = per_minute
        self.retry_after = retry_after
        self.lock = threading.Lock()
        self.in_flight = 0
        self.accepted = 0
        self.refused = 0  # 429s sent
        self.tasks: dict[str, int] = {}
        self._recent: deque[float] = deque()  # accept times in the last minute
        self.start_window()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.request_queue_size = 256
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def start_window(self) -> None:
        """Start measuring from now: in-flight max and mean, 429s, accepted calls."""
        with self.lock:
            self._window_start = self._last_change = time.monotonic()
            self._area = 0.0
            self.max_in_flight = self.in_flight
            self.accepted = self.refused = 0
            self.tasks = {}

    def figures(self) -> dict:
        with self.lock:
            self._advance(time.monotonic())
            elapsed = max(1e-9, self._last_change - self._window_start)
            return {
                "max_in_flight": self.max_in_flight,
                "mean_in_flight": round(self._area / elapsed, 2),
                "accepted": self.accepted,
                "refused_429": self.refused,
                "tasks": dict(self.tasks),
            }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _advance(self, now: float) -> None:
        self._area += self.in_flight * (now - self._last_change)
        self._last_change = now

    def _admit(self) -> float | None:
        """None when the request may proceed (counted in flight), else the retry-after to send."""
        now = time.monotonic()
        with self.lock:
            while self._recent and self._recent[0] <= now - 60:
                self._recent.popleft()
            if self.max_concurrent is not None and self.in_flight >= self.max_concurrent:
                self.refused += 1
                return self.retry_after
            if self.per_minute is not None and len(self._recent) >= self.per_minute:
                self.refused += 1
                return max(self.retry_after, self._recent[0] + 60 - now)
            self._recent.append(now)
            self._advance(now)
            self.in_flight += 1
            self.accepted += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return None

    def _done(self) -> None:
        with self.lock:
            self._advance(time.monotonic())
            self.in_flight -= 1

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                bearer = self.headers.get("authorization", "")
                if API_KEY not in (self.headers.get("x-api-key"), bearer.removeprefix("Bearer ")):
                    return self._json(401, {"type": "error", "error": {"type": "authentication_error"}})
                retry_after = fake._admit()
                if retry_after is not None:
                    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "rate limited"}}
                    return self._json(429, error, {"retry-after": f"{retry_after:.3f}"})
                started = time.monotonic()
                done = False
                try:
                    text, task = _offline_answer(body)
                    with fake.lock:
                        fake.tasks[task] = fake.tasks.get(task, 0) + 1
                    time.sleep(max(0.0, fake.latency - (time.monotonic() - started)))
                    # Done before answering: a client that got its answer may call again at once.
                    fake._done()
                    done = True
                    self._json(
                        200,
                        {
                            "id": "msg_bench",
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model"),
                            "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn",
                            "stop_sequence": None,
                            "usage": {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": len(text) // 4},
                        },
                    )
                finally:
                    if not done:
                        fake._done()

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
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


def _offline_answer(body: dict) -> tuple[str, str]:
    """What the offline handlers answer to this request (Django must be set up), and its TASK."""
    from llm_platform.base import LLMRequest
    from llm_platform.offline import OfflineProvider
    from llm_platform.task_envelope import task_name

    content = body["messages"][0]["content"]
    prompt = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    request = LLMRequest(task="bench", system=body.get("system", ""), prompt=prompt)
    return OfflineProvider().complete(request).text, task_name(prompt) or "?"
