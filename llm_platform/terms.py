"""Words and sentences as the library and the offline handlers compare them.

Terms: lower-cased, stop words out, stemmed (the library's index and search,
the offline research and chat handlers' token overlap). Sentences: a span's text
split into sentences, cut at a word boundary, compared without case and
punctuation (the offline digest, research and chat handlers).

No Django here: the offline provider's handlers use it in any process.
"""

import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

import snowballstemmer

from llm_platform.prose import (
    LIST_MARK,
    NUMBER_WORDS,
    WORD_CHARS,
    csv_row_fields,
    is_heading_line,
    is_prose,
    is_table_row,
)

MAX_TERM_LENGTH = 64
MAX_LISTED_TERMS = 6  # terms `quote_list` names before "…"

# --- stop lists ----------------------------------------------------------------------
# Three lists for three uses. They are not merged into one because each is part of
# what its users store or answer: changing one would change stored output.

# A compact English stop list (function words only; content words such as
# "use" or "new" stay searchable). The library's postings are stored analysed with
# it, so a word added here would change the index and every ranking.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not of off on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves"""
    # What a negative contraction leaves of its verb once WORD splits at the apostrophe ("aren't" → "aren"),
    # as NLTK's English list has them: "What is known about aren?" asked after a colleague's "aren't".
    """ aren couldn didn doesn don hadn hasn haven isn mightn mustn needn shan shouldn wasn weren wouldn""".split()
    # … and what "we're", "they've" and "we'll" leave of their verb: "What do I say when they say we're too
    # expensive?" is about nothing called "re".
    + "re ve ll".split()
)
# Token overlap (offline research and chat handlers, the context split): the search list plus
# a few function words that only matter when judging overlap (kept out of the search list, see above).
# "still" says a time, not a subject: "What training do I still have to do?" asks about training; "actually",
# "really" and "just" weigh what is said, not what it is about ("How many did Elmfield actually see?"); an
# indefinite pronoun names no one ("Someone's just reported a hate crime …", "… without anyone else's approval"),
# nor does "OK" ask about anything ("Is that OK?").
OVERLAP_STOP_WORDS = STOP_WORDS | frozenset(
    "actually also done just might must one really shall still upon us via whose within without".split()
    + "anybody anyone anything else everybody everyone everything nobody somebody someone something".split()
    + "ok okay".split()
)
# Words that make a question a question; they say nothing about what evidence covers it.
QUESTION_WORDS = frozenset("what which who whom whose when where why how whether much many".split())
# The verbs that open a question or carry a clause's tense: "do" and the modals take a bare verb after them.
DO_AND_MODALS = frozenset("do does did can could will would should shall may might must".split())
AUXILIARIES = DO_AND_MODALS | frozenset("is are was were has have had".split())
# What a figure is about (the offline aggregate's conflict check): words of three letters or more
# that name no subject, "year" and "total" among them. Not STOP_WORDS: that list keeps "year" and
# drops words such as "own" or "few", so using it would change which facts are flagged as conflicts.
SUBJECT_STOP_WORDS = frozenset(
    "the and for was are per has had its our all any not but can did does with from into onto than that this "
    "these those then there their them they were what when where which while within would been being have "
    "about after also among before between both more most only other over same since some such very "
    "year years total overall".split()
)

# --- terms ---------------------------------------------------------------------------

# A word: letters and digits of any script (an underscore splits words).
WORD = re.compile(r"[^\W_]+")
# A quotation, between straight or curly double quotes: what it says is in its group.
QUOTATION = re.compile(r"[\"“”]([^\"“”]*)[\"“”]")
# A noun taken up from what was said before: "this list", "that key", "such files".
DEMONSTRATIVE_NOUN = re.compile(r"\b(?:this|these|that|those|such) ([^\W\d_]+)", re.I)
# Words that take up what the sentence before said ("FieldPad has no offline mode. Its roadmap promises one …").
BACK_REFERENCES = frozenset("it its they their them this these those he his she her".split())


