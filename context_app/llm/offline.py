"""The offline provider: deterministic, extractive, no network (the embedded default).

It reads the task (`TASK: <NAME>` on the prompt's first line, or on the first
line of an IR envelope's task section) and answers with JSON built from the
input itself. A documented product mode, not a test double.
"""

import json
import math
from collections.abc import Callable

from .base import LLMRequest, LLMResponse, ProviderError
from .task_envelope import task_name


def _handlers() -> dict[str, Callable[[str], dict]]:
    from ..digests import offline as digest_offline
    from . import offline_chat as chat
    from . import offline_research as research

    return {
        "PER_FILE_DIGEST": digest_offline.per_file_digest,
        "AGGREGATE_DIGEST": digest_offline.aggregate_digest,
        "NODE_QUERIES": research.node_queries,
        "NODE_FINDINGS": research.node_findings,
        "NODE_SUFFICIENCY": research.node_sufficiency,
        "NODE_DECOMPOSE": research.node_decompose,
        "CONTEXT_SPLIT": research.context_split,
        "REPORT": research.report,
        "CHAT_TURN": chat.chat_turn,
    }


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

    def handler_for(self, task: str) -> Callable[[str], dict] | None:
        """The handler that answers `task`, or None when there is none."""
        return _handlers().get(task)
