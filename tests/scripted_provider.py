"""A model provider tests script through a setting, instead of patching the offline provider.

    scripted_llm.handlers["NODE_SUFFICIENCY"] = judge   # this TASK answered by judge(prompt) -> dict
    scripted_llm.delay = 0.3                             # every call takes 0.3 s (a status stays observable)
    scripted_llm.go_down("per_file_digest", retryable=False)   # these calls (no task named: all) fail …
    scripted_llm.come_back()                             # … until the outage ends
    scripted_llm.requests                                # every LLMRequest received, in order

Unscripted, it answers exactly as the offline provider: through the handlers the
apps registered. It keeps the offline provider's `name` and `model` on purpose:
its answers are the offline handlers' own (a test overriding a task asserts what
that override does, never the provider's name), so the digest cache keys, the
"offline extractive mode" badge the context page tests read and the recorded
LLMCall rows stay what the product produces with GROUNDWORK_LLM=offline. That
the scripted provider was really used is shown by its `requests`.

The Celery worker of the tests runs in threads of the test process, so the
setting and the script reach it; the browser tests' daphne makes no model call.
"""

import threading
import time

import pytest

from llm_platform.base import LLMRequest, LLMResponse, ProviderError
from llm_platform.offline import Handler, OfflineProvider

OUTAGE_MESSAGE = "the model service answered 503 Service Unavailable"


class Script:
    """What the scripted provider does; shared by every instance (the gateway builds its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.handlers: dict[str, Handler] = {}  # TASK name → handler answering instead of the offline one
        self.delay = 0.0  # seconds every call takes
        self.requests: list[LLMRequest] = []  # every request received, answered or not
        self._outage: tuple[frozenset[str], bool] | None = None  # (request tasks, or all; retryable)

    def go_down(self, *tasks: str, retryable: bool = False) -> None:
        """Calls for `tasks` (LLMRequest.task, e.g. "per_file_digest"; none named: every call) raise a
        ProviderError, as an unavailable model service does, until `come_back()`."""
        self._outage = (frozenset(tasks), retryable)

    def come_back(self) -> None:
        self._outage = None

    def outage_for(self, task: str) -> ProviderError | None:
        outage = self._outage
        if outage is None or (outage[0] and task not in outage[0]):
            return None
        return ProviderError(OUTAGE_MESSAGE, retryable=outage[1])


class ScriptedProvider(OfflineProvider):
    """GROUNDWORK_LLM = "tests.scripted_provider.ScriptedProvider" (see the module's docstring)."""

    script = Script()

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self.script.lock:
            self.script.requests.append(request)
        if self.script.delay:
            time.sleep(self.script.delay)
        error = self.script.outage_for(request.task)
        if error is not None:
            raise error
        return super().complete(request)

    def handler_for(self, task: str) -> Handler | None:
        return self.script.handlers.get(task) or super().handler_for(task)


@pytest.fixture
def scripted_llm(settings):
    """Model calls go to the scripted provider for this test; yields its Script (reset before and after)."""
    from llm_platform import gateway

    ScriptedProvider.script.reset()
    settings.GROUNDWORK_LLM = f"{ScriptedProvider.__module__}.{ScriptedProvider.__qualname__}"
    gateway.reset_providers()
    yield ScriptedProvider.script
    gateway.reset_providers()
    ScriptedProvider.script.reset()