def written_numbers(text: str) -> list[int]:
    """The numbers `text` writes as words ("five votes to two" → [5, 2]). Not "one": as often a pronoun or an
    article ("no one", "one of the") as a count."""
    return [NUMBER_WORDS[word] for word in WORD.findall(text.lower()) if word in NUMBER_WORDS and word != "one"]


# The month of an ISO date ("2024-03", "2024-03-14") is also a term by its name: tables write a date one way,
# people ask the other ("in March 2024").
_ISO_MONTH = re.compile(r"(?<![\d-])\d{4}-(0[1-9]|1[0-2])(?:-\d{2})?(?![\d-])")
MONTH_NAMES = "january february march april may june july august september october november december".split()
_per_thread = threading.local()  # a Snowball stemmer keeps state between calls: one per thread


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word ("arguments" → "argument"), safe across threads."""
    stemmer = getattr(_per_thread, "stemmer", None)
    if stemmer is None:
        stemmer = _per_thread.stemmer = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)[:MAX_TERM_LENGTH]


def analyze(text: str) -> list[str]:
    """Index terms of `text` in order: lower-cased word stems without stop words or single letters, then the
    names of the months its ISO dates name."""
    terms = []
    for match in WORD.finditer(text.lower()):
        word = match.group()
        if len(word) > 1 and word not in STOP_WORDS:
            terms.append(stem(word))
    return terms + [stem(month) for month in iso_month_names(text)]


def iso_month_names(text: str) -> list[str]:
    """The names of the months of the ISO dates in `text`, in order ("2024-03-14" → "march")."""
    return [MONTH_NAMES[int(month) - 1] for month in _ISO_MONTH.findall(text)]


def query_terms(question: str) -> list[str]:
    """A question's index terms (`analyze`), each once: what the library searches for, question words out."""
    asked = {stem(word) for word in QUESTION_WORDS}
    return [term for term in dict.fromkeys(analyze(question)) if term not in asked]


# --- irregular verbs -------------------------------------------------------------------
# A question asks in the base form ("did costs rise?"), a file tells in the past ("costs rose"). The stemmer
# joins the forms of regular verbs (replaced, replace → replac), not these. Common English irregular verbs:
# base, past, past participle.
_IRREGULAR_VERBS = """
arise arose arisen; be was been; beat beat beaten; become became become; begin began begun;
bend bent bent; bind bound bound; bite bit bitten; bleed bled bled; blow blew blown; break broke broken;
breed bred bred; bring brought brought; build built built; burn burnt burnt; buy bought bought;
catch caught caught; choose chose chosen; cling clung clung; come came come; creep crept crept; deal dealt dealt;
dig dug dug; draw drew drawn; dream dreamt dreamt; drink drank drunk; drive drove driven; eat ate eaten;
fall fell fallen; feed fed fed; feel felt felt; fight fought fought; find found found; flee fled fled;
fly flew flown; forbid forbade forbidden; forget forgot forgotten; forgive forgave forgiven; freeze froze frozen;
get got gotten; give gave given; go went gone; grow grew grown; hang hung hung;
have had had; hear heard heard; hide hid hidden; hold held held; keep kept kept; know knew known; lay laid laid;
lead led led; lean leant leant; leave left left; lend lent lent; lie lay lain; light lit lit; lose lost lost;
make made made; mean meant meant; meet met met; overcome overcame overcome; pay paid paid; ride rode ridden;
ring rang rung; rise rose risen; run ran run; say said said; see saw seen; seek sought sought; sell sold sold;
send sent sent; shake shook shaken; shine shone shone; shoot shot shot; show showed shown; shrink shrank shrunk;
sing sang sung; sink sank sunk; sit sat sat; sleep slept slept; slide slid slid; speak spoke spoken;
speed sped sped; spend spent spent; spin spun spun; spring sprang sprung; stand stood stood; steal stole stolen;
stick stuck stuck; sting stung stung; strike struck struck; strive strove striven; swear swore sworn;
sweep swept swept; swim swam swum; swing swung swung; take took taken; teach taught taught; tear tore torn;
tell told told; think thought thought; throw threw thrown; understand understood understood;
undertake undertook undertaken; wake woke woken; wear wore worn; weep wept wept; win won won;
withdraw withdrew withdrawn; write wrote written
"""
_VERB_FORMS = [forms.split() for forms in _IRREGULAR_VERBS.split(";")]
# A past form that is also a base form ("lay", past of "lie") stays itself; so do stop words ("was", "had").
_BASE_FORMS = {
    stem(form): stem(forms[0])
    for forms in _VERB_FORMS
    for form in forms[1:]
    if form not in STOP_WORDS and form not in {base for base, *_ in _VERB_FORMS}
}


