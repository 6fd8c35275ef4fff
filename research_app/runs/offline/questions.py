"""A question's clauses, subject and main verb(s), heuristically.

NODE_DECOMPOSE (decompose.py) splits a question into its clauses, and keeps its
sub-questions well-formed with the subject and the verbs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from llm_platform.answer_types import EVENT_VERBS
from llm_platform.terms import (
    AUXILIARIES,
    DEMONSTRATIVE_NOUN,
    DO_AND_MODALS,
    OVERLAP_STOP_WORDS,
    QUESTION_WORDS,
    WORD,
    base_term,
    question_terms,
    split_sentences,
    stem,
    surface_words,
)

from .inputs import term_set

MAX_SUBJECT_WORDS = 5
MAX_LISTED_WORDS = 3  # the words of one thing of a list a question asks about ("booking equipment")
# How NODE_DECOMPOSE words a narrowed sub-question. The frame is ours, not the user's: its words
# ("known") are no subject a finding must mention.
NARROWED_FRAME = "What is known about "
# … and the one a question is narrowed to when no gap names what it lacks: its own key terms.
KEY_TERMS_FRAME = "What do sources state directly about "
_WH_WORDS = QUESTION_WORDS - {"much", "many"}
# The question words that can be a question's subject ("*Who* must consent …"); "why", "how", "when" and
# "where" never are ("Why are *patients* missing appointments?").
_SUBJECT_WH_WORDS = frozenset("who what which whose".split())
_DETERMINERS = frozenset("the a an this that these those its their our his her my your".split())
# Verbs that commonly follow the subject of a do- or modal question ("Did the programme *reduce* …").
# Only used to find where the subject ends; a miss just gives a longer subject.
COMMON_VERBS = frozenset(
    """achieve affect apply become cause change compare contribute cost cut decline decrease deliver differ drop
    exceed fail fall fund gain get grow happen help improve include increase influence lead limit lose lower make
    mean meet need occur pay perform prevent produce provide raise reach reduce remain replace require result
    rise save show spend succeed support take use work""".split()
)
# Words that end a subject without being part of it ("Is the budget *sufficient* …", "… the valves *late*?").
PREDICATE_WORDS = frozenset(
    """able accurate adequate available better correct different due early effective enough higher late
    likely lower necessary possible ready reliable responsible safe similar still successful sufficient true
    worse worth""".split()
)
# Prepositions the stop lists keep: a gap's phrase does not start or end with one ("shared *outside*").
_PREPOSITIONS = frozenset(
    "across along among around behind beside beyond despite inside near outside per towards".split()
)
# Who asks ("Should *we* build offline mode, and what would it cost?"): "it" is then what they would do.
_PERSONAL_PRONOUNS = frozenset("i we you they".split())
# … unless the question word is what they do something to ("What do we offer new parents, and how does it
# compare …?"): "it" is then that thing.
_OBJECT_WH_WORDS = frozenset({"what", "which"})
_PRONOUN_IT = re.compile(r"\bit\b", re.I)
_PRONOUN_ITS = re.compile(r"\bits\b", re.I)
_PRONOUN_THEY = re.compile(r"\b(they|them|their)\b", re.I)
_CLAUSE_SEPARATOR = re.compile(r"\s*[;,]\s*(?:and\s+)?|\s+and\s+", re.I)


def split_clauses(question: str) -> list[str]:
    """The clauses a question joins with "and", ";" or ",": a piece starts a clause only when it opens
    with a question word or an auxiliary and names something or refers to the subject ("what did it
    cost", "what is being done about it"); other pieces
    ("costs and savings") stay with the clause before them. Trailing punctuation dropped.
    """
    body = question.strip().rstrip("?.!").strip()
    clauses: list[str] = []
    position = 0
    # What comes before the first question word sets the question, asks nothing ("In a script, how can I …").
    asking = _opens_question(body)
    for match in _CLAUSE_SEPARATOR.finditer(body):
        rest = body[match.end() :]
        next_piece = _CLAUSE_SEPARATOR.split(rest, maxsplit=1)[0]
        if not asking:
            asking = _opens_question(rest)
        elif _opens_question(rest) and _asks(next_piece) and _asks(body[position : match.start()]):
            clauses.append(body[position : match.start()].strip())
            position = match.end()
    clauses.append(body[position:].strip())
    return [part for clause in clauses if clause for asked in _asked_again(clause) for part in _listed_parts(asked)]


def _asked_again(clause: str) -> list[str]:
    """A clause that ends by asking it again with a bare question word ("What is changing on our routes in
    January, and why") as the two questions it asks: "What is changing on our routes in January" and "Why is this
    changing on our routes in January" ("Which buses are off the road and why" → "Why are the buses off the
    road"). Where the clause's question word is not its subject before an auxiliary, it stays one clause: no
    sure way to ask it again."""
    *rest, last = _CLAUSE_SEPARATOR.split(clause)
    words = " ".join(rest).split()
    if not rest or last.lower() not in _WH_WORDS - _SUBJECT_WH_WORDS or len(words) < 3:
        return [clause]
    first = " ".join(rest)
    opener = words[0].lower()
    # "What is changing …" → "Why is this changing …"; not "What did the pumps cost", whose "what" is the object
    if opener == "what" and words[1].lower() in AUXILIARIES and (words[2].endswith("ing") or _is_verb_form(words[2])):
        again = [words[1], "this", *words[2:]]
    elif opener == "which" and (at := _auxiliary_at(words)) is not None:  # "Which buses are …" → "Why are the buses …"
        again = [words[at], "the", *words[1:at], *words[at + 1 :]]
    else:
        return [clause]
    return [first, " ".join([last.capitalize(), *again])]


def _auxiliary_at(words: list[str]) -> int | None:
    """Where the auxiliary after a "which" question's thing stands ("Which buses *are* …"), within two words."""
    return next((i for i in (2, 3) if i < len(words) and words[i].lower() in AUXILIARIES), None)


def _listed_parts(clause: str) -> list[str]:
    """A clause that lists three or more things, asked of each ("… need to know about safety, waste and booking
    equipment" → "… about safety", "… about waste", "… about booking equipment"; "What are the risks, costs and
    timeline of the project" → "What are the risks of the project", …): the files answer each apart, and one
    search for all of them finds the best-said one. Two things ("costs and savings") stay one part, and so does
    a list in a clause that asks no question ("Compare Postgres, MySQL and SQLite": the three together). Of two
    lists, the last is asked apart ("What support do we offer older, disabled or vulnerable tenants across
    repairs, tenancy and complaints?": across each of the three, for the tenants of the first list)."""
    pieces = [piece.split() for piece in _CLAUSE_SEPARATOR.split(clause)]
    if len(pieces) < 3 or not all(pieces) or not _opens_question(clause):
        return [clause]
    # The last list: the short pieces that end the clause, after the piece that holds its first thing.
    opens = len(pieces) - 2
    while opens > 0 and len(pieces[opens]) <= MAX_LISTED_WORDS:
        opens -= 1
    if len(pieces) - opens < 3:
        return [clause]
    separators = list(_CLAUSE_SEPARATOR.finditer(clause))
    first = clause[: separators[opens].start()].split()  # what the list's first thing ends, as written
    middle, last = pieces[opens + 1 : -1], pieces[-1]
    end = 0
    while end < min(len(last), MAX_LISTED_WORDS) and not _is_stop_word(last[end]):
        end += 1
    # The things of a list are alike: the first is no longer than the longest of the others ("reduce losses,
    # costs and complaints" lists "losses", not "reduce losses").
    longest = max(map(len, [*middle, last[:end]]))
    start = len(first)
    while start > 0 and len(first) - start < longest and not _is_stop_word(first[start - 1]):
        start -= 1
    listed = [first[start:], *middle, last[:end]]
    if start == 0 or any(not 0 < len(thing) <= MAX_LISTED_WORDS or any(map(_is_stop_word, thing)) for thing in listed):
        return [clause]
    lead, tail = first[:start], last[end:]
    # A last thing that is a doing takes what follows as its own ("safety, booking instruments and looking after
    # their data" asks about "looking after their data", not about "safety after their data"); "of" follows a
    # thing shared by all ("the costs, risks and funding of the project").
    doing = listed[-1][-1].lower()
    if tail and tail[0].lower() != "of" and doing.endswith("ing") and _looks_like_verb(doing, bare_verbs=False):
        listed[-1], tail = [*listed[-1], *tail], []
    return [" ".join([*lead, *thing, *tail]) for thing in listed]


def _listed_things(text: str) -> list[str]:
    """The things of a list of three or more, none of them a clause ("compliance, problem properties and the
    replacement programme"); [] for another text (two things stay one: "costs and savings")."""
    things = [piece.strip().rstrip("?.!").strip() for piece in _CLAUSE_SEPARATOR.split(text.strip())]
    if len(things) < 3 or any(not 0 < len(thing.split()) <= MAX_LISTED_WORDS + 1 for thing in things):
        return []
    return [] if any(_opens_question(thing) for thing in things) else things


def _is_stop_word(word: str) -> bool:
    return word.lower().strip(",.;:?!") in OVERLAP_STOP_WORDS | QUESTION_WORDS


def question_ask(question: str) -> str:
    """What the question asks without what sets it: from its first sentence that asks, after one that does not
    ("Our logs vanish every time the machine restarts. *How do I make them survive a reboot?*"), or what
    follows a lead-in ("In a script, *how can I turn …*"); "" when nothing sets it."""
    sentences = split_sentences(question)
    if sentences and not _opens_question(sentences[0]):
        for at, sentence in enumerate(sentences[1:], start=1):
            if _opens_question(sentence) and _asks(sentence):
                return " ".join(sentences[at:]).rstrip("?.! ")
    body = question.strip().rstrip("?.!").strip()
    if _opens_question(body):
        return ""
    for match in _CLAUSE_SEPARATOR.finditer(body):
        rest = body[match.end() :]
        if _opens_question(rest):
            return rest.strip() if _asks(rest) else ""
    return ""


def _opens_question(text: str) -> bool:
    words = WORD.findall(text[:40])
    return bool(words) and words[0].lower() in _WH_WORDS | AUXILIARIES


def _asks(piece: str) -> bool:
    """Whether a piece asks something of its own: it names something, or asks it of the subject ("what is
    being done about it"). A bare "why" or "how" does not ("How and why did costs rise?")."""
    return bool(question_terms(piece) or _PRONOUN_IT.search(piece))


def own_part(question: str, other_parts: list[str]) -> str:
    """The words of a sub-question that its sibling parts do not all share ("payments" of "What does a new
    programme officer need to know about payments?" beside "… about reporting?" and "… about expenses?"): what
    this node asks apart from them. "" without siblings, or when it shares every word with them or none."""
    if not other_parts:
        return ""
    shared = frozenset.intersection(*map(term_set, other_parts))
    words = surface_words(question)
    own = [word for term, word in words.items() if term not in shared]
    return " ".join(own) if 0 < len(own) < len(words) else ""


# What opens the list of what a lead asks about: "…: compliance, problem properties and …", "… for residents,
# including cost, timing, support and service charges".
_LIST_OPENERS = (": ", ", including ", ", such as ")


def question_clauses(question: str) -> list[str]:
    """The question's clauses (split_clauses), each to be asked on its own: the subject stands in for
    "it" after the first ("what did it cost" → "what did the valve programme cost"), and the first
    clause's words for "that <noun>" (`_named`). A lead that lists what it asks ("Explain our approach to
    recharging tenants: what is charged, how it is collected and when charges are waived", "Summarise our boiler
    position: compliance, problem properties and the replacement programme") is asked of each, after the lead:
    the lead names what "it" of a listed clause is, and a thing alone names nothing to search for."""
    for opener in _LIST_OPENERS:
        lead, found, listed = question.strip().partition(opener)
        if found and lead:
            asked = split_clauses(listed) if _opens_question(listed) else _listed_things(listed)
            if len(asked) > 1:
                return [f"{lead}: {part}" for part in asked]
    clauses = split_clauses(question)
    subject = question_subject(question)
    if len(clauses) < 2:
        return clauses
    referent = _referent(clauses[0], subject) if subject else _doing(clauses[0]) or _asked_of_itself(clauses[0])
    event = _happening(clauses[0])
    return clauses[:1] + [
        _named(_with_plural_subject(_with_subject(clause, _event_or(referent, event, clause)), subject), clauses[0])
        for clause in clauses[1:]
    ]


def _happening(clause: str) -> str:
    """The clause as the event a later "it happens" stands for: asked of itself with no object after its verb
    ("What went wrong with the freezer, … so it does not happen again": what went wrong, not the freezer); ""
    where its verb has one ("What caused the outage, and why did it happen?": the outage)."""
    words = _words(clause)
    return _asked_of_itself(clause) if len(words) > 2 and words[2].lower() not in _DETERMINERS else ""


def _event_or(referent: str, event: str, clause: str) -> str:
    """What "it" of `clause` stands for: `event`, the first clause asked of itself, where the clause says that "it"
    happens or occurs; else `referent`."""
    happens = event and {base_term(stem(word.lower())) for word in WORD.findall(clause)} & EVENT_VERBS
    return event if happens else referent


def _named(clause: str, first: str) -> str:
    """A later clause's "that key" said as the first clause says it ("… with their SSH key, and how do I
    restrict what that key can run?" → "… what the SSH key can run"): asked on its own, the clause has
    nothing before it for "that" to point at."""

    def named(match: re.Match) -> str:
        phrase = _phrase_ending_in(first, match.group(1))
        return f"the {phrase}" if len(phrase.split()) > 1 else match.group(0)

    return DEMONSTRATIVE_NOUN.sub(named, clause)


def _phrase_ending_in(text: str, noun: str) -> str:
    """The words after a determiner of `text` that end in `noun` (any form: "keys" for "key"): "SSH key" of
    "their SSH key"; "" when no determiner leads them ("configure SSH keys" is no name of a thing)."""
    words = WORD.findall(text)
    wanted = stem(noun.lower())
    end = next((i for i, word in enumerate(words) if stem(word.lower()) == wanted), None)
    if end is None:
        return ""
    start = end
    while start > 0 and words[start - 1].lower() not in OVERLAP_STOP_WORDS | QUESTION_WORDS:
        start -= 1
    return " ".join(words[start : end + 1]) if start > 0 and words[start - 1].lower() in _DETERMINERS else ""


def _referent(clause: str, subject: str) -> str:
    """What "it" of a later clause stands for: the subject ("Did the valve programme reduce losses, and what
    did it cost?"), or, where the first clause says what the subject is doing, that doing ("Where is the
    network losing water, and what is being done about it?": the network losing water)."""
    at = clause.find(subject)
    words = _words(clause[at + len(subject) :]) if at >= 0 else []
    if words and _looks_like_verb(words[0].lower(), bare_verbs=False) and words[0].lower().endswith("ing"):
        return clause[at:]
    return subject


def _asked_of_itself(clause: str) -> str:
    """The clause as the thing a later "it" stands for, when its question word is its subject and a verb follows
    ("What went wrong for customers in Q3, and what are we doing about it?" → "what went wrong for customers in
    Q3"); "" otherwise."""
    words = _words(clause)
    asks = len(words) > 1 and words[0].lower() in _SUBJECT_WH_WORDS and _is_verb_form(words[1])
    return clause[:1].lower() + clause[1:] if asks else ""


def _is_verb_form(word: str) -> bool:
    """A verb's past or a common verb ("went", "broke", "happened", "changes"), as far as a word alone tells."""
    lower = word.lower()
    return base_term(stem(lower)) != stem(lower) or _looks_like_verb(lower, bare_verbs=False) or lower in COMMON_VERBS


def _doing(clause: str) -> str:
    """What the asker would do, when a personal pronoun is the clause's subject: "Should we build offline
    mode" → "building offline mode". A later clause's "it" ("what would it cost", "how long would it take")
    stands for that doing, never for the asker; "" when no personal pronoun leads a verb. Where the question
    word is what is done ("What do we offer new parents"), "it" is that thing: "what we offer new parents"."""
    words = clause.split()
    at = next((i for i, word in enumerate(words) if word.lower() in _PERSONAL_PRONOUNS), None)
    if at is None or at + 2 >= len(words):
        return ""
    if at >= 2 and words[0].lower() in _OBJECT_WH_WORDS and words[at - 1].lower() in AUXILIARIES:
        return " ".join([words[0].lower(), *words[1 : at - 1], *words[at:]])
    return " ".join([_gerund(words[at + 1].lower()), *words[at + 2 :]])


def _gerund(verb: str) -> str:
    """build → building, migrate → migrating, tie → tying, stop → stopping (one syllable ending
    consonant-vowel-consonant doubles its consonant), open → opening."""
    if verb.endswith("ie"):
        return f"{verb[:-2]}ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")) and len(verb) > 2:
        return f"{verb[:-1]}ing"
    vowels = "aeiou"
    syllables = sum(1 for i, c in enumerate(verb) if c in vowels and (i == 0 or verb[i - 1] not in vowels))
    if (
        syllables == 1
        and len(verb) >= 3
        and verb[-1] not in vowels + "wxy"
        and verb[-2] in vowels
        and verb[-3] not in vowels
    ):
        return f"{verb}{verb[-1]}ing"
    return f"{verb}ing"


