"""workspaces.claims.claim: one conditional UPDATE that moves the row for one caller only, within the table of moves."""

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


def test_a_file_or_aggregate_status_moves_only_as_its_table_allows():
    """context_app.models lists the moves of a file's digest and a set's aggregate; a claim or a
    move() outside them is refused before anything is written."""
    from context_app.models import ContextFile, ContextSet, DigestStatus
    from tests.factories import ContextApi
    from workspaces.claims import NotAMove, move

    api = ContextApi(make_member()[0])
    sid = api.create_session()
    api.upload_and_extract(sid, {"notes.md": b"# Notes\n\nValves were replaced in 2022.\n"})
    file = ContextFile.objects.get(context_set__session_id=sid)
    assert file.digest_status == DigestStatus.STALE
    with pytest.raises(NotAMove, match="ContextFile.digest_status may not move from 'stale' to 'ready'"):
        claim(ContextFile.objects.filter(pk=file.pk), field="digest_status", from_=DigestStatus.STALE, to="ready")
    with pytest.raises(NotAMove):
        move(file, "digest_status", DigestStatus.ERROR)  # a stale file is claimed (parsing) before it can fail
    assert ContextFile.objects.get(pk=file.pk).digest_status == DigestStatus.STALE, "nothing written"
    move(file, "digest_status", DigestStatus.PARSING)
    context_set = ContextSet.objects.get(session_id=sid)
    context_set.aggregate_digest_status = DigestStatus.READY
    with pytest.raises(NotAMove):
        move(context_set, "aggregate_digest_status", DigestStatus.PARSING)  # ready: stale first, then claimed
    ContextSet.objects.filter(pk=context_set.pk).update(aggregate_digest_status=DigestStatus.STALE)
    assert claim(  # from stale or error: both moves are listed
        ContextSet.objects.filter(pk=context_set.pk),
        field="aggregate_digest_status",
        not_from=[DigestStatus.READY, DigestStatus.PARSING],
        to=DigestStatus.PARSING,
    )
    with pytest.raises(NotAMove):  # "not from parsing" includes ready, which may not move to parsing
        claim(
            ContextSet.objects.filter(pk=context_set.pk),
            field="aggregate_digest_status",
            not_from=[DigestStatus.PARSING],
            to=DigestStatus.PARSING,
        )