# A doer's "-er", "-or", and the "-ee" of whom it is done to, which the stemmer leaves as "e" ("attendees" →
# "attende").
AGENT_SUFFIXES = ("er", "or", "e")
MIN_AGENT_NOUN_CHARS = 4  # "user", "owner": shorter words ending so ("her", "or") name no doer


# The stem a noun in "-sion" of a verb in "-de" keeps ("decision" → "decis", "conclusion" → "conclus", "erosion" →
# "eros"): the verb's stem ends in "d" instead ("decid", "conclud", "erod").
ACTION_NOUN_SUFFIXES = ("is", "us", "as", "os")
MIN_ACTION_NOUN_CHARS = 4  # "eros": shorter stems ending so ("bus", "gas") are no such nouns


def noun_verbs(terms: Iterable[str]) -> frozenset[str]:
    """The verbs that nouns among `terms` name, as stems. An agent noun's: "owner" → "own", "user" → "use",
    "editor" → "edit", "attendee" → "attend" (the stemmer leaves a short word's "-er" on: "who owns …?" shared
    no term with "owner: Tomás"). An action noun's in "-sion": "decision" → "decid", "conclusion" → "conclud"
    ("What did the team decide?" of "Decision: Ferrocast is moved back to full inspection")."""
    agents = (
        stem(word)
        for term in terms
        if len(term) >= MIN_AGENT_NOUN_CHARS and term.endswith(AGENT_SUFFIXES)
        for word in (term[:-2], term[:-1])
    )
    actions = (
        f"{term[:-1]}d" for term in terms if len(term) >= MIN_ACTION_NOUN_CHARS and term.endswith(ACTION_NOUN_SUFFIXES)
    )
    return frozenset((*agents, *actions))


# A unit's symbol, as a record's field writes it ("odometer_km", "weight_kg", "gap_mm"), and its name's stem; not
# a symbol that is also a word's short form ("min" of "min_temp").
UNIT_SYMBOLS = {
    "km": "kilometr",
    "cm": "centimetr",
    "mm": "millimetr",
    "kg": "kilogram",
    "ml": "millilitr",
    "hr": "hour",
    "hrs": "hour",
    "mins": "minut",
    "mph": "mile",
}


def unit_names(terms: Iterable[str]) -> frozenset[str]:
    """The stems of the units whose symbols are among `terms` ("km" → "kilometr"): "How many kilometres has bus 521
    done?" of "odometer_km: 702115"."""
    return frozenset(UNIT_SYMBOLS[term] for term in terms if term in UNIT_SYMBOLS)


def base_term(term: str) -> str:
    """A term (a stem) with an irregular verb's past forms taken to its base form ("rose" → "rise")."""
    return _BASE_FORMS.get(term, term)


# An initialism is written in two to this many capitals ("ARR", "AEs": a plural's "s" aside), one a word.
MAX_INITIALISM_WORDS = 5


def _initialisms(text: str) -> set[str]:
    """The initialisms `text` writes, in lower case ("New ARR for the AEs" → {"arr", "ae"})."""
    return {initialism.lower() for word in WORD.findall(text) if (initialism := _initialism(word))}


def _initialism(word: str) -> str:
    """The initialism `word` writes, its plural's "s" aside ("NCRs" → "NCR"); "" when it writes none."""
    letters = word[:-1] if word.endswith("s") else word
    return letters if 2 <= len(letters) <= MAX_INITIALISM_WORDS and letters.isalpha() and letters.isupper() else ""


