"""llm_platform.embeddings: the cache, the ledger, the checks, through the real openai SDK on loopback."""

import numpy as np
import pytest

from llm_platform import embeddings
from llm_platform.embeddings import gateway
from llm_platform.ledger import session_ledger
from llm_platform.models import LLMCall, TextEmbedding
from research_app.services import create_session
from tests.factories import make_member

pytestmark = pytest.mark.django_db


def test_vectors_come_back_in_order_normalised_and_every_call_is_in_the_ledger(remote_embeddings):
    user, _team = make_member()
    session = create_session(user=user, title="Ledger")
    texts = ["the pump failed at night", "valves were replaced", "the pump failed at night again"]

    vectors = embeddings.embed(texts, subject="file:x", session_id=session.pk)

    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[2] > vectors[0] @ vectors[1]  # shared words: nearer
    (call,) = LLMCall.objects.all()
    assert (call.task, call.provider, call.model, call.outcome) == ("embed", "openai", "text-embedding-3-small", "ok")
    assert call.input_tokens == sum(len(t.split()) for t in texts) and call.session_id == session.pk
    (line,) = [row for row in session_ledger(session)["by_task"] if row["task"] == "embed"]
    assert (line["calls"], line["input_tokens"], line["unpriced_calls"]) == (1, call.input_tokens, 0)


def test_a_text_embedded_once_is_never_sent_again(remote_embeddings):
    embeddings.embed(["alpha beta", "gamma delta"])
    first = embeddings.embed(["gamma delta", "alpha beta", "epsilon"])
    again = embeddings.embed(["epsilon", "alpha beta"])

    assert remote_embeddings.inputs == ["alpha beta", "gamma delta", "epsilon"]
    assert LLMCall.objects.filter(task="embed").count() == 2
    assert np.array_equal(first[2], again[0])
    assert TextEmbedding.objects.filter(model="openai:text-embedding-3-small").count() == 3


def test_texts_go_in_batches_of_the_configured_size(remote_embeddings, settings):
    settings.GROUNDWORK_EMBEDDINGS_BATCH_SIZE = 4
    embeddings.embed([f"text number {i}" for i in range(10)])
    assert remote_embeddings.calls == 3


@pytest.mark.parametrize(
    "mode, says",
    [
        ("down", "503"),
        ("html", "unusable answer"),
        ("nan", "NaN"),
        ("short", "asked for 2 vectors, got 1"),
    ],
)
def test_an_unusable_answer_is_refused_recorded_and_stored_nowhere(remote_embeddings, mode, says):
    remote_embeddings.mode = mode
    with pytest.raises(embeddings.EmbeddingsUnavailable, match=says):
        embeddings.embed(["one text", "another text"])
    assert TextEmbedding.objects.count() == 0
    (call,) = LLMCall.objects.all()
    assert call.task == "embed" and call.outcome == "failed" and call.error


def test_vectors_of_another_dimension_than_the_models_are_refused(remote_embeddings):
    embeddings.embed(["first text"])
    remote_embeddings.mode = "wide"
    with pytest.raises(embeddings.EmbeddingsUnavailable, match="96 dimensions, this model's have 64"):
        embeddings.embed(["second text"])


def test_after_a_failure_the_provider_is_left_alone_for_a_while(remote_embeddings):
    remote_embeddings.mode = "down"
    with pytest.raises(embeddings.EmbeddingsUnavailable):
        embeddings.embed(["x"])
    remote_embeddings.mode = "ok"
    with pytest.raises(embeddings.EmbeddingsUnavailable, match="failed moments ago"):
        embeddings.embed(["y"])
    assert remote_embeddings.calls == 1


def test_off_means_no_call(settings):
    settings.GROUNDWORK_EMBEDDINGS = "off"
    embeddings.reset_provider()
    assert not embeddings.enabled()
    with pytest.raises(embeddings.EmbeddingsUnavailable, match="off"):
        embeddings.embed(["x"])


def test_warm_up_builds_the_provider_before_any_search(remote_embeddings):
    embeddings.reset_provider()
    assert gateway._provider == {}

    embeddings.warm_up().join(timeout=30)

    assert set(gateway._provider) == {"openai"} and remote_embeddings.inputs == []


def test_warm_up_with_embeddings_off_does_nothing(settings):
    settings.GROUNDWORK_EMBEDDINGS = "off"
    embeddings.reset_provider()

    assert embeddings.warm_up() is None and gateway._provider == {}
