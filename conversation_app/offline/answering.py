"""Which candidates answer the question: those that could (llm_platform.answer_types), that hold enough of the
question's terms, each weighted by its rarity, and, with embeddings, that are close to it in meaning (or
closer still, saying the rest of its terms in other words), the two blended into one score that ranks them
(`answer_scores`); the best of them are quoted (`answering_candidates`). When none does and the turn may not
ask, the best candidates by shared terms are used instead (`best_candidates`).

The meaning is the embedded default's (llm_platform.embeddings: the local model, or the configured
server); with embeddings off or unavailable, terms decide alone. bench/chat_bench.py tries other values
of the constants below on the labelled set's tuning part.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from extraction.blocks import SECTION_PATH_SEPARATOR
from llm_platform import embeddings
from llm_platform.answer_types import (
    FIGURE,
    WHY,
    answer_type_terms,
    asks_answer_type,
    asks_for_money,
    case_figures,
    dating_heading,
    held_figures,
    holds_answer_type,
    holds_figures,
    holds_flags,
    is_figure_term,
    is_year,
    question_names,
    written_figures,
)
from llm_platform.prose import csv_row_fields
from llm_platform.sourcerefs import REF_GROUP
from llm_platform.terms import (
    BACK_REFERENCES,
    DEMONSTRATIVE_NOUN,
    QUOTATION,
    WORD,
    base_term,
    content_terms,
    initialism_terms,
    noun_verbs,
    stem,
    term_sequence,
    unit_names,
)

from ..turn_text import sentence_key
from .candidates import Candidate

# Calibrated on bench/chat_quality.py's labelled set, its tuning part alone (bench/results/chat.json); see
# docs/decisions.md.
ANSWER_SCORE = 0.5  # without embeddings: the weighted share of the question's terms a sentence must hold
# With embeddings (llm_platform.embeddings) a sentence answers when it holds MEANING_SCORE of those terms, its
# cosine with the question (of the sentence alone or with the one before it) is ANSWER_SIMILARITY, and its
# score, MEANING_WEIGHT × that cosine + (1 − MEANING_WEIGHT) × the share, reaches ANSWER_BLEND; the
# answering ones are ranked by that score. The tuning part chose the two floors and the mean, with no further
# threshold on it: no blend tried beat them there (docs/decisions.md, 2026-11-27).
MEANING_SCORE = 0.5
ANSWER_SIMILARITY = 0.4
# … or it holds fewer of them, at least one, the others being words no candidate uses, and its cosine alone
# (not under its heading, which every sentence of a section shares) reaches MEANING_ALONE: the files say it in
# other words ("The council announces decisions in June" for "When will we hear back from the council?"). A word
# the files do use, for another thing, is no rewording ("day" of "the day crew?" beside "the night crew …").
# The tuning part was the same for 0.5 to 0.6 (docs/decisions.md, 2026-12-01).
MEANING_ALONE = 0.55
MEANING_WEIGHT = 0.5
ANSWER_BLEND = 0.0
CONTEXT_WEIGHT = 0.4  # a term only in the sentence's section heading or the sentence before counts this much
# … unless the sentence holds the amount of money the question asks for: "The total award is £2.4 million" under
# "Grant summary … > Budget" answers "How much is the grant worth?", its subject said by its heading, as the
# sentences of a section leave it unsaid. (Not a date or a count, which a sentence under such a heading holds
# whatever it says: answer_types.asks_for_money.)
# Added to a sentence's score for the share of the question's neighbouring term pairs it says side by side
# ("counts matching lines" of "a count of matching lines", not of "--invert-match …, count non-matching
# lines"): of two sentences that hold the same terms, the one that says them as the question does ranks first.
PROXIMITY_WEIGHT = 0.1
MAX_ANSWERING = 2  # sentences an answer quotes: the answering one, and a second that also answers
SECOND_RATIO = 0.9  # … as well, nearly: its score is at least this share of the first's (else it is glued on)
MAX_ANSWER_SENTENCES = 3  # sentences an answer quotes when none answers on its own (best_candidates)
# A section the question asks about as a whole answers with its sentences (`section_answer`): its heading path
# holds this share of the question's terms, weighted by rarity ("action items from the ops meeting" of
# "ops-meeting.txt › … > Actions"), and it holds at most this many sentences (a list, not a chapter).
SECTION_SHARE = 0.75
MAX_SECTION_SENTENCES = 6


def answering_candidates(candidates: list[Candidate], terms: list[str], question: str) -> list[Candidate]:
    """The sentences that answer `question` on their own, best first (at most MAX_ANSWERING, each scoring at
    least SECOND_RATIO of the best), or those of the section it asks about (`section_answer`); [] when none
    does. A sentence that one chosen before holds, or that holds it (a record's description and the record),
    is not said twice. Nor is a sentence that holds none of the question's terms beside the first under the
    same heading: it says another thing the heading is about ("Item: Sequencing; Amount (£): 520,000" beside
    "The total award is £2.4 million" under "Grant summary > Budget", for "How much is the grant worth?"), nor
    a table's row that lacks a term of the question the first answering row says: it is another row."""
    distinct: dict[str, Candidate] = {}
    scored = answer_scores(candidates, terms, question)
    first_heading = scored[0][1].heading if scored else ""
    asked = set(terms)
    # "Bitch spay (laparoscopic)" beside "Bitch spay (open)" for "How much is an open bitch spay?".
    first_row_says = asked & scored[0][1].terms if scored and _is_row(scored[0][1]) else None
    for score, candidate in scored:
        key = sentence_key(candidate.text)
        own = candidate.terms | candidate.answers  # what it says, and the question its FAQ heading asks
        sibling = distinct and (
            (first_heading and candidate.heading == first_heading and not own & asked)
            or (first_row_says and _is_row(candidate) and first_row_says - own)
        )
        if (
            score >= SECOND_RATIO * scored[0][0]
            and not sibling
            and not any(key in said or said in key for said in distinct)
        ):
            distinct[key] = candidate
    answering = list(distinct.values())[:MAX_ANSWERING]
    return section_answer(candidates, terms, question, answering) or answering


def section_answer(
    candidates: list[Candidate], terms: list[str], question: str, answering: list[Candidate]
) -> list[Candidate]:
    """The sentences, in the file's order, of the section the question asks about as a whole: "What are the
    risks with our carriers?" of "carrier-review.docx › Carrier performance review > Risks", "What are the
    action items from the ops meeting?" of "ops-meeting.txt › Operations meeting > Actions". Its heading path
    holds the question's first term, which names what it asks about (not "What is our budget for agency
    staff?" of "… > Agency staff"), and SECTION_SHARE of its terms, each weighted by its rarity; its innermost
    heading holds at least one; it holds two to MAX_SECTION_SENTENCES sentences, the list the question asks
    for. [] for a question that asks for a kind of answer (a date, an amount, a name: one sentence holds it),
    and when the sentence that answers on its own (`answering`'s first) stands under another heading, unless
    the innermost heading names every term ("How do I enrol?" of "… > How to enrol", not the dates of
    enrolment said above it). Of several such sections, the one whose innermost heading the question names
    most of."""
    if not terms or asks_answer_type(question):
        return []
    sections: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        if candidate.heading:  # a passage's sentence: it stands under its section's heading
            sections.setdefault(candidate.heading, []).append(candidate)
    weight = _rarity(terms, Counter(term for c in candidates for term in terms if term in c.terms), len(candidates))
    asked: list[tuple[float, int, list[Candidate]]] = []  # (how much of its heading is asked about, order, …)
    for heading, said in sections.items():
        held = set(terms) & set(content_terms(heading))
        named = set(content_terms(heading.replace(SECTION_PATH_SEPARATOR, " › ").rpartition(" › ")[2]))
        if (
            terms[0] in held
            and sum(weight[term] for term in held) >= SECTION_SHARE * sum(weight.values())
            and held & named
            and 2 <= len(said) <= MAX_SECTION_SENTENCES
            and (not answering or answering[0].heading == heading or named >= set(terms))
        ):
            asked.append((len(held & named) / len(named), -said[0].order, said))
    # Of two sections the question could be about, the one its heading is more about: "How to enrol", not
    # "Pension and health plan enrolment 2027" above it; then the one ranked first.
    return sorted(max(asked, key=lambda section: section[:2])[2], key=lambda c: c.order) if asked else []


def _is_row(candidate: Candidate) -> bool:
    """Whether the candidate is a table's row, said as a record ("Procedure: Cat spay; Price: £145.00")."""
    return bool(csv_row_fields(REF_GROUP.sub(" ", candidate.text).strip()))


def refers_back(candidate: Candidate) -> bool:
    """Whether the sentence names a thing of the sentence before it with a demonstrative ("this list"), or with a
    pronoun after its first word ("The oxygen monitor alarms at 19.5 percent. If it sounds, leave the room"; not
    the "It" of "It is good practice to …", which may take up nothing). Quoted words are left out: in quoted speech
    ("write this data …") a demonstrative points within the quote."""
    text = QUOTATION.sub(" ", candidate.text)
    opening = [word.lower() for word in WORD.findall(text)[:2]]
    if candidate.before and opening[1:] and opening[1] in BACK_REFERENCES:
        return True
    return any(stem(noun.lower()) in candidate.before for noun in DEMONSTRATIVE_NOUN.findall(text))


_DO_SUPPORT = re.compile(r"\b(?:do|does|did)(?:n[’']?t)?\b", re.I)


class _Forms(NamedTuple):
    """A candidate's terms, before and context (see Candidate) with verbs in their base form."""

    terms: frozenset[str]
    before: frozenset[str]
    context: frozenset[str]
    answers: frozenset[str]


def answer_scores(candidates: list[Candidate], terms: list[str], question: str) -> list[tuple[float, Candidate]]:
    """The candidates that answer `question`, with their score, best first.

    A sentence could when it holds what the question asks for (a duration for "how long",
    a count of households for "how many households", a date for "when did", a name for
    "who"), every figure the question names and, where it stands, every name ("the HP": a
    sentence about the Lenovo is no answer, however well it says a duration). The heading a
    passage's sentence stands under holds figures and names for it too, and the date a "when" asks
    for, which the answer then says first ("[2.3.0] - 2026-09-30: The rate limit was raised …"). A
    "which option" asks for a command-line option only where the candidates spell one. It answers
    when it also holds enough of the question's terms, each weighted by its rarity among the
    candidates (inverse document frequency: a rare term the files never use, "mayor", weighs
    more than the common ones a near miss shares): ANSWER_SCORE of them without embeddings.
    With embeddings it holds MEANING_SCORE of them and its cosine with the question is
    ANSWER_SIMILARITY, or it holds fewer, the rest being words no candidate uses, and its
    cosine is MEANING_ALONE; and the blend of the two (MEANING_WEIGHT × cosine + the rest ×
    share) reaches ANSWER_BLEND. Its score
    is the share, or with embeddings the blend, plus PROXIMITY_WEIGHT × the share of the
    question's neighbouring term pairs it says side by side.
    """
    if not candidates or not terms:
        return []
    # Figures must occur, in digits or in words (see below). A question with "did"/"does" puts its verb in the
    # base form ("did costs rise?" of "costs rose"): then a verb matches in any form. Without one, the question
    # keeps the statement's form ("who wrote …" of "… wrote …"), and "wrote" is no match for "written a package";
    # a verb it asks in the base form matches in any form still ("Who is allowed to drive a reach truck?" of
    # "Reach trucks may only be driven by …").
    # The words that name the answer type ("long" of "how long") are answered by holding it (below).
    base = base_term if _DO_SUPPORT.search(question) else str
    flags = holds_flags(c.text for c in candidates)
    typed = answer_type_terms(question, flags=flags)
    money_asked = asks_for_money(question, flags=flags)
    # The figures a sentence must hold (below) count in its share as terms do where it writes them ("£50" of "Do
    # we take £50 notes?" in "We do not accept £50 notes"), unless a year, which dates what is asked about, or a
    # case's, which the rule says with its own figure (`case_figures`).
    cases = case_figures(question)
    figure_terms = [figure for figure in _own_figures(question) if not is_year(figure) and figure not in cases]
    written = {id(c): held_figures(REF_GROUP.sub(" ", c.text)) for c in candidates}
    terms = list(dict.fromkeys(base(term) for term in terms if not is_figure_term(term) and term not in typed))
    if not terms:
        return []
    total = len(candidates)
    figure_weight = _rarity(
        figure_terms, Counter(t for c in candidates for t in figure_terms if t in written[id(c)]), total
    )
    # A sentence's agent and action nouns also say their verbs ("owner: Tomás" answers "who owns …?", "Decision: …"
    # "what did we decide …?"), and a question's are said by theirs ("Which funder paid …?" of "… was funded by …").
    doing = {term: noun_verbs([term]) | unit_names([term]) | {term} for term in terms}
    # An initialism and its words are one term: "new ARR" is said by "New annual recurring revenue".
    forms = {
        id(c): _Forms(
            _verb_forms(c.terms) | noun_verbs(c.terms) | unit_names(c.terms) | initialism_terms(question, c.text),
            *(_verb_forms(t) | noun_verbs(t) | unit_names(t) for t in (c.before, c.context, c.answers)),
        )
        for c in candidates
    }
    said_by = Counter(term for f in forms.values() for term in terms if doing[term] & f.terms)
    weight = _rarity(terms, said_by, total)
    whole = sum(weight.values()) + sum(figure_weight.values())
    asked = set(terms)
    figures = written_figures(question)
    # A reason is given right after the claim it explains ("It is good practice to use the with keyword … The
    # advantage is that the file is properly closed …"): for a why question, the sentence before a sentence
    # that gives a cause is that claim, and its terms count in full.
    # Likewise a sentence that takes up a noun of the one before with a demonstrative ("… a similar list of the
    # installed packages." then "A common convention is to put this list in a requirements.txt file"): the two
    # say one thing.
    why = bool(WHY.search(question))
    pairs = set(pairwise(terms))
    names = {base(name) for name in question_names(question)}
    could = []  # (candidate, share, proximity) of the sentences that hold what is asked for and its figures
    for candidate in candidates:
        section = _section(candidate.heading)
        # A figure of the heading it stands under is the sentence's too ("Meeting of 26 October 2026").
        headed = written_figures(section)
        # A year is held by what dates the passage too: its file's name or heading, the sentences before it ("932
        # repairs (88.4%) were completed within target" in board_minutes_2026-09.txt, for "… in July to September
        # 2026?").
        dated_by = {figure for figure in figures if is_year(figure) and figure in candidate.context}
        if not holds_figures(figures - headed - dated_by, REF_GROUP.sub(" ", candidate.text), cases):
            continue
        form, figures_written = forms[id(candidate)], written[id(candidate)]
        context_weight = CONTEXT_WEIGHT
        # A cause is told by the heading it stands under too ("Postmortem › Root cause: The pool change was …").
        told = f"{section}: {candidate.text}" if why and section else candidate.text
        if not holds_answer_type(question, told, asked, flags=flags):
            dated = dating_heading(question, section)
            if not dated:
                continue
            candidate = replace(candidate, text=f"{dated}: {candidate.text}")  # the date the answer gives
        elif money_asked:
            context_weight = 1.0
        if not names <= form.terms | form.context | form.answers:
            continue
        own = (form.terms | form.before if why or refers_back(candidate) else form.terms) | form.answers
        held = sum(weight[t] for t in terms if doing[t] & own) + sum(
            figure_weight[t] for t in figure_terms if t in figures_written | headed
        )
        held += context_weight * sum(weight[t] for t in terms if not doing[t] & own and doing[t] & form.context)
        said = [base(term) for term in term_sequence(REF_GROUP.sub(" ", candidate.text))]
        proximity = PROXIMITY_WEIGHT * len(pairs & set(pairwise(said))) / len(pairs) if pairs else 0.0
        share = held / whole
        # Too few of the terms, but those it lacks no candidate says: it may say them in other words.
        reworded = 0 < share < MEANING_SCORE and not any(said_by[t] for t in terms if not doing[t] & own)
        could.append((candidate, share, proximity, reworded))
    # Only a sentence that holds enough of the terms, or may say them in other words, is weighed in meaning: the
    # others are not embedded (most of a turn's time, the first time a session's sentences are seen).
    similarity = _similarities(question, [c for c, share, _, reworded in could if share >= MEANING_SCORE or reworded])
    scored = []
    for candidate, share, proximity, reworded in could:
        if similarity is None:
            if share >= ANSWER_SCORE:
                scored.append((share + proximity, candidate))
        elif (share >= MEANING_SCORE and similarity[id(candidate)][0] >= ANSWER_SIMILARITY) or (
            reworded and similarity[id(candidate)][1] >= MEANING_ALONE
        ):
            score = MEANING_WEIGHT * similarity[id(candidate)][1] + (1 - MEANING_WEIGHT) * share
            if score >= ANSWER_BLEND:
                scored.append((score + proximity, candidate))
    scored.sort(key=lambda item: (-item[0], item[1].order))
    return scored


def _own_figures(question: str) -> set[str]:
    """The figures a question writes, not the digits of a name ("X3" is a route, a term of its own)."""
    glued = {m.group() for m in FIGURE.finditer(question) if question[m.start() - 1 : m.start()].isalpha()}
    return written_figures(question) - glued


def _verb_forms(terms: frozenset[str]) -> frozenset[str]:
    """Terms as written and, for an irregular verb's past forms, its base form ("driven" → "drive")."""
    return terms | frozenset(map(base_term, terms))


def _rarity(terms: list[str], frequency: Counter, total: int) -> dict[str, float]:
    """Each term's weight by its rarity among the `total` candidates, `frequency` of which hold it (inverse
    document frequency): a term the files never use ("budget") weighs most."""
    return {term: math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5)) for term in terms}


