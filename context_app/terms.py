"""Words as the library and the offline provider compare them: lower-cased, stop words out, stemmed.

No Django here: the offline provider's handlers use it in any process.
"""

import re
import threading
from functools import lru_cache

import snowballstemmer

MAX_TERM_LENGTH = 64

# A compact English stop list (function words only; content words such as
# "use" or "new" stay searchable).
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not of off on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves""".split()
)

_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)
_per_thread = threading.local()  # a Snowball stemmer keeps state between calls: one per thread


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word ("arguments" → "argument"), safe across threads."""
    stemmer = getattr(_per_thread, "stemmer", None)
    if stemmer is None:
        stemmer = _per_thread.stemmer = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)[:MAX_TERM_LENGTH]


def analyze(text: str) -> list[str]:
    """Index terms of `text` in order: lower-cased word stems without stop words or single letters."""
    terms = []
    for match in _TOKEN_RE.finditer(text.lower()):
        word = match.group()
        if len(word) > 1 and word not in STOP_WORDS:
            terms.append(stem(word))
    return terms
