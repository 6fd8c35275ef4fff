"""The `local` embedding model: all-MiniLM-L6-v2 in-process, on the CPU, with nothing fetched at run time.

384 dimensions, mean pooling, L2-normalised rows, as sentence-transformers computes them; texts
longer than 256 tokens (with [CLS] and [SEP]) are truncated, as there (the library cuts its
records into windows of 96 words, context_app.meaning: 0.5 % of the man-page corpus's windows
pass 256 tokens and lose their tail).

    model = load_minilm()          # once per process: ~90 MB of weights, checked by sha256
    vectors = model.encode(texts)  # (n, 384) float32
"""

from __future__ import annotations

import threading

import numpy as np
import onnxruntime
from tokenizers import Encoding, Tokenizer

from .graph import build_session
from .weights import load_model_files

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model, [CLS] and [SEP] included
# Texts are sorted by length and run in groups of at most this many tokens (padding included).
# Throughput hardly depends on it from 4 to 16 windows of 240 tokens a run (bench/embed_bench.py),
# but onnxruntime keeps the memory its largest run needed: ~100 MiB for 1024 tokens, ~200 for 2048.
TOKENS_PER_BATCH = 1024
MAX_BATCH = 64


class MiniLM:
    model_name = MODEL_NAME
    dimensions = 384
    max_tokens = MAX_TOKENS

    def __init__(self, session: onnxruntime.InferenceSession, tokenizer: Tokenizer):
        self._session = session
        # tokenizer.json ships with fixed padding to 128 and truncation at 128: neither is ours.
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer
        self._plain = Tokenizer.from_str(tokenizer.to_str())  # untruncated: to count long texts
        self._plain.no_truncation()

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as the model sees them, [CLS] and [SEP] included, before truncation."""
        return len(self._plain.encode(text).ids)

    def encode(self, texts: list[str], tokens_per_batch: int = TOKENS_PER_BATCH) -> np.ndarray:
        """(len(texts), 384) float32, one unit vector per text."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        for group in length_groups([len(e.ids) for e in encodings], tokens_per_batch):
            ids, mask = pad([encodings[i] for i in group])
            out[group] = self._embed(ids, mask)
        return out

    def _embed(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean of the last layer over the real tokens (not [PAD]), then L2-normalised."""
        inputs = {
            "input_ids": ids,
            "position_ids": np.arange(ids.shape[1], dtype=np.int64),
            "attention_bias": ((1.0 - mask) * np.float32(-1e9))[:, None, None, :],
        }
        (hidden,) = self._session.run(["hidden"], inputs)
        pooled = np.einsum("nld,nl->nd", hidden, mask) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def length_groups(lengths: list[int], tokens_per_batch: int) -> list[list[int]]:
    """Indices grouped by similar length (sorted), each group's padded size within `tokens_per_batch`:
    sorting first means little padding, so little work spent on [PAD]."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups and len(groups[-1]) < MAX_BATCH and (len(groups[-1]) + 1) * lengths[i] <= tokens_per_batch:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def pad(encodings: list[Encoding]) -> tuple[np.ndarray, np.ndarray]:
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask = np.zeros((len(encodings), length), dtype=np.float32)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1.0
    return ids, mask


_lock = threading.Lock()
_model: MiniLM | None = None


def load_minilm() -> MiniLM:
    """The process's one MiniLM, loaded on first use (a second or two), the same one for every thread."""
    global _model
    with _lock:
        if _model is None:
            files = load_model_files()
            _model = MiniLM(build_session(files.weights), Tokenizer.from_str(files.tokenizer_json))
        return _model