def _section(heading: str) -> str:
    """A passage's heading path without its file's name ("minutes-2026-10.docx › Meeting of 26 October")."""
    return heading.partition(" › ")[2]


def best_candidates(candidates: list[Candidate], wanted: set[str]) -> list[Candidate]:
    """The top candidates by shared terms, then order. What a person supplied counts even when it shares no
    term, and the best of it is always among those used: they gave it for this question."""
    eligible = [c for c in candidates if c.given or wanted & c.terms]
    ranked = sorted(eligible, key=lambda c: (-len(wanted & c.terms), c.order))
    # The same sentence held by a digest, the report and a node's findings is told once.
    distinct: dict[str, Candidate] = {}
    for candidate in ranked:
        distinct.setdefault(sentence_key(candidate.text), candidate)
    ranked = list(distinct.values())
    used = ranked[:MAX_ANSWER_SENTENCES]
    best_given = next((c for c in ranked if c.given), None)
    if best_given is not None and best_given not in used:
        used = [*used[: MAX_ANSWER_SENTENCES - 1], best_given]
    return used


def _similarities(question: str, candidates: list[Candidate]) -> dict[int, tuple[float, float]] | None:
    """Each candidate's cosine with the question, as (whether it answers, how well): the better of the
    sentence alone and of the sentence after the one before it, which it may take up ("The cause was a
    corroded joint."); whether it answers may also read it under its passage's heading, which names what
    the sentence leaves unsaid ("Checkout outage › What went well: The on-call engineer … paged …"), but
    the heading ranks nothing: every sentence of a section would share it. None when embeddings are off or
    unavailable."""
    if not embeddings.enabled():
        return None
    if not candidates:
        return {}
    alone = [REF_GROUP.sub(" ", c.text).strip() or c.text for c in candidates]
    after = [REF_GROUP.sub(" ", f"{c.prior} {text}").strip() for c, text in zip(candidates, alone, strict=True)]
    under = [f"{c.heading}: {text}" if c.heading else text for c, text in zip(candidates, alone, strict=True)]
    # A sentence of clauses joined by semicolons, or by ", and", says several things ("I recommend we ask … ;
    # until then payroll depends on the line of credit, which charges 8.25% interest."): each clause is weighed
    # on its own too.
    clauses = [(i, clause) for i, text in enumerate(alone) for clause in _clauses(text) if clause != text]
    try:
        vectors = embeddings.embed([question, *alone, *after, *under, *(clause for _i, clause in clauses)])
    except embeddings.EmbeddingsUnavailable:
        return None
    cosines = vectors[1:] @ vectors[0]
    whole = cosines[: 3 * len(candidates)].reshape(3, len(candidates))
    rank = whole[:2].max(axis=0)
    for (i, _clause), cosine in zip(clauses, cosines[3 * len(candidates) :], strict=True):
        rank[i] = max(rank[i], cosine)
    gate = np.maximum(whole[2], rank)
    return {id(c): (float(g), float(r)) for c, g, r in zip(candidates, gate, rank, strict=True)}


def _clauses(text: str) -> list[str]:
    """The clauses of a sentence joined by semicolons or by ", and" / ", but" ("CSAT for November so far is 3.6
    out of 5, and every urgent phone ticket got a human within 45 minutes")."""
    return text.replace(", and ", "; ").replace(", but ", "; ").split("; ")