def _with_subject(clause: str, subject: str) -> str:
    if not subject:
        return clause
    clause = _PRONOUN_ITS.sub(f"{subject}'s", clause)
    return _PRONOUN_IT.sub(subject, clause)


def _with_plural_subject(clause: str, subject: str) -> str:
    """A later clause's "they", "them" and "their" said as the subject they stand for, when it is a plural noun
    ("What safety risks came up on site, and how were they handled?" → "how were safety risks handled"): asked
    on its own, "How were they handled?" names nothing."""
    last = subject.split()[-1] if subject else ""
    if not (last.endswith("s") and not last.endswith("ss") and last.isalpha()):
        return clause
    return _PRONOUN_THEY.sub(lambda match: f"{subject}'" if match.group(1).lower() == "their" else subject, clause)


def question_subject(question: str) -> str:
    """A question's subject, heuristically: "Did the valve programme reduce losses?" → "the valve programme"."""
    return question_parts(question)[0]


def _words(text: str) -> list[str]:
    """The words of `text`, a compound joined by a hyphen one word ("the KX-7 variant", "the follow-up study")."""
    words: list[str] = []
    end = -1
    for match in WORD.finditer(text):
        if words and text[end : match.start()] == "-":
            words[-1] += f"-{match.group()}"
        elif text[match.start() - 1 : match.start()] == "-" and match.group()[0].isdigit():
            words.append(f"-{match.group()}")  # a negative figure: "the -80 freezer"
        else:
            words.append(match.group())
        end = match.end()
    return words


