"""The lexical channel: BM25 top-k under a visibility condition, without under-return.

MaxScore runs first; its candidates are exact down to its bound θ. The
candidates are walked best-first and kept when the :class:`Selection`
admits them — checked in growing batches by key, switching to the full set of
admitted keys once many have failed. When MaxScore's candidates run out before
``k`` admitted documents scoring at least θ are found, every matching document
is scored instead. So a selective filter never makes the channel return fewer
than ``k`` hits while ``k`` exist.
"""

from __future__ import annotations

from typing import Any

import apsw

from embedmind.backend.sqlite.lexical import widening
from embedmind.backend.sqlite.lexical.index import LexicalIndex, Scored, query_terms
from embedmind.backend.sqlite.lexical.walk import admitted_best_first
from embedmind.lexical import maxscore

_MAXSCORE_SLACK = 16
"""Extra candidates MaxScore keeps beyond ``k``, room for a few filtered-out hits."""


def text_channel(
    conn: apsw.Connection,
    lexical: LexicalIndex,
    text: str,
    condition: tuple[str, list[Any]],
    k: int,
) -> list[tuple[int, float]]:
    """The top ``k`` admitted documents by BM25: ``(key, score)`` best first."""
    lists, avgdl = lexical.term_lists(conn, query_terms(text))
    return scored_channel(conn, lists, avgdl, condition, k, lexical.tally)


def widened_channel(
    conn: apsw.Connection,
    lexical: LexicalIndex,
    text: str,
    condition: tuple[str, list[Any]],
    k: int,
    base: int,
) -> tuple[list[tuple[int, float]], widening.Widened]:
    """:func:`text_channel`'s top ``k``, and what key-term sub-queries add to its first ``base``.

    Widening against a fixed ``base`` (the fusion depth), not ``k``, keeps
    what it adds independent of how many hits were asked for. The term lists
    are read one term at a time, so that each is known by name (explain names
    the sub-query that brought a candidate in).
    """
    named = [(term, lexical.term_lists(conn, [term])) for term in query_terms(text)]
    present = [(term, found[0][0], found[1]) for term, found in named if found[0]]
    if not present:
        return [], widening.Widened([], {})
    terms = [term for term, _, _ in present]
    lists = [term_list for _, term_list, _ in present]
    avgdl = present[0][2]
    found = scored_channel(conn, lists, avgdl, condition, k, lexical.tally)
    return found, widening.widen(conn, terms, lists, avgdl, condition, found[:base])


def scored_channel(
    conn: apsw.Connection,
    lists: list[maxscore.TermList],
    avgdl: float,
    condition: tuple[str, list[Any]],
    k: int,
    tally: maxscore.Tally | None = None,
) -> list[tuple[int, float]]:
    """The top ``k`` admitted documents of the query whose term lists are ``lists``."""
    keys, scores, theta = maxscore.top(lists, avgdl, k + _MAXSCORE_SLACK, tally)
    found = admitted_best_first(conn, Scored(keys, scores), condition, k)
    if theta == 0.0 or (len(found) == k and found[-1][1] >= theta):
        return found
    keys, scores = maxscore.exhaustive(lists, avgdl)
    return admitted_best_first(conn, Scored(keys, scores), condition, k)
