"""A fake OpenAI-compatible Chat Completions server on loopback (what Ollama, vLLM and LM Studio speak).

`json_schema` says what it does with `response_format` {"type": "json_schema"}: "accept" it
(OpenAI, recent Ollama and vLLM), or "reject" it with a 400 as servers without
structured outputs do.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llm_platform.base import LLMRequest
from llm_platform.gateway import reset_providers
from llm_platform.offline import OfflineProvider
from tests.fake_anthropic import STREAM_PIECE


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.statuses: list[int] = []  # scripted error statuses, consumed first
        self.texts: list[str] = []  # scripted answers, consumed before the offline handlers answer
        self.json_schema = "accept"  # or "reject": a 400 for response_format json_schema
        self.streamed = 0  # answers sent as `data:` chunks (the request asked for `stream: true`)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                fake.requests.append(
                    {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
                )
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                if fake.statuses:
                    return self._json(
                        fake.statuses.pop(0), {"error": {"message": "scripted failure", "type": "server_error"}}
                    )
                if fake.json_schema == "reject" and body.get("response_format", {}).get("type") == "json_schema":
                    message = "response_format type json_schema is not supported by this server"
                    return self._json(400, {"error": {"message": message, "type": "invalid_request_error"}})
                system, user = _system_and_user(body["messages"])
                text = fake.texts.pop(0) if fake.texts else _offline_answer(system, user)
                if body.get("stream"):
                    return self._chunks(body, user, text)
                self._json(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                        ],
                        "usage": {
                            "prompt_tokens": len(user) // 4,
                            "completion_tokens": len(text) // 4,
                            "total_tokens": 0,
                        },
                    },
                )

            def _chunks(self, body: dict, user: str, text: str):
                """The answer as Chat Completions streams it: `data:` chunks, a sentence each, then the usage
                (asked for with stream_options.include_usage) and [DONE]."""
                fake.streamed += 1
                chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
                pieces = [{"role": "assistant", "content": ""}] + [{"content": p} for p in STREAM_PIECE.findall(text)]
                chunks = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in pieces]
                chunks.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    usage = {"prompt_tokens": len(user) // 4, "completion_tokens": len(text) // 4, "total_tokens": 0}
                    chunks.append({**chunk, "choices": [], "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for data in [*map(json.dumps, chunks), "[DONE]"]:
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()

            def _json(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _system_and_user(messages: list[dict]) -> tuple[str, str]:
    """The system prompt (the message is left out when empty) and the user text, plain or in text parts."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = messages[-1]["content"]
    if isinstance(user, list):
        user = "\n".join(part["text"] for part in user if part.get("type") == "text")
    return system, user


def _offline_answer(system: str, user: str) -> str:
    return OfflineProvider().complete(LLMRequest(task="fake", system=system, prompt=user)).text


@pytest.fixture
def fake_openai(settings):
    server = FakeOpenAI()
    settings.GROUNDWORK_LLM = "openai"
    settings.OPENAI_BASE_URL = server.url
    settings.OPENAI_API_KEY = ""
    settings.GROUNDWORK_OPENAI_MODEL = "llama3.1:8b"
    settings.GROUNDWORK_LLM_BACKOFF_SECONDS = 0.01
    reset_providers()
    yield server
    reset_providers()
    server.stop()