def question_parts(question: str) -> tuple[str, frozenset[str]]:
    """A question's subject and its main verb(s) (lower-cased, as written), heuristically:

    - "Did the valve programme reduce losses?" → ("the valve programme", {"reduce"}): after
      "do"/"did" or a modal the main verb is bare, so a common verb ends the subject, or else
      the last word of the subject's run of content words ("did maintenance staffing *change*");
    - "Is the maintenance cost of the valves rising?" → a participle ("-ed", "-ing") ends it;
    - "Who must consent before the report is shared?" (the question word is the subject):
      the word after the auxiliary is the verb, the subject the first determiner-led phrase after it;
    - "What risks threaten the valve programme?" (no auxiliary): the verb is the word before
      the first stop word, the subject the name or determiner-led phrase after it ("the valve
      programme"), or after a preposition ("What went wrong with *the DNA extraction*?"), else
      the words between the question word and the verb ("What *water losses* occurred in 2022?").

    The verbs keep sub-questions well-formed: "What is known about risks for the valve
    programme?", never "… about risks threaten?". ("", ∅) when nothing fits.
    """
    clauses = split_clauses(question)
    words = _words(clauses[0]) if clauses else []
    start = 0
    while start < len(words) and words[start].lower() in QUESTION_WORDS:
        start += 1
    auxiliary = next((i for i in range(start, len(words)) if words[i].lower() in AUXILIARIES), None)
    if auxiliary is None:
        if start == 0:
            return _noun_phrase(words, start, bare_verbs=False)[0], frozenset()
        stop = next((i for i in range(start, len(words)) if words[i].lower() in OVERLAP_STOP_WORDS), len(words))
        verb = stop - 1
        if verb < start:
            return _noun_phrase(words, start, bare_verbs=False)[0], frozenset()
        # words[verb + 1] is the stop word that ended the verb; when it is a preposition, a determiner after it
        # leads the thing: "What went wrong *with the* DNA extraction?"
        thing = verb + 2 if verb + 2 < len(words) and words[verb + 2].lower() in _DETERMINERS else verb + 1
        named = _noun_phrase(words, thing, bare_verbs=False)[0] if thing < len(words) else ""
        if not named and _is_verb_form(words[start]):  # "What went wrong …": the question word is the subject
            return "", frozenset({words[start].lower()})
        return named or " ".join(words[start:verb]), frozenset({words[verb].lower()})
    after = auxiliary + 1
    if (
        start > 0
        and words[start - 1].lower() in _SUBJECT_WH_WORDS
        and auxiliary == start
        and after < len(words)
        and words[auxiliary].lower() not in ("do", "does", "did")
        and words[after].lower() not in _DETERMINERS
        and not words[after][0].isupper()
    ):
        led = next((i for i in range(after + 1, len(words)) if words[i].lower() in _DETERMINERS), None)
        subject, end = _noun_phrase(words, led, bare_verbs=False) if led is not None else ("", after)
        # "What is being done about the network *losing* water?": what the subject does is a verb too.
        doing = (
            {words[end].lower()}
            if subject and end < len(words) and _looks_like_verb(words[end].lower(), bare_verbs=False)
            else set()
        )
        return subject, frozenset({words[after].lower(), *doing})
    bare_verbs = words[auxiliary].lower() in DO_AND_MODALS
    subject, end = _noun_phrase(words, after, bare_verbs=bare_verbs)
    if not subject:
        return _noun_phrase(words[:auxiliary], start, bare_verbs=False)[0], frozenset()
    if end < len(words) and words[end].lower() not in OVERLAP_STOP_WORDS:
        return subject, frozenset({words[end].lower()})
    *kept, last = subject.split()
    if bare_verbs and any(word.lower() not in _DETERMINERS for word in kept):
        # No common verb ended it: the run's last word is the bare verb ("did maintenance staffing change"),
        # unless the subject would be a determiner alone ("can the script just skip": a stop word ended it).
        return " ".join(kept), frozenset({last.lower()})
    return subject, frozenset()


