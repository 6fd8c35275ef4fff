"""The offline provider: deterministic, extractive, no network (the embedded default).

It reads the task (`TASK: <NAME>` on the prompt's first line, or on the first
line of an IR envelope's task section) and answers with the JSON that the
handler registered for that task builds from the input itself. A documented
product mode, not a test double.

This module only dispatches. Each app registers the handlers of its own tasks
from its AppConfig.ready() (`register`), so the app that writes a task's prompt
also answers it offline: context_app the digests, research_app the research
tasks, conversation_app the chat turn.
"""

import json
import math
import re
from collections.abc import Callable

from llm_platform.base import LLMRequest, LLMResponse, ProviderError, TextSink
from llm_platform.task_envelope import task_name

Handler = Callable[[str], dict]  # the prompt's text → the answer's JSON value

_handlers: dict[str, Handler] = {}
_SENTENCE_PIECE = re.compile(r".+?(?:[.!?] |$)", re.S)


def register(task: str, handler: Handler) -> None:
    """Answer prompts whose TASK is `task` with `handler`. Registering it again is harmless;
    a second handler for a task already taken is an error (two apps claiming one task)."""
    if _handlers.get(task, handler) is not handler:
        raise ValueError(f"the offline task {task} already has a handler: {_handlers[task]!r}")
    _handlers[task] = handler


def unregister(task: str) -> None:
    """Forget `task`'s handler (tests that register a task of their own)."""
    _handlers.pop(task, None)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class OfflineProvider:
    name = "offline"
    # Part of every digest cache key: bump it whenever the output changes, so old digests are not reused.
    model = "extractive-v3"

    def complete(self, request: LLMRequest) -> LLMResponse:
        task = task_name(request.prompt)
        handler = self.handler_for(task)
        if handler is None:
            raise ProviderError(f"offline provider has no handler for TASK: {task or '(none)'}", retryable=False)
        text = json.dumps(handler(request.prompt), ensure_ascii=False)
        return LLMResponse(
            text=text,
            input_tokens=estimate_tokens(request.system) + estimate_tokens(request.prompt),
            output_tokens=estimate_tokens(text),
            model=self.model,
        )

    def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse:
        """The answer of `complete`, passed on a sentence at a time (the JSON is cut after each ". ")."""
        response = self.complete(request)
        for piece in _SENTENCE_PIECE.findall(response.text):
            on_text(piece)
        return response

    def handler_for(self, task: str) -> Handler | None:
        """The handler registered for `task`, or None when no app registered one."""
        return _handlers.get(task)
