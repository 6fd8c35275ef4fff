"""Cutting a long text into windows the embedding model takes whole, as character spans of the text.

Callers cite what they embed by character offsets into a file's text, so a window is a (start, end)
span of the original string, from the tokenizer's offsets, never a rebuilt string. A window breaks
between tokens, at a word boundary, and at a sentence's end when one is near the limit.
"""

from __future__ import annotations

from collections.abc import Callable

from tokenizers import Encoding

SENTENCE_ENDS = frozenset(".!?;:…。！？")
LOOK_BACK = 0.25  # a window may give up this share of its tokens to end at a sentence's end


def token_windows(
    encoding: Encoding, text: str, size: int, stride: int, fits: Callable[[str], bool]
) -> list[tuple[int, int]]:
    """Spans of at most `size` tokens over `encoding` (of `text`, without special tokens). Consecutive
    windows share `stride` tokens, unless the first ended a sentence. `fits(span_text)` has the last
    word: a span is tokenised again on its own, and one that starts or ends inside a word ("##ing")
    can come out longer than the tokens it was cut from."""
    offsets = encoding.offsets
    word_start = [i == 0 or not token.startswith("##") for i, token in enumerate(encoding.tokens)]
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(offsets):
        end, ends_sentence = len(offsets), True
        if start + size < len(offsets):
            end, ends_sentence = best_cut(start, start + size, offsets, text, word_start, size)
        while end > start + 1 and not fits(text[offsets[start][0] : offsets[end - 1][1]]):
            end, ends_sentence = end - 1, False
        spans.append((offsets[start][0], offsets[end - 1][1]))
        if end == len(offsets):
            break
        start = end if ends_sentence else next_start(start, end, stride, word_start)
    return spans


def best_cut(start: int, limit: int, offsets, text: str, word_start: list[bool], size: int) -> tuple[int, bool]:
    """The token index to end a window before, at most `limit`, and whether the window ends a sentence."""
    floor = max(start + 1, limit - int(size * LOOK_BACK))
    for end in range(limit, floor - 1, -1):
        last = text[offsets[end - 1][0] : offsets[end - 1][1]]
        spaced = offsets[end][0] > offsets[end - 1][1]  # "3.14" or "e.g" is no sentence end
        if word_start[end] and spaced and last[-1:] in SENTENCE_ENDS:
            return end, True
    for end in range(limit, start, -1):
        if word_start[end]:
            return end, False
    return limit, False  # one word longer than the window (WordPiece words are at most 100 characters)


def next_start(start: int, end: int, stride: int, word_start: list[bool]) -> int:
    """`stride` tokens before `end`, moved forward to a word's start; always after `start`, so windows advance."""
    candidate = max(start + 1, end - stride)
    while candidate < end and not word_start[candidate]:
        candidate += 1
    return candidate