def _noun_phrase(words: Sequence[str], index: int, *, bare_verbs: bool) -> tuple[str, int]:
    """The name or determiner-led phrase starting at words[index] (see `question_parts`), and the
    index of the word that ended it."""
    if index >= len(words):
        return "", index
    if index > 0 and words[index][0].isupper() and words[index].lower() not in OVERLAP_STOP_WORDS:
        end = index
        while end < len(words) and words[end][0].isupper() and end - index < MAX_SUBJECT_WORDS:
            end += 1
        return " ".join(words[index:end]), end
    phrase = [words[index]] if words[index].lower() in _DETERMINERS else []
    index += len(phrase)
    nouns = 0
    while index < len(words) and nouns < MAX_SUBJECT_WORDS:
        lower = words[index].lower()
        after_of = bool(phrase) and phrase[-1].lower() == "of" and lower in _DETERMINERS
        stop_word = lower in OVERLAP_STOP_WORDS and lower != "of" and not after_of
        if stop_word or lower in PREDICATE_WORDS or _looks_like_verb(lower, bare_verbs=bare_verbs):
            break
        phrase.append(words[index])
        nouns += lower != "of" and lower not in _DETERMINERS
        index += 1
    while phrase and phrase[-1].lower() in _DETERMINERS | {"of"}:
        phrase.pop()
        index -= 1
    return (" ".join(phrase) if any(w.lower() not in _DETERMINERS for w in phrase) else ""), index


