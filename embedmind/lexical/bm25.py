"""Lucene-style BM25 scoring, vectorised with numpy.

Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond"
(2009), with Lucene's always-positive idf::

    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(t, d) = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

summed over the distinct query terms present in ``d``; k1 = 1.2, b = 0.75.
N, df and avgdl are collection-wide statistics over every indexed document.
The per-posting score itself is computed once, in float32, by
:meth:`embedmind.lexical.maxscore.TermList.scores` (the one live copy; the
textbook oracle in ``tests/test_bm25_reference.py`` checks recall against it).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75

FloatArray = npt.NDArray[np.float64]


def idf(df: int, doc_count: int) -> float:
    """Lucene's BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (doc_count - df + 0.5) / (df + 0.5))


def upper_bound(max_tf: int, min_length: int, term_idf: float, avgdl: float) -> float:
    """Largest contribution any posting of a block can make (block-max score).

    The BM25 term weight grows with tf and shrinks with document length, so the
    block's largest tf over its shortest document bounds every posting in it.
    """
    norm = K1 * (1.0 - B + B * (min_length / avgdl))
    return term_idf * max_tf * (K1 + 1.0) / (max_tf + norm)


def upper_bounds(
    max_tf: FloatArray, min_length: FloatArray, term_idf: float, avgdl: float
) -> FloatArray:
    """:func:`upper_bound` of many blocks at once."""
    norm = K1 * (1.0 - B + B * (min_length / avgdl))
    bounds: FloatArray = term_idf * max_tf * (K1 + 1.0) / (max_tf + norm)
    return bounds


def ceiling(weights: dict[str, float], dfs: dict[str, int], doc_count: int) -> float:
    """The largest score any document could reach: ``Σ weight · idf · (k1 + 1)``.

    Over the query's weighted terms that some document holds (``dfs[t] > 0``):
    a term's contribution approaches ``idf · (k1 + 1)`` as its tf grows, so no
    document reaches the sum. Both backends compute it here from their own
    statistics (:mod:`embedmind.evidence` normalises BM25 by it).
    """
    return sum(
        weight * idf(dfs[term], doc_count) * (K1 + 1.0)
        for term, weight in weights.items()
        if dfs.get(term, 0) > 0
    )
