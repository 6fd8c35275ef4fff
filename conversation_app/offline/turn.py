"""Offline chat turns: what the `offline` provider answers to CHAT_TURN (SPEC §5, seed 003).

A documented product mode (it runs when no API key is configured), not a test
double. No language model, no randomness, no clock: the same prompt (under the same
embeddings setting) always gives the same JSON, and that JSON passes
prompts/schemas/chat_turn.schema.json.
CHAT_TURN (services.py) names `chat_turn` as its `offline_handler`, which registers
it with the offline provider (llm_platform.offline).

Its candidates are the sentences of the prompt's evidence chunks (the session's
best passages for the question and its artifacts) and of the context supplied for
this turn (candidates.py).

- The message has no content terms ("hi", "thanks"): a fixed sentence saying
  what the assistant does with this session.
- Unless a person supplied context for this turn, when one or two candidates
  answer the question (answering.py's `answer_scores`: what it asks for, the
  figures it names, enough of its rarer terms, close in meaning with embeddings
  on): the answer is those sentences in
  their own words, citing their SourceRefs or else their chunk's key (composing.py).
- When a person supplied context for this turn: what they gave (its best three
  sentences by shared terms), and nothing of the session's, which did not answer.
- Otherwise, when context was supplied for this turn (every slot skipped: it is
  never asked for twice), or the turn may not ask (`may_request` false: forced, or
  the request expired): the best three candidates by shared terms, after what of
  the message the session does not cover (so too after a person's supply, when
  the session covers below half of its terms).
- Otherwise: no answer, and `needs` (needs.py) ask a person for a note: on the
  terms the session never mentions, and saying which it does mention without
  answering; and for the document the message names unless the prompt
  carries it whole. A need is anchored to the most relevant report, findings or
  supply only when the prompt lacks part of it (omitted, cut or summarised by the
  token budget): the system attaches what it holds itself, and re-attaching what
  was read whole would keep the request from ever reaching a person.

A bare follow-up ("and in 2023?", turn_text.is_bare_follow_up) borrows the terms of
the previous user message in `history` (message.py).
"""

from __future__ import annotations

import re

from llm_platform.base import ProviderError
from llm_platform.extractive import covered_phrases, uncovered_phrases
from llm_platform.task_envelope import read_task

from ..turn_text import is_bare_follow_up
from .answering import answering_candidates, best_candidates
from .candidates import chunk_texts, collect_candidates, read_supplies
from .composing import compose_answer
from .message import IGNORED_TERMS, is_small_talk, message_terms, previous_user_message
from .needs import context_needs

ANSWER_COVERAGE = 0.5  # below this share of the message's terms, a supplied answer first says what the session lacks
GREETING = (
    "I answer questions about this session from its files, digests and reports, citing where each point comes "
    "from; when the session holds nothing on a question, I ask for the missing context instead of guessing."
)


def chat_turn(prompt: str) -> dict:
    """One chat turn from the prompt alone: an answer from the session's artifacts, or what to ask a person for."""
    _, inputs = read_task(prompt)
    message = inputs.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ProviderError("CHAT_TURN: INPUT_JSON has no message", retryable=False)
    message = re.sub(r"\s+", " ", message).strip()

    terms = message_terms(message)
    asked = message
    if is_bare_follow_up(message, len(terms)) and not is_small_talk(message):
        previous = previous_user_message(inputs.get("history"), message)
        if previous:
            terms = list(dict.fromkeys([*terms, *message_terms(previous)]))
            asked = f"{message}; {previous}"  # ";" keeps the two messages' phrases apart
    if not terms or is_small_talk(message):
        return {"answer": GREETING, "citations": [], "needs": []}

    supplied, resumed = read_supplies(inputs.get("supplied"))
    candidates = collect_candidates(chunk_texts(prompt), supplied)
    wanted = set(terms)
    # What the session mentions: its sentences' words and those of the headings they stand under ("Vendor
    # review: PagerDuty" mentions "vendor" though none of its sentences does).
    mentioned = set().union(*(c.terms | c.context for c in candidates)) if candidates else set()
    covered = wanted & mentioned
    coverage = len(covered) / len(wanted)
    uncovered = uncovered_phrases(asked, covered | IGNORED_TERMS)

    may_request = inputs.get("may_request") is not False
    given = [c for c in candidates if c.given]
    if given:
        # What a person gave for this question answers it. Nothing in the session did (else it would not have
        # been asked for), so the session's sentences that share a word with it are not glued on ("Staff: Grace
        # Mwangi (Executive Director)" to a salary given for "What is the executive director's salary?").
        return compose_answer(best_candidates(given, wanted), uncovered if coverage < ANSWER_COVERAGE else [])
    answering = answering_candidates(candidates, terms, asked)
    if answering:
        return compose_answer(answering, [])
    if resumed or not may_request:
        # Nothing answers: the closest sentences are no answer, and a reader is told which words none of them says
        # ("graduated" of "How many PhD students graduated last year?", whatever share of the rest they hold).
        return compose_answer(best_candidates(candidates, wanted), uncovered)
    mentioned = covered_phrases(asked, covered - IGNORED_TERMS)
    return {
        "answer": "",
        "citations": [],
        "needs": context_needs(message, uncovered, mentioned, candidates, wanted, prompt),
    }
