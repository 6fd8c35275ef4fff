"""Prompt caching: calls, tokens by kind and money of a parse and of one research run, with and without it.

    make bench            # or: .venv/bin/python bench/prompt_cache_bench.py

Twice, in a throwaway SQLite database, through the anthropic provider (the real
SDK) against the tests' fake Messages API on loopback with a cold cache: once with
the stable prefix marked with cache_control (GROUNDWORK_LLM_PROMPT_CACHE on, the
default), once without. Each time a new team (so the digest cache starts empty)
uploads the Python-docs corpus (22 files) and runs one research question on it:
its bind phase parses them (Task A per file, Task B), then the run's own calls. The fake bills as the API does: a marked
prefix of at least 1024 tokens (Sonnet's minimum) is written to the cache the first
time and read from it when repeated. Money is pricing.call_cost over the LLMCall
rows at the claude-sonnet-4-5 list prices of settings.GROUNDWORK_LLM_PRICES.
Prints a table; writes bench/results/prompt_cache.json.
"""

from collections import Counter
from decimal import Decimal

import harness  # noqa: I001  (sets Django up before the project's imports)

harness.setup_django()

from django.conf import settings  # noqa: E402

from bench.retrieval_quality import corpus_files  # noqa: E402
from context_app import services  # noqa: E402
from llm_platform.gateway import reset_providers  # noqa: E402
from llm_platform.models import LLMCall  # noqa: E402
from llm_platform.pricing import call_cost  # noqa: E402
from research_app.runs import engine  # noqa: E402
from research_app.services import create_session  # noqa: E402
from tests.fake_anthropic import API_KEY, FakeAnthropic  # noqa: E402
from workspaces.services import ensure_demo_user  # noqa: E402

MODEL = "claude-sonnet-4-5"
MIN_CACHEABLE_TOKENS = 1024
QUESTION = "How do I read a file line by line, and what budget did the team's 2023 training plan allow?"
PARSE_TASKS = ("per_file_digest", "aggregate_digest")
TOKEN_KINDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def use_fake(fake: FakeAnthropic, *, prompt_cache: bool) -> None:
    settings.GROUNDWORK_LLM = "anthropic"
    settings.ANTHROPIC_API_KEY = API_KEY
    settings.ANTHROPIC_BASE_URL = fake.url
    settings.GROUNDWORK_ANTHROPIC_MODEL = MODEL
    settings.GROUNDWORK_LLM_PROMPT_CACHE = prompt_cache
    reset_providers()


def usage(calls: list[LLMCall]) -> dict:
    tokens = {kind: sum(getattr(call, kind) for call in calls) for kind in TOKEN_KINDS}
    money = sum(
        (call_cost(c.provider, c.model, **{kind: getattr(c, kind) for kind in TOKEN_KINDS}) or Decimal(0))
        for c in calls
    )
    return {"calls": len(calls), **tokens, "usd": round(float(money), 4)}


def parse_and_run(*, prompt_cache: bool) -> dict:
    fake = FakeAnthropic()  # a cold cache each time
    fake.min_cacheable_tokens = MIN_CACHEABLE_TOKENS
    label = "cached" if prompt_cache else "uncached"
    user, _team = ensure_demo_user(f"bench-{label}", "bench", f"Bench {label}")  # its own digest cache
    try:
        use_fake(fake, prompt_cache=prompt_cache)
        session = create_session(user=user, title="Prompt cache bench", question=QUESTION)
        services.upload_files(session.context_set, [services.Upload(n, d) for n, d in corpus_files().items()])
        run = engine.start_run(session, user, question=QUESTION, limits={"max_depth": 2, "max_children": 3})
    finally:
        fake.stop()
    run.refresh_from_db()
    parse = list(LLMCall.objects.filter(session=session, task__in=PARSE_TASKS))  # the bind phase
    research = list(LLMCall.objects.filter(subject__startswith=f"run:{run.pk}:"))
    return {
        "parse": usage(parse),
        "run": {"status": run.status, **usage(research)},
        "calls_by_task": dict(Counter(c.task for c in parse + research)),
    }


def main() -> None:
    cached = parse_and_run(prompt_cache=True)
    uncached = parse_and_run(prompt_cache=False)
    figures = {}
    for phase in ("parse", "run"):
        for label, result in (("with_cache", cached), ("without_cache", uncached)):
            figures |= {f"{phase}_{label}_{key}": value for key, value in result[phase].items()}
        saved = uncached[phase]["usd"] - cached[phase]["usd"]
        figures[f"{phase}_usd_saved_by_prompt_caching"] = round(saved, 4)
        figures[f"{phase}_share_saved"] = round(saved / uncached[phase]["usd"], 3) if uncached[phase]["usd"] else 0.0
    harness.write_results(
        "prompt_cache",
        figures,
        model=MODEL,
        min_cacheable_tokens=MIN_CACHEABLE_TOKENS,
        calls_by_task={"with_cache": cached["calls_by_task"], "without_cache": uncached["calls_by_task"]},
    )


if __name__ == "__main__":
    main()