def _phrases(text: str) -> list[list[str]]:
    """The runs of words of `text` that no punctuation breaks (spaces, hyphens and apostrophes do not)."""
    phrases: list[list[str]] = [[]]
    end = 0
    for match in WORD.finditer(text):
        if text[end : match.start()].strip(" \t\n-'’"):
            phrases.append([])
        phrases[-1].append(match.group())
        end = match.end()
    return phrases


@lru_cache(maxsize=4096)
def _spelled_out(text: str) -> dict[str, list[str]]:
    """The initialisms the runs of words in `text` could stand for, each with the run's terms: "annual recurring
    revenue" → {"arr": ["annual", "recur", "revenu"]}. A run starts and ends with a content word; a stop word
    inside it is counted ("return on investment": "roi") or left out ("Department of Transport": "dt"); no
    punctuation is ("An annual report: read it" spells no "ARR"). Cached, and read only by its callers: a chat turn
    asks it of one question for every candidate that writes an initialism."""
    runs: dict[str, list[str]] = {}
    for phrase in _phrases(text):
        words = [word for word in phrase if word.isalpha()]
        for start, first in enumerate(words):
            if not is_content_word(first):
                continue
            for end in range(start + 2, min(start + MAX_INITIALISM_WORDS, len(words)) + 1):
                run = words[start:end]
                if not is_content_word(run[-1]):
                    continue
                content = [word for word in run if is_content_word(word)]
                terms = [stem(word.lower()) for word in content]
                for initials in {"".join(word[0] for word in run), "".join(word[0] for word in content)}:
                    if len(initials) > 1:
                        runs.setdefault(initials.lower(), terms)
    return runs


def initialism_terms(question: str, text: str) -> frozenset[str]:
    """The question's terms that `text` holds by an initialism, either way: the question's "ARR" where the text
    says "annual recurring revenue", the question's "annual recurring revenue" where the text says "ARR". The
    stemmer sees no likeness between the two."""
    held: set[str] = set()
    asked = _initialisms(question)
    if asked:
        spelled_in_text = _spelled_out(text)
        held.update(stem(initialism) for initialism in asked if initialism in spelled_in_text)
    written = _initialisms(text)
    if written:
        for initials, terms in _spelled_out(question).items():
            if initials in written:
                held.update(terms)
    return frozenset(held)


# --- BM25 (the library's ranking) ----------------------------------------------------------

# Okapi BM25 with the usual parameters (Robertson & Zaragoza 2009); the library ranks its records with them.
BM25_K1 = 1.2
BM25_B = 0.75


def bm25_weight(tf: int, df: int, total: int, length: int, average_length: float) -> float:
    """One query term's BM25 weight in one text: `tf` occurrences, in `df` of `total` texts."""
    idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / (average_length or 1.0))
    return idf * tf * (BM25_K1 + 1) / (tf + norm)


def bm25_rank(question: str, texts: Sequence[str]) -> list[float]:
    """BM25 score of each text for `question`, the texts themselves as the collection (their idf and
    lengths), the library's terms and parameters: rarer shared terms weigh more than common ones."""
    wanted = query_terms(question)
    analysed = [Counter(analyze(text)) for text in texts]
    if not wanted or not analysed:
        return [0.0] * len(texts)
    lengths = [sum(terms.values()) for terms in analysed]
    average = sum(lengths) / len(lengths)
    df = {term: sum(1 for terms in analysed if term in terms) for term in wanted}
    return [
        sum(bm25_weight(terms[t], df[t], len(texts), length, average) for t in wanted if terms[t])
        for terms, length in zip(analysed, lengths, strict=True)
    ]


def is_content_word(word: str, ignored: frozenset[str] = OVERLAP_STOP_WORDS) -> bool:
    """Neither a single letter nor one of `ignored` (lower-cased first)."""
    lower = word.lower()
    return len(lower) > 1 and lower not in ignored


