"""A deterministic OpenAI-compatible embeddings server on loopback: POST /v1/embeddings.

Its vectors are hashed bags of stemmed words (64 dimensions), so texts that share words
are near and others are not: deterministic, fast, and enough to test the mechanism
(cache, ledger, windows, fusion, fallback). The real model's quality is measured with
the real model (tests/llm_platform/test_minilm.py, bench/).

`mode` scripts what it answers: "ok", "down" (503), "html" (a 200 HTML error page),
"nan", "short" (one vector fewer than asked), "wide" (96 dimensions), "slow" (no answer
until the server stops: every client times out first).
"""

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from llm_platform import embeddings
from llm_platform.terms import analyze

DIMENSIONS = 64


def fake_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    vector = np.zeros(dimensions, dtype=np.float32)
    for term in analyze(text):
        digest = hashlib.sha256(term.encode()).digest()
        vector[digest[0] % dimensions] += 1.0 if digest[1] % 2 else -1.0
    if not vector.any():
        vector[0] = 1.0
    return [float(x) for x in vector]


class FakeEmbeddings:
    def __init__(self) -> None:
        self.mode = "ok"
        self.answer_late = threading.Event()  # "slow" holds its answers until this is set (stop())
        self.calls = 0
        self.inputs: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.answer_late.set()
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                fake.calls += 1
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                fake.inputs.extend(texts)
                if fake.mode == "slow":
                    fake.answer_late.wait(timeout=60)
                if fake.mode == "down":
                    return self._send(503, {"error": {"message": "overloaded", "type": "server_error"}})
                if fake.mode == "html":
                    return self._send_raw(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
                width = 96 if fake.mode == "wide" else DIMENSIONS
                vectors = [fake_vector(text, width) for text in texts]
                if fake.mode == "nan":
                    vectors[0][0] = float("nan")
                if fake.mode == "short":
                    vectors = vectors[:-1]
                tokens = sum(len(text.split()) for text in texts)
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    },
                )

            def _send(self, status: int, body: dict) -> None:
                # NaN is not JSON: Python writes it as NaN, which some servers do send
                self._send_raw(status, json.dumps(body).encode(), "application/json")

            def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.fixture
def remote_embeddings(settings):
    """GROUNDWORK_EMBEDDINGS=openai against a FakeEmbeddings server, in this process."""
    fake = FakeEmbeddings()
    settings.GROUNDWORK_EMBEDDINGS = "openai"
    settings.GROUNDWORK_EMBEDDINGS_BASE_URL = fake.url
    settings.GROUNDWORK_EMBEDDINGS_MODEL = "text-embedding-3-small"
    settings.GROUNDWORK_EMBEDDINGS_API_KEY = "test-key"
    settings.GROUNDWORK_EMBEDDINGS_TIMEOUT_SECONDS = 2.0
    embeddings.reset_provider()
    yield fake
    embeddings.reset_provider()
    fake.stop()
