"""context_app.claims.claim: one conditional UPDATE, True only for the caller that moved the row."""

import pytest

from research_app.models import ResearchRun
from research_app.services import create_session
from tests.factories import make_member
from workspaces.claims import claim

pytestmark = pytest.mark.django_db

Status = ResearchRun.Status


@pytest.fixture
def run():
    session = create_session(user=make_member()[0], title="Claims")
    return ResearchRun.objects.create(
        session=session, question="Why?", max_depth=1, max_children=2, max_nodes=3, token_budget=1000
    )


def test_only_the_first_claim_moves_the_row(run):
    runs = ResearchRun.objects.filter(pk=run.pk)
    assert claim(runs, from_=Status.QUEUED, to=Status.BINDING, tokens_used=7) is True
    assert claim(runs, from_=Status.QUEUED, to=Status.BINDING) is False
    run.refresh_from_db()
    assert (run.status, run.tokens_used) == (Status.BINDING, 7)


def test_several_from_values_and_not_from(run):
    runs = ResearchRun.objects.filter(pk=run.pk)
    assert claim(runs, from_=[Status.BINDING, Status.QUEUED], to=Status.RUNNING)
    assert claim(runs, not_from=ResearchRun.FINISHED, to=Status.CANCELLED)
    assert not claim(runs, not_from=ResearchRun.FINISHED, to=Status.CANCELLED)
    assert claim(runs, field="question", from_="Why?", to="Why not?")
    assert ResearchRun.objects.get(pk=run.pk).question == "Why not?"


def test_from_or_not_from_exactly_one(run):
    with pytest.raises(TypeError):
        claim(ResearchRun.objects.all(), to=Status.RUNNING)
    with pytest.raises(TypeError):
        claim(ResearchRun.objects.all(), from_=Status.QUEUED, not_from=ResearchRun.FINISHED, to=Status.RUNNING)