def term_sequence(text: str, *, ignored: frozenset[str] = OVERLAP_STOP_WORDS) -> list[str]:
    """The stemmed content words of `text` as they run, repeats included (which stand side by side)."""
    words = [*WORD.findall(text), *iso_month_names(text)]
    return [word_term(word) for word in words if is_content_word(word, ignored)]


def word_term(word: str) -> str:
    """A word's term: its stem, and an initialism's plural its singular's ("Which NCRs are open?" of "NCR-2026-044
    … status: open"), as the stemmer keeps the "s" of a word with no vowel before it."""
    return stem((_initialism(word) or word).lower())


def content_terms(text: str, *, ignored: frozenset[str] = OVERLAP_STOP_WORDS) -> list[str]:
    """The stemmed content words of `text`, each once, in order of first appearance (token overlap)."""
    return list(dict.fromkeys(term_sequence(text, ignored=ignored)))


# A time said relative to when the question is asked ("next year's budget", "last month"): files name it
# otherwise ("the FY27 budget", "in October"), so its words are no terms a sentence must share. Not a day:
# "next day" is a delivery service, "the last day" of a notice period is no time relative to now.
_RELATIVE_TIME = re.compile(
    r"\b(?:next|last|this|previous|coming|past)\s+(?:year|month|week|quarter|night|season|term|semester)(?:['’]s)?\b",
    re.I,
)


def without_relative_time(text: str) -> str:
    """`text` without a time said relative to now ("Who is on call this week?" → "Who is on call ?")."""
    return _RELATIVE_TIME.sub(" ", text)


def question_terms(question: str) -> list[str]:
    """Content terms of a question: stop words, question words ("what", "how much") and a relative time removed."""
    return content_terms(without_relative_time(question), ignored=OVERLAP_STOP_WORDS | QUESTION_WORDS)


def surface_words(text: str, ignored: frozenset[str] = OVERLAP_STOP_WORDS | QUESTION_WORDS) -> dict[str, str]:
    """stem → the first word of `text` with that stem, as written (for phrasing terms to a human)."""
    words: dict[str, str] = {}
    for word in WORD.findall(text):
        if is_content_word(word, ignored):
            words.setdefault(stem(word.lower()), word)
    return words


def quote_list(words: Sequence[str], limit: int = MAX_LISTED_TERMS) -> str:
    """“a”, “b”, “c” (and "…" past `limit`)."""
    quoted = [f"“{word}”" for word in words[:limit]]
    if len(words) > limit:
        quoted.append("…")
    return ", ".join(quoted)


def and_list(items: Sequence[str], limit: int = MAX_LISTED_TERMS) -> str:
    """a, b and c (and "…" past `limit`)."""
    shown = [*items[:limit], *(["…"] if len(items) > limit else [])]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


# --- sentences -------------------------------------------------------------------------

# Within a line, a sentence ends at . ! ? (a closing quote or bracket after it stays with the sentence)
# before whitespace and an opening capital, digit or quote; a line break ends one too (split_sentences).
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|ca|no|nr|fig|figs|tab|sec|ch|p|pp|vol|dr|mr|mrs|ms|prof|st|inc|ltd|co|jr|sr)\."
    # An initial ("Ruth C. Halden") is a capital after a space; a unit's letter after a figure ("61.2 °C.",
    # "5 V.") ends its sentence.
    r"|(?<![\w°])(?<!\d\s)(?-i:[A-Z])\.)$",
    re.I,
)
_HEADING_MARK = re.compile(r"^\s*#{1,6}\s+|^\s*[=\-_*]{3,}\s*$")
# A line that stops without punctuation is prose its author or a layout wrapped (Markdown, plain text, e-mail, a
# PDF's column) when the next line goes on with its sentence: when the line ends in a word no sentence ends in
# ("… the melting temperature of"), when the next one opens as a sentence's middle does (`_goes_on`) and the
# paragraph so far runs at least _WRAPPED_LINE_CHARS or four words, or when the line runs _WIDE_LINE_CHARS
# whatever follows. A shorter line before a capital is an item of its own: a slide's or a PDF list's, whose
# markers PDFium reads apart ("Resolution median 19 hours" / "Priority 1 tickets resolved …").
_WRAPPED_LINE_CHARS = 40
_WIDE_LINE_CHARS = 60


