"""The text analyzer shared by indexing and querying.

Unicode-aware: text is NFKC-normalised and case-folded, split into runs of
word characters (letters, digits and underscore in any script), English stop
words are dropped and the rest reduced by the Snowball English stemmer
(PyStemmer). Queries and documents go through exactly the same steps, and user
text is only ever data: there is no query syntax to inject.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter

import Stemmer

MAX_TOKEN_CHARS = 64
_WORD = re.compile(r"\w+")

# English function words: frequent, content-free, and costly to score.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm
    i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not
    of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd
    you'll you're you've your yours yourself yourselves s t d ll m re ve
    """.split()
)

_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # PyStemmer objects are not thread-safe; give each thread its own.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english", 100_000)
        _local.stemmer = stemmer
    return stemmer


def tokenize(text: str) -> list[str]:
    """Split text into normalised, case-folded word tokens (stop words kept)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [t for t in _WORD.findall(folded) if len(t) <= MAX_TOKEN_CHARS]


def analyze(text: str) -> list[str]:
    """Return the index terms of ``text``, in order, with repeats.

    Example:
        >>> analyze("The cats were running, quickly!")
        ['cat', 'run', 'quick']
    """
    words = [t for t in tokenize(text) if t not in STOP_WORDS]
    return list(_stemmer().stemWords(words)) if words else []


def term_frequencies(text: str) -> tuple[Counter[str], int]:
    """Return the term counts of ``text`` and its length in terms."""
    terms = analyze(text)
    return Counter(terms), len(terms)
