"""The cost ledger and the limits on the whole stack (issue 14): a real worker parses, runs and answers.

The offline provider's calls are priced here (the default table prices them at zero),
so the ledger, the savings of the digest cache and the spending cap have money to count.
"""

from decimal import Decimal

import pytest

from context_app.models import ContextSet, DigestCacheHit
from llm_platform.models import LLMCall
from research_app.models import ResearchRun
from tests.context.test_cost_ledger import cost_of, dollars
from tests.factories import ContextApi, make_member
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES, events_of, finished, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker_thread")]

FILES = {"valves.md": VALVES.encode(), "survey.txt": SURVEY.encode()}


@pytest.fixture
def priced(settings):
    settings.GROUNDWORK_LLM_PRICES = {
        "offline:*": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    }


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def parsed_session(api, files=FILES) -> str:
    sid = api.create_session(question=QUESTION)
    api.upload(sid, files)
    api.parse(sid)
    api.settle(sid)
    return sid


def session_calls(sid):
    return LLMCall.objects.filter(session_id=sid)


def test_a_parse_and_a_run_are_in_the_ledger_as_the_sums_of_their_calls(api, priced):
    sid = parsed_session(api)
    rid = start(api, sid, max_depth=1)
    assert finished(api, rid)["status"] == "completed"

    usage = api.get(f"/api/sessions/{sid}/usage").json()
    calls = list(session_calls(sid))
    assert usage["total"]["calls"] == len(calls) > 0
    assert usage["total"]["input_tokens"] == sum(c.input_tokens for c in calls)
    assert usage["total"]["cost"] == dollars(cost_of(calls))
    tasks = {line["task"]: line for line in usage["by_task"]}
    assert {"per_file_digest", "aggregate_digest", "node_queries", "report"} <= set(tasks)
    digests = [c for c in calls if c.task == "per_file_digest"]
    assert tasks["per_file_digest"]["calls"] == len(digests)
    assert tasks["per_file_digest"]["cost"] == dollars(cost_of(digests))

    run_calls = [c for c in calls if c.run_id is not None]
    assert {str(c.run_id) for c in run_calls} == {rid}
    assert run_calls == [c for c in calls if c.subject.startswith(f"run:{rid}:")], "every call of the run has its id"
    (run_line,) = usage["by_run"]
    assert run_line["calls"] == len(run_calls) and run_line["cost"] == dollars(cost_of(run_calls))
    snapshot = api.get(f"/api/runs/{rid}").json()
    assert snapshot["usage"]["total"]["calls"] == len(run_calls)
    assert snapshot["usage"]["total"]["cost"] == dollars(cost_of(run_calls))


def test_files_the_digest_cache_answers_are_saved_calls_tokens_and_money(api, priced):
    first = parsed_session(api)
    made = [c for c in session_calls(first) if c.task == "per_file_digest"]
    assert len(made) >= len(FILES)

    again = parsed_session(api)  # the same files in another session of the team: no Task A call
    assert not session_calls(again).filter(task="per_file_digest").exists()
    assert DigestCacheHit.objects.filter(context_set__session_id=again).count() == len(FILES)

    line = next(t for t in api.get(f"/api/sessions/{again}/usage").json()["by_task"] if t["task"] == "per_file_digest")
    assert line["calls"] == 0
    saved = line["saved"]["digest_cache"]
    assert saved["calls"] == len(made)
    assert saved["input_tokens"] == sum(c.input_tokens for c in made)
    assert saved["output_tokens"] == sum(c.output_tokens for c in made)
    assert saved["cost"] == dollars(cost_of(made)) and Decimal(saved["cost"]) > 0


def test_a_run_stops_before_a_call_would_pass_its_token_budget(api, settings):
    settings.GROUNDWORK_LLM_MAX_TOKENS = 500  # each call's most: its prompt and 500 output tokens
    sid = parsed_session(api)
    budget = 4_000
    rid = start(api, sid, max_depth=2, token_budget=budget)
    run = finished(api, rid)

    assert run["status"] == "failed", run
    assert run["error"].startswith("token budget reached"), run["error"]
    failed = [e for e in events_of(api, rid) if e["type"] == "run_failed"]
    assert failed and failed[-1]["payload"]["limit"] == "token_budget"
    calls = LLMCall.objects.filter(run_id=rid)
    assert calls.exists(), "the run worked until the budget had no room for its next call"
    used = sum(c.input_tokens + c.output_tokens for c in calls)
    assert used == ResearchRun.objects.get(pk=rid).tokens_used <= budget


def test_a_spending_cap_stops_digests_runs_and_chat_before_their_calls(api, priced):
    sid = api.create_session(question=QUESTION)
    response = api.patch(f"/api/sessions/{sid}", {"spending_cap_usd": "0.0001"}, format="json")
    assert response.status_code == 200, response.content
    api.upload(sid, FILES)
    api.parse(sid)
    manifest = api.settle(sid)

    for file in manifest["files"]:
        assert file["digest_status"] == "error", file
        assert file["error"]["code"] == "spending_cap", file
        assert "spending cap of $0.000100 is reached" in file["error"]["message"], file
    assert not session_calls(sid).exists(), "no call was made past the cap"

    rid = start(api, sid, max_depth=1)
    run = finished(api, rid)
    assert run["status"] == "failed" and "spending cap" in run["error"], run
    assert [e["payload"].get("limit") for e in events_of(api, rid) if e["type"] == "run_failed"] == ["spending_cap"]

    chat = api.post(
        "/api/research/conversation", {"session_id": sid, "message": "What did the valves cost?"}, format="json"
    )
    assert chat.status_code == 200, chat.content
    answer = chat.json()
    assert answer["status"] == "failed" and "spending cap" in answer["error"], answer
    assert not session_calls(sid).exists()
    assert ContextSet.objects.get(session_id=sid).session.spending_cap_usd == Decimal("0.0001")