def _unwrap(text: str) -> str:
    """Join hard-wrapped lines back into their paragraph's lines; lists, headings and tables keep theirs."""
    lines: list[str] = []
    last = ""  # the previous line as written, before any join
    for line in text.split("\n"):
        previous = lines[-1].rstrip() if lines else ""
        # A quoted e-mail's lines ("> …") wrap as any prose does, each under its own mark.
        quoted = previous.lstrip().startswith(">") and line.lstrip().startswith(">")
        if quoted:
            line = line.lstrip()[1:]
        words = last.split()
        continues = (
            (
                (words and words[-1].lower() in STOP_WORDS)
                or (_goes_on(line) and (len(previous) >= _WRAPPED_LINE_CHARS or len(previous.split()) >= 4))
                or len(last.strip()) >= _WIDE_LINE_CHARS
            )
            and previous[-1] not in ".!?:;"
            and line.strip()
            and not (_HEADING_MARK.match(previous) or is_table_row(previous))
            and not _stands_apart(line)
        )
        last = line
        if continues:
            lines[-1] = f"{previous} {line.strip()}"
        elif quoted:
            lines.append(f">{line}")
        elif _is_definition_term(previous, line):
            lines[-1] = f"{previous}: {line.strip()}"
        else:
            lines.append(line)
    return "\n".join(lines)


# A definition list's term is a name of at most this many words, or an option's spelling ("-e PATTERNS,
# --regexp=PATTERNS"); a longer line above a sentence is a heading ("Annual water loss report 2025").
TERM_MAX_WORDS = 3


def _is_definition_term(previous: str, line: str) -> bool:
    """Whether `previous` is the term of a definition list and `line` the sentence that defines it
    ("-c, --count" above "Suppress normal output; instead print a count …"): a short name or an
    option that says nothing on its own, then a sentence, whole or wrapped onto the next line (a
    PDF's). Said together, the sentence names what it is about."""
    term, sentence = previous.strip(), line.strip()
    return (
        0 < len(term) < _WRAPPED_LINE_CHARS
        and (term.startswith("-") or len(WORD_CHARS.findall(term)) <= TERM_MAX_WORDS)
        and term[-1] not in ".!?:;,"
        and sentence[:1].isupper()
        and (sentence[-1] in ".!?" or len(sentence) >= _WRAPPED_LINE_CHARS)
        and not (_stands_apart(term) or _stands_apart(sentence))
        and len(WORD_CHARS.findall(sentence)) >= 3
        # A title above its version line ("Checkout overview" / "Version 3, September 2026.") defines nothing.
        and is_prose(_SENTENCE_END.split(sentence, maxsplit=1)[0])
    )


def _goes_on(line: str) -> bool:
    """The line opens as a sentence's middle may: in lower case, with a figure, a unit or a bracket ("°C in …")."""
    first = line.strip()[:1]
    return first.islower() or not first.isalpha()


def _stands_apart(line: str) -> bool:
    """A heading, a list item, a table row or a title: a line that is joined to no other."""
    return bool(_HEADING_MARK.match(line) or LIST_MARK.match(line) or is_table_row(line) or _is_title(line))


def _is_title(piece: str) -> bool:
    """A heading without a Markdown mark ("Rollout Budget Memo", "BUDGET 2022", a DOCX heading):
    no closing punctuation, and every word longer than a linking word is capitalised. A
    heading names a subject; it states nothing, so it is no sentence. A table's row said as a record is none,
    though every word of it be a name ("Phase: 1; Schools: North High")."""
    text = piece.strip()
    if not text or text[-1] in ".!?;:\"'”’)]" or csv_row_fields(text) or _gives_a_figure(text):
        return False
    words = re.findall(r"[^\W\d_][\w'’-]*", text)
    # A sentence's first word is capitalised whatever it is: it tells nothing of a line of several words ("Close
    # the tap now"); a word alone on its line ("Idle" above what the idle class does) is a heading's.
    capitalised = words[:1] and (len(words) == 1 or words[0].isupper() or any(word[0].isupper() for word in words[1:]))
    long_words = [word for word in words if len(word) > 3]
    return bool(capitalised and long_words) and all(word[0].isupper() for word in long_words)


