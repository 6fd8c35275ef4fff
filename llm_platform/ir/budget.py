"""The degrade ladder (seed 004 "Token Budgeting"): fit an envelope into a token limit.

Stages, each applied one step at a time and only as far as needed:
    0  everything fits
    1  the low-ranked half of the chunks is reduced to its header ("[omitted]")
    2  the remaining chunks except the best one become extractive summaries
    3  top-K: omitted headers, then attachments, then chunks are dropped
       lowest-ranked first, down to the single best chunk
    4  the best chunk is hard-truncated at a paragraph/sentence boundary
       (a word boundary only if no sentence fits), marked "[truncated]"
    5  the Context Index and the task only

Invariants: the index and the task are never cut (if they alone exceed the
limit the result is stage 5 with `budget.over_limit`); every chunk left cites a
source in the index; every cut is recorded; the same input gives the same output.

Cost model: the sum of the counter over the rendered parts (see render.py),
plus one token per separator, plus each included attachment's estimate. With
`estimate_tokens` this is an upper bound of counting the whole rendered text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from llm_platform.ir.render import NO_CONTENT_NOTE, render_chunk, render_head, render_task
from llm_platform.ir.tokens import estimate_tokens
from llm_platform.ir.types import AttachmentManifest, BudgetCut, BudgetState, Chunk, ContextEnvelope

LOW_RANK_FRACTION = 0.5  # stage 1 treats the lower half of the ranking as low-ranked
SUMMARY_MAX_SENTENCES = 3
SUMMARY_MAX_CHARS = 600
SUMMARY_PREFIX = "[extractive summary]"
SEPARATOR_TOKENS = 1

_SENTENCE_END_RE = re.compile(r"[.!?][\"')\]]*(?=\s|$)")
_WORD_END_RE = re.compile(r"\S(?=\s|$)")


def extractive_summary(text: str, anchor: str) -> str:
    """The first sentences of the first paragraph, marked as an extractive summary.

    Deterministic and model-free: up to three sentences, capped at
    SUMMARY_MAX_CHARS on a word boundary, then a pointer to the full content.
    """
    paragraph = next((p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()), "")
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(paragraph)]
    summary = paragraph[: ends[SUMMARY_MAX_SENTENCES - 1]] if len(ends) >= SUMMARY_MAX_SENTENCES else paragraph
    if len(summary) > SUMMARY_MAX_CHARS:
        summary = truncate_at_word(summary, SUMMARY_MAX_CHARS) + " …"
    summary = " ".join(summary.split())
    return f"{SUMMARY_PREFIX} {summary} [see {anchor} for full content]"


def truncate_at_word(text: str, max_chars: int) -> str:
    """The longest prefix of at most max_chars that ends at a word end (never mid-word)."""
    ends = [m.end() for m in _WORD_END_RE.finditer(text) if m.end() <= max_chars]
    return text[: ends[-1]] if ends else ""


def boundary_prefixes(text: str) -> tuple[list[str], list[str]]:
    """Candidate truncations, shortest first: (paragraph/sentence ends, word ends)."""
    sentence_ends = {m.end() for m in _SENTENCE_END_RE.finditer(text)}
    sentence_ends |= {m.start() for m in re.finditer(r"\n\s*\n", text)}
    word_ends = {m.end() for m in _WORD_END_RE.finditer(text)}
    by_sentence = [text[:i].rstrip() for i in sorted(sentence_ends) if text[:i].strip()]
    by_word = [text[:i].rstrip() for i in sorted(word_ends) if text[:i].strip()]
    return by_sentence, by_word


def longest_fitting_prefix(prefixes: Sequence[str], fits: Callable[[str], bool]) -> str | None:
    """The longest of `prefixes` (shortest first, cost growing with length) that `fits`, by binary search."""
    low, high, found = 0, len(prefixes) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if fits(prefixes[middle]):
            found, low = prefixes[middle], middle + 1
        else:
            high = middle - 1
    return found


class _Ladder:
    """One fitting run; mutable working state over an immutable envelope."""

    def __init__(self, envelope: ContextEnvelope, counter: Callable[[str], int]):
        self.envelope = envelope
        self.counter = counter
        self.sources = {s.id: s for s in envelope.sources}
        self.chunks: list[Chunk] = list(envelope.chunks)
        self.attachments: list[AttachmentManifest] = list(envelope.attachments)
        self.cuts: list[BudgetCut] = []
        self.stage = 0
        self._chunk_costs: dict[Chunk, int] = {}
        # The head marks sources whose binaries are still attached, so it is
        # re-counted (memoised) when stage 3 or 5 drops an attachment.
        self._head_costs: dict[frozenset[str], int] = {}
        self._task = counter(render_task(envelope.task)) + SEPARATOR_TOKENS
        self._no_content = counter(NO_CONTENT_NOTE) + SEPARATOR_TOKENS
        # Running sum of the chunks' costs: the ladder asks for the total after every step.
        self._content_total = sum(self.chunk_cost(c) for c in self.chunks)

    def chunk_cost(self, chunk: Chunk) -> int:
        if chunk not in self._chunk_costs:
            self._chunk_costs[chunk] = (
                self.counter(render_chunk(chunk, self.sources.get(chunk.source_id))) + SEPARATOR_TOKENS
            )
        return self._chunk_costs[chunk]

    def head_cost(self) -> int:
        attached = frozenset(a.source_id for a in self.attachments if a.included)
        if attached not in self._head_costs:
            self._head_costs[attached] = self.counter(render_head(self.envelope, attached))
        return self._head_costs[attached]

    def set_chunk(self, i: int, chunk: Chunk) -> None:
        self._content_total += self.chunk_cost(chunk) - self.chunk_cost(self.chunks[i])
        self.chunks[i] = chunk

    def pop_chunk(self, i: int) -> Chunk:
        chunk = self.chunks.pop(i)
        self._content_total -= self.chunk_cost(chunk)
        return chunk

    def cost(self) -> int:
        content = self._content_total if self.chunks else self._no_content
        return self.head_cost() + self._task + content + sum(a.tokens for a in self.attachments if a.included)

    def cut(self, what: str, anchor: str, saved: int, reason: str) -> None:
        self.cuts.append(BudgetCut(self.stage, what, anchor, saved, reason))  # type: ignore[arg-type]

    # -- stages --------------------------------------------------------------

    def stage1_omit_low_ranked(self, limit: int) -> bool:
        keep = max(1, math.ceil(len(self.chunks) * (1 - LOW_RANK_FRACTION)))
        return self.shrink_chunks(
            limit,
            range(len(self.chunks) - 1, keep - 1, -1),
            lambda chunk: replace(chunk, omitted=True),
            "chunk_removed",
            "low-ranked chunk reduced to its header",
        )

    def stage2_summarize(self, limit: int) -> bool:
        def summarized(chunk: Chunk) -> Chunk | None:
            if chunk.omitted or chunk.summarized:
                return None
            text = extractive_summary(chunk.text, chunk.anchor)
            return replace(chunk, text=text, tokens=self.counter(text), summarized=True)

        # the best chunk (i == 0) stays whole
        return self.shrink_chunks(
            limit, range(len(self.chunks) - 1, 0, -1), summarized, "summarized", "replaced by an extractive summary"
        )

    def shrink_chunks(
        self, limit: int, order: Iterable[int], smaller: Callable[[Chunk], Chunk | None], what: str, reason: str
    ) -> bool:
        """Puts `smaller(chunk)` in place of each chunk, in `order`, where it saves tokens (None: leave it),
        until the envelope fits `limit`; True once it does."""
        for i in order:
            chunk = self.chunks[i]
            cheaper = smaller(chunk)
            if cheaper is None:
                continue
            saved = self.chunk_cost(chunk) - self.chunk_cost(cheaper)
            if saved <= 0:
                continue
            self.set_chunk(i, cheaper)
            self.cut(what, chunk.anchor, saved, reason)
            if self.cost() <= limit:
                return True
        return False

    def stage3_top_k(self, limit: int) -> bool:
        for i in range(len(self.chunks) - 1, -1, -1):
            if self.chunks[i].omitted:
                chunk = self.pop_chunk(i)
                self.cut("chunk_removed", chunk.anchor, self.chunk_cost(chunk), "omitted header dropped (top-K)")
                if self.cost() <= limit:
                    return True
        for i in range(len(self.attachments) - 1, -1, -1):
            attachment = self.attachments[i]
            if attachment.included:
                self.attachments[i] = replace(attachment, included=False)
                self.cut("attachment_removed", attachment.anchor, attachment.tokens, "attachment dropped (top-K)")
                if self.cost() <= limit:
                    return True
        while len(self.chunks) > 1:
            chunk = self.pop_chunk(len(self.chunks) - 1)
            self.cut("chunk_removed", chunk.anchor, self.chunk_cost(chunk), "chunk dropped (top-K)")
            if self.cost() <= limit:
                return True
        return False

    def stage4_truncate(self, limit: int) -> bool:
        if not self.chunks:
            return False
        best = self.chunks[0]
        for candidates in boundary_prefixes(best.text):
            fitting = self._longest_fitting(best, candidates, limit)
            if fitting is not None:
                saved = self.chunk_cost(best) - self.chunk_cost(fitting)
                self.set_chunk(0, fitting)
                self.cut("chunk_truncated", best.anchor, saved, "truncated at a boundary")
                return True
        return False

    def _longest_fitting(self, chunk: Chunk, prefixes: list[str], limit: int) -> Chunk | None:
        rest = self.cost() - self.chunk_cost(chunk)

        def cut(text: str) -> Chunk:
            return replace(chunk, text=text, truncated=True, tokens=self.counter(text))

        text = longest_fitting_prefix(prefixes, lambda t: t != chunk.text and rest + self.chunk_cost(cut(t)) <= limit)
        return None if text is None else cut(text)

    def stage5_minimal(self) -> None:
        for chunk in self.chunks:
            self.cut("chunk_removed", chunk.anchor, self.chunk_cost(chunk), "only the index and the task fit")
        self.chunks = []
        self._content_total = 0
        for i, attachment in enumerate(self.attachments):
            if attachment.included:
                self.attachments[i] = replace(attachment, included=False)
                self.cut("attachment_removed", attachment.anchor, attachment.tokens, "only the index and the task fit")

    def run(self, limit: int) -> ContextEnvelope:
        steps = (self.stage1_omit_low_ranked, self.stage2_summarize, self.stage3_top_k, self.stage4_truncate)
        if self.cost() > limit:
            for stage, step in enumerate(steps, start=1):
                self.stage = stage
                if step(limit):
                    break
            else:
                self.stage = 5
                self.stage5_minimal()
        return self.result(limit)

    def result(self, limit: int) -> ContextEnvelope:
        budget = BudgetState(limit=limit, used=self.cost(), stage=self.stage, cuts=tuple(self.cuts))
        return replace(self.envelope, chunks=tuple(self.chunks), attachments=tuple(self.attachments), budget=budget)


def envelope_cost(envelope: ContextEnvelope, counter: Callable[[str], int] = estimate_tokens) -> int:
    """Tokens the envelope costs as it stands (the budget's cost model)."""
    return _Ladder(envelope, counter).cost()


def fit_to_budget(
    envelope: ContextEnvelope, limit_tokens: int, counter: Callable[[str], int] = estimate_tokens
) -> ContextEnvelope:
    """The envelope cut down the degrade ladder until it fits `limit_tokens`; budget records how."""
    if isinstance(limit_tokens, bool) or not isinstance(limit_tokens, int) or limit_tokens < 0:
        raise ValueError(f"token limit must be a non-negative integer, got {limit_tokens!r}")
    return _Ladder(envelope, counter).run(limit_tokens)


def stage_costs(envelope: ContextEnvelope, counter: Callable[[str], int] = estimate_tokens) -> dict[int, int]:
    """The cost after each stage is fully applied: the limits at which each stage suffices.

    {0: full, 1: after stage 1, 2: after 2, 3: after 3, 4: smallest truncation, 5: index + task}.
    A limit >= costs[k] and < costs[k-1] ends at stage k (when stage k changes anything).
    """
    ladder = _Ladder(envelope, counter)
    costs = {0: ladder.cost()}
    ladder.stage = 1
    ladder.stage1_omit_low_ranked(-1)
    costs[1] = ladder.cost()
    ladder.stage = 2
    ladder.stage2_summarize(-1)
    costs[2] = ladder.cost()
    ladder.stage = 3
    ladder.stage3_top_k(-1)
    costs[3] = ladder.cost()
    if ladder.chunks:
        best = ladder.chunks[0]
        by_sentence, by_word = boundary_prefixes(best.text)
        shortest = (by_word or by_sentence or [best.text])[0]
        candidate = replace(best, text=shortest, truncated=True)
        costs[4] = costs[3] - ladder.chunk_cost(best) + ladder.chunk_cost(candidate)
    else:
        costs[4] = costs[3]
    ladder.stage5_minimal()
    costs[5] = ladder.cost()
    return costs
