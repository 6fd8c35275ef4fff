"""Library search finds the hand-labelled answer section in the top 5 for at least 80 % of questions."""

import pytest

from bench.retrieval_quality import corpus_files, evaluate
from context_app import library
from context_app.models import LibraryRecord
from tests.factories import ContextApi, extract_uploads, make_member
from workspaces.models import ResearchSession
from workspaces.services import team_cache_scope

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.figure]


def test_recall_at_5_on_the_python_docs_corpus():
    api = ContextApi(make_member()[0])
    sid = api.create_session("Python docs")
    files = corpus_files()
    response = api.upload(sid, files)
    assert response.status_code == 201, response.content
    extract_uploads()
    scope = team_cache_scope(ResearchSession.objects.get(pk=sid).team)
    assert LibraryRecord.objects.filter(scope=scope).values("file").distinct().count() == len(files) == 22
    assert LibraryRecord.objects.filter(scope=scope).count() >= 30

    def search(question):
        return [(hit.filename, hit.parent_heading) for hit in library.search(scope, question, limit=10).hits]

    result = evaluate(search, k=5)
    misses = [q for q in result["per_question"] if not q["rank"] or q["rank"] > 5]
    assert result["recall_at_5"] >= 0.8, misses