def _is_numbered_heading(before: str, line: str, after: str) -> bool:
    """Whether `line` is a section's number and name, a heading though it reads as a list's item: above the
    clauses numbered under it ("1. Amount and payment" above "1.1 The Foundation grants …"), or standing
    between lines that are no list's items ("3. Cranes and lifting" between two paragraphs; `before` and
    `after` are the nearest lines that are not blank, so a list with blank lines between its items is still a
    list)."""
    number = _clause_number(line)
    if not (number and LIST_MARK.match(line)) or not is_heading_line(line.strip()[len(number) :].lstrip(". ")):
        return False  # "124 if COMMAND times out" (an exit status and its meaning) has no section's number
    return _clause_number(after).startswith(f"{number}.") or not (LIST_MARK.match(before) or LIST_MARK.match(after))


def _nearest_filled(lines: list[str], start: int, step: int) -> str:
    """The first line from `start` on, going by `step`, that is not blank; "" when there is none."""
    while 0 <= start < len(lines):
        if lines[start].strip():
            return lines[start]
        start += step
    return ""


def _clause_number(line: str) -> str:
    """A line's leading clause number without its last dot ("2.3" of "2.3 Budget changes …", "1" of "1. Amount …")."""
    first, space, _rest = line.strip().partition(" ")
    number = first.rstrip(".")
    parts = number.split(".")
    return number if space and all(part.isdigit() and len(part) <= 3 for part in parts) else ""


def _gives_a_figure(text: str) -> bool:
    """A label and the figure it has ("Total due: $4,275.00", an invoice's line): a value, not a title, though its
    words be capitalised. A title may hold a date after its colon ("Board of Directors: Minutes of 14 October
    2026"); a value is its figure, with its currency."""
    _label, colon, value = text.partition(": ")
    return bool(colon) and value.lstrip("€$£¥ ")[:1].isdigit()


def _wraps(first: str, line: str) -> bool:
    """Whether a heading's first line goes on in `line`: it is no whole title ("NAME", "Rollout Budget Memo")
    nor closed by punctuation, and `line` stands apart from nothing."""
    return first.rstrip()[-1:] not in ".!?:;" and not _is_title(first) and not _stands_apart(line)


def split_leading_heading(text: str) -> tuple[str, str]:
    """(heading, the rest) when the first line of `text` is the heading of what follows: a few words
    not closed by punctuation, no list item or table row, with more text after it ("Onboarding notes
    for the field team", a scanned memo's title), or a question in a paragraph of its own above its
    answer; else ("", text). A heading in sentence case is not a
    title by its capitals (`_is_title`); at the top of a section it still names a subject and states
    nothing."""
    first, newline, rest = text.lstrip("\n").partition("\n")
    # A title the page wrapped goes on in lower case ("Pilot report: three laptops in six" above "classrooms").
    while newline and rest[:1].islower() and _wraps(first, rest.partition("\n")[0]):
        more, newline, rest = rest.partition("\n")
        first = f"{first.rstrip()} {more.strip()}"
    # A paragraph of its own may close with its parenthesis ("Survey (May 2026)") or, as a FAQ's entries do,
    # be the question the text below answers ("When does my health insurance start?").
    alone = rest.startswith("\n")
    heading = first.rstrip().removesuffix(")").removesuffix("?") if alone else first
    if not newline or not rest.strip() or not is_heading_line(heading):
        return "", text
    return _HEADING_MARK.sub("", first.strip()), rest


