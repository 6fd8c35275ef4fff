"""The cost ledger (issue 14, SPEC §8 Usage): its figures are the sums of the LLMCall rows, priced by the table.

Rows are written here directly, with every kind of token, batch calls, runs, failed
attempts and a model the price table does not know, so each figure can be checked
against a sum computed row by row.
"""

import uuid
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from context_app.models import ContextSet, DigestCacheHit
from llm_platform import spending
from llm_platform.base import LLMRequest
from llm_platform.models import LLMCall, SpendingHold
from llm_platform.pricing import call_cost, prompt_caching_saving
from research_app.models import ResearchRun, RunEvent
from research_app.runs.events import RunStopped
from research_app.runs.model_tasks import TokenReservation
from tests.factories import ContextApi, make_member
from workspaces.models import ResearchSession

pytestmark = pytest.mark.django_db

PRICES = {
    "anthropic:claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "openai:gpt-4o-mini": {"input": 0.15, "output": 0.60, "cache_read": 0.075, "cache_write": 0.15},
}
TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
MILLIONTH = Decimal("0.000001")


@pytest.fixture
def priced(settings):
    settings.GROUNDWORK_LLM_PRICES = PRICES
    settings.GROUNDWORK_LLM_BATCH_DISCOUNT = 0.5


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def call(context_set, task, *, provider="anthropic", model="claude-sonnet-4-5", run=None, **fields):
    return LLMCall.objects.create(
        session_id=context_set.session_id,
        task=task,
        provider=provider,
        model=model,
        outcome=fields.pop("outcome", LLMCall.Outcome.OK),
        run_id=run.pk if run else None,
        subject=f"run:{run.pk}:node:1" if run else "file:x",
        **fields,
    )


def make_run(sid) -> ResearchRun:
    return ResearchRun.objects.create(
        session_id=sid, question="Q?", max_depth=1, max_children=2, max_nodes=3, token_budget=100_000
    )


def cost_of(rows) -> Decimal:
    return sum(
        (call_cost(r.provider, r.model, batch=r.batch, **{k: getattr(r, k) for k in TOKENS}) for r in rows),
        Decimal(0),
    )


def caching_saved(rows) -> Decimal:
    return sum(
        (
            prompt_caching_saving(
                r.provider,
                r.model,
                cache_read_input_tokens=r.cache_read_input_tokens,
                cache_creation_input_tokens=r.cache_creation_input_tokens,
                batch=r.batch,
            )
            for r in rows
        ),
        Decimal(0),
    )


def dollars(amount: Decimal) -> str:
    return str(amount.quantize(MILLIONTH))


def ledger_rows(sid):
    """A session's calls: digests (one a batch, one failed), a run's steps with prompt caching, chat."""
    context_set = ContextSet.objects.get(session_id=sid)
    run = make_run(sid)
    rows = [
        call(context_set, "per_file_digest", input_tokens=12_000, output_tokens=1_500),
        call(context_set, "per_file_digest", input_tokens=9_000, output_tokens=1_200, batch=True),
        call(context_set, "per_file_digest", outcome=LLMCall.Outcome.FAILED, error="503"),
        call(context_set, "aggregate_digest", input_tokens=4_000, output_tokens=900, cache_creation_input_tokens=2_000),
        call(context_set, "node_queries", run=run, input_tokens=300, output_tokens=80, cache_read_input_tokens=2_000),
        call(
            context_set,
            "node_findings",
            run=run,
            input_tokens=5_000,
            output_tokens=700,
            cache_read_input_tokens=2_000,
            outcome=LLMCall.Outcome.INVALID,
        ),
        call(context_set, "report", run=run, input_tokens=8_000, output_tokens=2_500, cache_creation_input_tokens=900),
        call(context_set, "chat_turn", provider="openai", model="gpt-4o-mini", input_tokens=3_000, output_tokens=400),
    ]
    return context_set, run, rows