def _looks_like_verb(word: str, *, bare_verbs: bool) -> bool:
    """After "do" or a modal the verb is bare: a common one ("reduce"), never a participle, so
    "staffing" stays a noun; after "is" or "has" a participle ("-ed", "-ing") is the verb."""
    if bare_verbs:
        return word in COMMON_VERBS
    return len(word) > 5 and (word.endswith("ed") or word.endswith("ing"))


def without_frame(question: str) -> str:
    """The question without the frame a narrowed sub-question is written in ("What is known about …"): the
    frame's words are ours, not what the question asks about."""
    frame = next((f for f in (NARROWED_FRAME, KEY_TERMS_FRAME) if question.startswith(f)), "")
    return question[len(frame) :]


def thing_phrase(phrase: str, question: str, verbs: frozenset[str]) -> str:
    """A gap's phrase as something to ask about. Where the phrase is the question's own words
    around its verb ("risks threaten", "water losses occurred"), the verb and participles go;
    a one-word phrase that is the verb stays when the verb is also a noun ("cost", "change").
    Auxiliaries and predicate words ("late", "sufficient"), and prepositions at either end, always go."""
    words = phrase.split()
    from_question = len(words) > 1 and phrase.lower() in question.lower()

    def verb_like(word: str) -> bool:
        lower = word.lower()
        participle = len(lower) > 4 and lower.endswith("ed")
        if len(words) == 1:
            return lower in verbs and (participle or lower not in COMMON_VERBS)
        return from_question and (lower in verbs or participle)

    kept = [w for w in words if w.lower() not in AUXILIARIES | PREDICATE_WORDS and not verb_like(w)]
    while kept and kept[-1].lower() in _PREPOSITIONS | {"and"}:
        kept.pop()
    while kept and kept[0].lower() in _PREPOSITIONS | {"and"}:
        kept.pop(0)
    return " ".join(kept)
