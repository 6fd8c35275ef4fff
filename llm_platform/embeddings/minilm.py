"""The `local` embedding model: all-MiniLM-L6-v2 in-process, on the CPU, with nothing fetched at run time.

384 dimensions, mean pooling, L2-normalised rows, as sentence-transformers computes them; texts
longer than 256 tokens (with [CLS] and [SEP]) are truncated, as there. `windows()` cuts a long
text into spans the model takes whole, by character offsets, so callers can cite what they embed.

    model = load_minilm()          # once per process: ~90 MB of weights, checked by sha256
    vectors = model.encode(texts)  # (n, 384) float32
"""

from __future__ import annotations

import threading

import numpy as np
from tokenizers import Encoding, Tokenizer

from .bert import BertEncoder
from .weights import load_model_files

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model, [CLS] and [SEP] included
# Texts are sorted by length and run in groups of at most this many tokens (padding included):
# big enough for BLAS to use both cores well, small enough for the attention scores to stay in cache.
TOKENS_PER_BATCH = 4096
MAX_BATCH = 64


class MiniLM:
    model_name = MODEL_NAME
    dimensions = 384
    max_tokens = MAX_TOKENS

    def __init__(self, encoder: BertEncoder, tokenizer: Tokenizer):
        self._encoder = encoder
        # tokenizer.json ships with fixed padding to 128 and truncation at 128: neither is ours.
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer
        self._plain = Tokenizer.from_str(tokenizer.to_str())  # untruncated: to count and cut long texts
        self._plain.no_truncation()

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as the model sees them, [CLS] and [SEP] included, before truncation."""
        return len(self._plain.encode(text).ids)

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), 384) float32, one unit vector per text."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        for group in length_groups([len(e.ids) for e in encodings]):
            ids, mask = pad([encodings[i] for i in group])
            out[group] = self._encoder.embed(ids, mask)
        return out

    def windows(self, text: str, max_tokens: int = MAX_TOKENS, stride_tokens: int = 16) -> list[tuple[int, int]]:
        """Character spans (start, end) of `text` that each fit the model (`max_tokens` with [CLS] and
        [SEP]) and together cover every token of it. A window ends at a word boundary, at a sentence's
        end when one is near the limit; the next one then starts `stride_tokens` earlier (overlap),
        or right after it when it ended a sentence."""
        if max_tokens < 3:
            raise ValueError("max_tokens must leave room for [CLS], [SEP] and one token")
        encoding = self._plain.encode(text, add_special_tokens=False)
        return token_windows(encoding, text, max_tokens - 2, stride_tokens)


def length_groups(lengths: list[int]) -> list[list[int]]:
    """Indices grouped by similar length (sorted), each group's padded size within TOKENS_PER_BATCH:
    sorting first means little padding, so little work spent on [PAD]."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups and len(groups[-1]) < MAX_BATCH and (len(groups[-1]) + 1) * lengths[i] <= TOKENS_PER_BATCH:
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


SENTENCE_ENDS = frozenset(".!?;:…。！？")
LOOK_BACK = 0.25  # a window may give up this share of its tokens to end at a sentence's end


def token_windows(encoding: Encoding, text: str, size: int, stride: int) -> list[tuple[int, int]]:
    """Windows of at most `size` tokens over an encoding without special tokens, as character spans."""
    offsets, tokens = encoding.offsets, encoding.tokens
    # A cut between two tokens is safe only between words: a text that starts inside a word
    # ("##ing") would be tokenised again differently, perhaps into more tokens.
    word_start = [i == 0 or not tokens[i].startswith("##") for i in range(len(tokens))]
    spans, start = [], 0
    while start < len(tokens):
        end = min(start + size, len(tokens))
        at_sentence_end = end == len(tokens)
        if not at_sentence_end:
            end, at_sentence_end = best_cut(start, end, offsets, text, word_start, size)
        spans.append((offsets[start][0], offsets[end - 1][1]))
        if end == len(tokens):
            break
        start = end if at_sentence_end else next_start(start, end, stride, word_start)
    return spans


def best_cut(start: int, limit: int, offsets, text: str, word_start: list[bool], size: int) -> tuple[int, bool]:
    """The token index to end a window before (and whether it ends a sentence), at most `limit`."""
    floor = max(start + 1, limit - int(size * LOOK_BACK))
    for end in range(limit, floor - 1, -1):
        last = text[offsets[end - 1][0] : offsets[end - 1][1]]
        spaced = offsets[end][0] > offsets[end - 1][1]  # "3.14" is no sentence end
        if word_start[end] and spaced and last and last[-1] in SENTENCE_ENDS:
            return end, True
    for end in range(limit, start, -1):
        if word_start[end]:
            return end, False
    return limit, False  # one word longer than a window: WordPiece caps a word at 100 characters, so rare


def next_start(start: int, end: int, stride: int, word_start: list[bool]) -> int:
    """Where the next window starts: `stride` tokens before `end`, moved forward to a word's start,
    and always after `start` so that the windows advance."""
    candidate = max(start + 1, end - stride)
    while candidate < end and not word_start[candidate]:
        candidate += 1
    return candidate


_lock = threading.Lock()
_model: MiniLM | None = None


def load_minilm() -> MiniLM:
    """The process's one MiniLM, loaded on first use (a second or two), the same one for every thread."""
    global _model
    with _lock:
        if _model is None:
            files = load_model_files()
            _model = MiniLM(BertEncoder(files.weights), Tokenizer.from_str(files.tokenizer_json))
        return _model


def windows(text: str, max_tokens: int = MAX_TOKENS, stride_tokens: int = 16) -> list[tuple[int, int]]:
    """`MiniLM.windows` of the process's model."""
    return load_minilm().windows(text, max_tokens, stride_tokens)