def test_session_usage_is_the_sum_of_its_llm_call_rows_by_task_and_by_run(api, priced, django_assert_num_queries):
    sid = api.create_session()
    context_set, run, rows = ledger_rows(sid)
    other = ContextSet.objects.get(session_id=api.create_session(title="Other"))
    call(other, "per_file_digest", input_tokens=99_999, output_tokens=99_999)  # another session's: not counted

    with django_assert_num_queries(5):  # token and user, session, context set, calls grouped, hits grouped
        response = api.get(f"/api/sessions/{sid}/usage")
    assert response.status_code == 200, response.content
    usage = response.json()

    assert usage["currency"] == "USD"
    total = usage["total"]
    assert total["calls"] == len(rows)
    for kind in TOKENS:
        assert total[kind] == sum(getattr(r, kind) for r in rows), kind
    assert total["cost"] == dollars(cost_of(rows))
    assert Decimal(total["cost"]) > 0
    assert total["saved"]["prompt_caching"] == dollars(caching_saved(rows))
    assert total["unpriced_calls"] == 0 and usage["unpriced_models"] == []

    by_task = {line["task"]: line for line in usage["by_task"]}
    assert set(by_task) == {r.task for r in rows}
    for task, line in by_task.items():
        task_rows = [r for r in rows if r.task == task]
        assert line["calls"] == len(task_rows), task
        assert line["input_tokens"] == sum(r.input_tokens for r in task_rows), task
        assert line["cache_read_input_tokens"] == sum(r.cache_read_input_tokens for r in task_rows), task
        assert line["cost"] == dollars(cost_of(task_rows)), task
        assert line["saved"]["prompt_caching"] == dollars(caching_saved(task_rows)), task
    # The batch call is billed at the discount: the digest line is not the full-price sum.
    digests = [r for r in rows if r.task == "per_file_digest"]
    full_price = sum(
        (call_cost(r.provider, r.model, input_tokens=r.input_tokens, output_tokens=r.output_tokens) for r in digests),
        Decimal(0),
    )
    assert Decimal(by_task["per_file_digest"]["cost"]) < full_price

    (run_line,) = usage["by_run"]
    run_rows = [r for r in rows if r.run_id == run.pk]
    assert run_line["run_id"] == str(run.pk)
    assert run_line["calls"] == len(run_rows)
    assert run_line["cost"] == dollars(cost_of(run_rows))


def test_prompt_caching_saving_is_reads_at_the_discount_less_the_write_premium(priced):
    # sonnet: input 3.00, cache read 0.30, cache write 3.75 per million
    saved = prompt_caching_saving(
        "anthropic", "claude-sonnet-4-5", cache_read_input_tokens=1_000_000, cache_creation_input_tokens=200_000
    )
    assert saved == Decimal("2.70") - Decimal("0.15")
    assert prompt_caching_saving("anthropic", "claude-sonnet-4-5", cache_creation_input_tokens=1_000_000) < 0
    assert prompt_caching_saving("nobody", "knows") is None


def test_a_model_the_price_table_does_not_know_is_reported_unpriced_not_free(api, priced):
    sid = api.create_session()
    context_set = ContextSet.objects.get(session_id=sid)
    priced_row = call(context_set, "chat_turn", input_tokens=1_000, output_tokens=100)
    call(context_set, "chat_turn", provider="openai", model="home-grown-7b", input_tokens=1_000, output_tokens=100)

    usage = api.get(f"/api/sessions/{sid}/usage").json()
    assert usage["unpriced_models"] == ["openai:home-grown-7b"]
    assert usage["total"]["unpriced_calls"] == 1
    assert usage["total"]["calls"] == 2
    assert usage["total"]["cost"] == dollars(cost_of([priced_row]))


def test_digest_cache_hits_are_reported_as_saved_calls_tokens_and_money(api, priced):
    sid = api.create_session()
    context_set = ContextSet.objects.get(session_id=sid)
    hits = [
        DigestCacheHit.objects.create(
            context_set=context_set,
            task="per_file_digest",
            provider="anthropic",
            model="claude-sonnet-4-5",
            subject=f"file:{uuid.uuid4()}",
            calls=calls,
            input_tokens=tokens,
            output_tokens=tokens // 10,
        )
        for calls, tokens in ((1, 10_000), (2, 30_000))  # the second digest needed a repair call
    ]

    usage = api.get(f"/api/sessions/{sid}/usage").json()
    (line,) = usage["by_task"]
    assert line["task"] == "per_file_digest"
    assert line["calls"] == 0, "a hit makes no call"
    saved = line["saved"]["digest_cache"]
    assert saved["calls"] == 3
    assert saved["input_tokens"] == 40_000
    expected = sum(
        (call_cost(h.provider, h.model, input_tokens=h.input_tokens, output_tokens=h.output_tokens) for h in hits),
        Decimal(0),
    )
    assert saved["cost"] == dollars(expected)
    assert usage["total"]["saved"]["total"] == dollars(expected)


def test_a_run_snapshot_includes_the_ledger_of_its_own_calls(api, priced, django_assert_num_queries):
    sid = api.create_session()
    context_set, run, rows = ledger_rows(sid)
    other_run = make_run(sid)
    call(context_set, "report", run=other_run, input_tokens=50_000, output_tokens=5_000)

    snapshot = api.get(f"/api/runs/{run.pk}").json()
    usage = snapshot["usage"]
    run_rows = [r for r in rows if r.run_id == run.pk]
    assert usage["total"]["calls"] == len(run_rows)
    assert usage["total"]["cost"] == dollars(cost_of(run_rows))
    assert usage["total"]["cache_read_input_tokens"] == 4_000
    assert {line["task"] for line in usage["by_task"]} == {"node_queries", "node_findings", "report"}

    from llm_platform.ledger import run_usage

    with django_assert_num_queries(1):
        run_usage(run.pk)


