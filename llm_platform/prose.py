"""Is a line prose? A test of its words alone (no stemmer, no Django): the extraction child uses it too."""

import re

# Prose is mostly lower-case words (the first may be capitalised): at least PROSE_MIN_WORDS of them,
# and PROSE_SHARE of the words that have letters (figures and symbols aside: "Losses fell from 24 %
# to 19 % in 2022." is prose). A synopsis ("grep [OPTION...] -e PATTERNS..."), an option tag, a
# running header ("GREP(1) User Commands GREP(1)"), a title or a URL alone is not.
PROSE_MIN_WORDS = 2
PROSE_SHARE = 0.5
_PROSE_WORD = re.compile(r"[(“\"'‘]*[a-z][a-z'’-]*[a-z][)”\"'’.,;:!?]*")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_URL = re.compile(r"<?(?:https?://|www\.)\S+|\S+@\S+\.\w+")
# A row of a table, never prose (nor a wrapped line of it: llm_platform.terms.split_sentences): Markdown's
# ("| a | b |"), a Word or HTML table's cells as extracted ("a | b | c"), and a CSV row as extracted
# ("district: Harbour; year: 2023; bursts: 63").
TABLE_ROW = re.compile(r"^\s*\||^.*\S \| \S|^[^:;\n]{1,60}: [^;\n]*(?:; [^:;\n]{1,60}: [^;\n]*)+$")


def is_prose(sentence: str) -> bool:
    if TABLE_ROW.match(sentence):
        return False
    words = [word for word in _URL.sub(" ", sentence).split() if _HAS_LETTER.search(word)]
    if words:
        words[0] = words[0][:1].lower() + words[0][1:]
    prose = sum(1 for word in words if _PROSE_WORD.fullmatch(word))
    return prose >= PROSE_MIN_WORDS and prose >= PROSE_SHARE * len(words)