def heading_alone(text: str) -> str:
    """The heading, when `text` is a heading and nothing else (a section with no text of its own:
    "# On-call handbook" → "On-call handbook"); else ""."""
    line = text.strip()
    return _HEADING_MARK.sub("", line) if "\n" not in line and is_heading_line(line) else ""


def split_sentences(text: str) -> list[str]:
    """The sentences of a span's text, list markers removed, headings and fragments skipped."""
    return [sentence for line in sentences_by_line(text) for sentence in line]


def sentences_by_line(text: str) -> list[list[str]]:
    """`split_sentences`, grouped by the line (a paragraph, a list item, a row, once wrapped lines are joined)
    each stands on: whether a question stands alone on its line, or a request runs on into the next sentence
    ("Could you price this change by 27 November? The board has set aside EUR 40,000 for it.")."""
    pieces: list[tuple[int, str]] = []
    lines = _unwrap(text).split("\n")
    for number, line in enumerate(lines):
        if _clause_number(line) and _is_numbered_heading(
            _nearest_filled(lines, number - 1, -1), line, _nearest_filled(lines, number + 1, 1)
        ):
            continue
        same_line = False  # a line is a paragraph, a list item or a row: nothing is glued across lines
        # A table's row is one record, whatever sentences its cells hold ("description: … 21%. Please reissue.").
        # Markup comes off the line before it is split: emphasis may hold two sentences ("*Last reviewed: January
        # 2026. If you can't find the answer here, contact your Housing Officer.*").
        for piece in [line] if csv_row_fields(line) else _SENTENCE_END.split(_without_markup(line)):
            piece = piece.strip()
            if not piece:
                continue
            # "e.g. Berlin" or "Dr. Smith" is not a sentence end, nor is a full stop inside a quotation
            # ('"I don't need the maps offline. I need my notes."'): glue the split back.
            if same_line and (_ABBREVIATION.search(pieces[-1][1]) or _inside_quotation(pieces[-1][1])):
                pieces[-1] = (number, f"{pieces[-1][1]} {piece}")
            else:
                pieces.append((number, piece))
            same_line = True
    grouped: dict[int, list[str]] = {}
    for number, piece in pieces:
        if _HEADING_MARK.match(piece) or _is_title(piece):
            continue
        mark = LIST_MARK.match(piece)
        piece = re.sub(r"\s+", " ", _without_markup(piece[mark.end() :] if mark else piece)).strip()
        # A task's state makes a statement of its item: "To do: Smartcard issued".
        piece = f"{_task_state(mark.group())}{piece}" if mark and piece else piece
        if len(WORD_CHARS.findall(piece)) >= 3:
            grouped.setdefault(number, []).append(piece)
    return list(grouped.values())


def _task_state(mark: str) -> str:
    """What a task list's box says of its item ("- [x] …" is done, "- [ ] …" is not): the item alone would state
    as done what is still to do ("Temporary car park agreed with the landlord"). "" for another list mark."""
    box = mark.partition("[")[2][:1]
    return {"x": "Done: ", "X": "Done: ", " ": "To do: "}.get(box, "") if "]" in mark else ""


# Markdown's markup, not its words: emphasis, code ticks, a link's target. A reader is shown "Decision: we will
# …", not "**Decision:** we will …". (A quote's and a list's marks and a heading's are split_sentences' to drop.)
_MARKUP = (
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"(\*\*|__|`+)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),
)


def _without_markup(text: str) -> str:
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return text


def _inside_quotation(text: str) -> bool:
    """`text` opens a quotation it does not close."""
    return text.count('"') % 2 == 1 or text.count("“") > text.count("”")


def cut_text(text: str, limit: int) -> str:
    """Whitespace collapsed; text longer than `limit` characters cut at a word boundary and marked with "…"."""
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:") + "…"


def comparison_key(text: object) -> str:
    """Comparison key for dedup: case, punctuation and spacing do not matter."""
    if not isinstance(text, str):
        return ""
    return re.sub(r"[^\w%]+", " ", text.lower().replace("…", "")).strip()