def test_usage_of_another_teams_session_is_a_404(api):
    sid = api.create_session()
    stranger = ContextApi(make_member()[0])
    assert stranger.get(f"/api/sessions/{sid}/usage").status_code == 404
    assert stranger.get(f"/api/sessions/{uuid.uuid4()}/usage").status_code == 404


def test_the_spending_cap_is_set_by_patch_and_bad_values_are_a_400(api):
    sid = api.create_session()
    response = api.patch(f"/api/sessions/{sid}", {"spending_cap_usd": "2.50"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["spending_cap_usd"] == "2.5000"
    assert api.get(f"/api/sessions/{sid}/usage").json()["spending_cap"] == {"cap": "2.500000"}
    for bad in ({"spending_cap_usd": "-1"}, {"spending_cap_usd": "lots"}, {"spending_cap_usd": True}, {"x": 1}, [1]):
        refused = api.patch(f"/api/sessions/{sid}", bad, format="json")
        assert refused.status_code == 400, (bad, refused.content)
        assert "spending_cap_usd" in refused.json()["error"], refused.content
    cleared = api.patch(f"/api/sessions/{sid}", {"spending_cap_usd": None}, format="json")
    assert cleared.json()["spending_cap_usd"] is None
    stranger = ContextApi(make_member()[0])
    assert stranger.patch(f"/api/sessions/{sid}", {"spending_cap_usd": "1"}, format="json").status_code == 404


def test_admin_lists_llm_calls_filtered_by_session_with_their_cost(api, priced, client):
    sid = api.create_session(title="Valve survey")
    context_set, _run, rows = ledger_rows(sid)
    other = ContextSet.objects.get(session_id=api.create_session(title="Unrelated"))
    call(other, "chat_turn", input_tokens=1, output_tokens=1)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))

    page = client.get(reverse("admin:llm_platform_llmcall_changelist"), {"session": sid, "task": "report"})
    assert page.status_code == 200
    shown = list(page.context["cl"].result_list)
    assert shown == [r for r in rows if r.task == "report"]
    html = page.content.decode()
    assert "Valve survey" in html  # the session filter's choices
    assert dollars(cost_of(shown)) in html
    everything = client.get(reverse("admin:llm_platform_llmcall_changelist"), {"session": sid})
    assert everything.context["cl"].result_count == len(rows)
    by_outcome = client.get(reverse("admin:llm_platform_llmcall_changelist"), {"session": sid, "outcome": "failed"})
    assert by_outcome.context["cl"].result_count == 1


def request_of(prompt_words: int, max_tokens: int) -> LLMRequest:
    return LLMRequest(task="chat_turn", system="", prompt="word " * prompt_words, max_tokens=max_tokens)


def test_calls_in_parallel_cannot_pass_the_spending_cap_together(api, priced):
    sid = api.create_session()
    request = request_of(100, 1_000)  # sonnet: at most ~$0.0154 each
    most = call_cost(
        "anthropic", "claude-sonnet-4-5", input_tokens=spending.prompt_tokens(request), output_tokens=1_000
    )
    ResearchSession.objects.filter(pk=sid).update(spending_cap_usd=(most * 3 / 2).quantize(Decimal("0.0001")))

    with spending.held_within_cap(sid, "anthropic", "claude-sonnet-4-5", request):
        # A second call while the first is in progress: both could pass the cap, so it is refused.
        with pytest.raises(spending.OverSpendingCap, match="held by calls in progress"):
            with spending.held_within_cap(sid, "anthropic", "claude-sonnet-4-5", request):
                pass
    assert not SpendingHold.objects.exists(), "the hold ends with its call"
    with spending.held_within_cap(sid, "anthropic", "claude-sonnet-4-5", request):
        pass  # the first call is over (and cost nothing recorded): the next one may go

    # A hold left by a worker that died mid-call stops counting once the longest call is over.
    SpendingHold.objects.create(session_id=sid, amount_usd=most, expires_at=timezone.now())
    with spending.held_within_cap(sid, "anthropic", "claude-sonnet-4-5", request):
        pass


def test_a_runs_calls_in_parallel_cannot_pass_its_token_budget_together(api):
    sid = api.create_session()
    run = ResearchRun.objects.create(
        session_id=sid,
        question="Q?",
        max_depth=1,
        max_children=2,
        max_nodes=3,
        token_budget=10_000,
        status=ResearchRun.Status.RUNNING,
    )
    first = TokenReservation(run.pk, "NODE_FINDINGS")
    first.take(6_000)
    with pytest.raises(RunStopped):
        TokenReservation(run.pk, "NODE_QUERIES").take(6_000)  # another node's call, while the first is made
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.FAILED
    assert run.error == (
        "token budget reached: 0 of 10000 tokens used, and the next call (node_queries) may use up to 6000"
    )
    event = RunEvent.objects.get(run=run, type="run_failed")
    assert event.payload == {"error": run.error, "limit": "token_budget"}

    first.settle(LLMCall(input_tokens=3_000, output_tokens=500))
    run.refresh_from_db()
    assert (run.tokens_used, run.tokens_reserved) == (3_500, 0)
