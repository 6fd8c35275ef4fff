"""The offline provider: deterministic, extractive, no network (the embedded default).

It reads the task (`TASK: <NAME>` on the prompt's first line, or on the first
line of an IR envelope's task section) and answers with the JSON that the
handler registered for that task builds from the input itself. A documented
product mode, not a test double.

This module only dispatches. A model task names its offline handler by dotted
path (`ModelTask.offline_handler`), and the task registers that path here when
it is defined (`register`), so the app that writes a task's prompt also answers
it offline: context_app the digests, research_app the research tasks,
conversation_app the chat turn. A path is imported the first time its task is
answered. A task is registered in every process that can send it: a model call
needs the task's ModelTask, whose module registered it on import.
"""

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from django.utils.module_loading import import_string

from llm_platform.base import LLMRequest, LLMResponse, ProviderError, TextSink
from llm_platform.task_envelope import task_name

Handler = Callable[[str], dict]  # the prompt's text → the answer's JSON value

_SENTENCE_PIECE = re.compile(r".+?(?:[.!?] |$)", re.S)


@dataclass
class _Registered:
    """A task's handler as registered: a callable, or the dotted path of one (imported on first use)."""

    path: str | None
    handler: Handler | None

    def resolve(self) -> Handler:
        if self.handler is None:
            self.handler = import_string(self.path)
        return self.handler

    def same_as(self, other: "_Registered") -> bool:
        """One handler: the same path, or the same callable (a path and what it names are one)."""
        if self.path is not None and self.path == other.path:
            return True
        return self.resolve() is other.resolve()

    def __repr__(self) -> str:
        return repr(self.handler if self.path is None else self.path)


_handlers: dict[str, _Registered] = {}


def register(task: str, handler: Handler | str) -> None:
    """Answer prompts whose TASK is `task` with `handler`, a callable or its dotted path (imported the
    first time the task is answered). Registering it again is harmless; a second handler for a task
    already taken is an error (two apps claiming one task)."""
    registered = _Registered(handler, None) if isinstance(handler, str) else _Registered(None, handler)
    taken = _handlers.setdefault(task, registered)
    if taken is not registered and not taken.same_as(registered):
        raise ValueError(f"the offline task {task} already has a handler: {taken!r}")


def unregister(task: str) -> None:
    """Forget `task`'s handler (tests that register a task of their own)."""
    _handlers.pop(task, None)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class OfflineProvider:
    name = "offline"
    # Part of every digest cache key: bump it whenever the output changes, so old digests are not reused.
    model = "extractive-v36"

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
        """The handler registered for `task` (its path imported, once), or None when no app registered one."""
        registered = _handlers.get(task)
        return None if registered is None else registered.resolve()
