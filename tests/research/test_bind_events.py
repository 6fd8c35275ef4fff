"""The bind phase's per-file events (SPEC §4): the counters of one event agree with each other."""

import pytest

from context_app import services as context_services
from context_app.models import ContextFile, ContextSet, DigestStatus
from research_app.models import ResearchRun
from research_app.runs import engine
from research_app.services import create_session
from tests.factories import make_member
from tests.research.test_research_runs import QUESTION, SURVEY, VALVES

pytestmark = pytest.mark.django_db(transaction=True)

COUNTERS = ("files_done", "files_total", "files_ready", "files_error")


@pytest.fixture
def session():
    session = create_session(user=make_member()[0], title="Valve review", question=QUESTION)
    context_services.upload_files(
        ContextSet.objects.get(session=session),
        [
            context_services.Upload("valves.md", VALVES.encode()),
            context_services.Upload("survey.txt", SURVEY.encode()),
            context_services.Upload("notes.md", b"# Notes\n\nThe pumps were serviced in May 2022.\n"),
        ],
    )
    return session


def binding_run(session) -> ResearchRun:
    return ResearchRun.objects.create(
        session=session,
        question=QUESTION,
        status=ResearchRun.Status.BINDING,
        max_depth=0,
        max_children=1,
        max_nodes=1,
        token_budget=1000,
        context_processing={"status": "parsing", "files_total": 3, "files_ready": 0, "files_error": 0},
    )


def finish(session, filename: str, status: str) -> None:
    ContextFile.objects.filter(context_set__session=session, filename=filename).update(digest_status=status)


def file_events(run) -> list[dict]:
    events = run.events.filter(type="context_binding_parsing_file_completed").order_by("seq")
    return [{k: e.payload[k] for k in ("filename", "status", *COUNTERS)} for e in events]


def test_files_finishing_together_are_told_one_by_one_with_counters_that_agree(session):
    """Regression: the second file was written before the first file's event was stored,
    which said `files_done 1` next to `files_ready 2`."""
    run = binding_run(session)
    finish(session, "valves.md", DigestStatus.READY)
    finish(session, "survey.txt", DigestStatus.ERROR)
    finish(session, "notes.md", DigestStatus.READY)  # all three written before any event
    for filename, status in (("valves.md", "ready"), ("survey.txt", "error"), ("notes.md", "ready")):
        engine.file_parsed_during_bind(session.pk, filename, status)

    assert file_events(run) == [
        {
            "filename": "valves.md",
            "status": "ready",
            "files_done": 1,
            "files_total": 3,
            "files_ready": 1,
            "files_error": 0,
        },
        {
            "filename": "survey.txt",
            "status": "error",
            "files_done": 2,
            "files_total": 3,
            "files_ready": 1,
            "files_error": 1,
        },
        {
            "filename": "notes.md",
            "status": "ready",
            "files_done": 3,
            "files_total": 3,
            "files_ready": 2,
            "files_error": 1,
        },
    ]


def test_a_file_parsed_again_during_the_bind_is_counted_once(session):
    run = binding_run(session)
    finish(session, "valves.md", DigestStatus.ERROR)
    engine.file_parsed_during_bind(session.pk, "valves.md", "error")
    finish(session, "valves.md", DigestStatus.READY)  # replaced and parsed again while the run binds
    engine.file_parsed_during_bind(session.pk, "valves.md", "ready")
    finish(session, "survey.txt", DigestStatus.READY)
    engine.file_parsed_during_bind(session.pk, "survey.txt", "ready")
    # A file whose digest was dropped (it changed while parsed) is not finished: nothing to tell.
    engine.file_parsed_during_bind(session.pk, "notes.md", "parsing")

    events = file_events(run)
    assert [(e["filename"], e["files_done"], e["files_ready"], e["files_error"]) for e in events] == [
        ("valves.md", 1, 0, 1),
        ("valves.md", 1, 1, 0),
        ("survey.txt", 2, 2, 0),
    ]
    assert all(e["files_done"] == e["files_ready"] + e["files_error"] <= e["files_total"] for e in events)
