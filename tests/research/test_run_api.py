"""Run endpoints that need no worker: what a run without a report answers."""

import pytest

from research_app.models import ResearchRun
from tests.factories import ContextApi, make_member

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api():
    return ContextApi(make_member()[0])


def a_run(sid: str, status: str) -> ResearchRun:
    return ResearchRun.objects.create(
        session_id=sid,
        question="Did the valves pay off?",
        status=status,
        max_depth=1,
        max_children=2,
        max_nodes=3,
        token_budget=1000,
    )


@pytest.mark.parametrize("status", ["queued", "binding", "running", "reporting", "cancelled", "failed"])
def test_the_report_of_a_run_without_one_is_a_404_naming_the_runs_status(api, status):
    """Regression: error() got `status` twice (the HTTP status and the run's) and the view answered 500."""
    run = a_run(api.create_session(), status)
    response = api.get(f"/api/runs/{run.pk}/report")
    assert response.status_code == 404, response.content
    assert response.json() == {"error": f"the run has no report yet (status: {status})", "run_status": status}
