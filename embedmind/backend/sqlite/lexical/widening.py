"""Candidate widening on SQLite: the key terms' own lists bring candidates, the primary scores them.

The episodic seed's ``search_with_limits``; the rule and its constants are
:mod:`embedmind.lexical.widening`'s, shared with the PostgreSQL backend. Each
sub-query takes its key term's first admitted memories by that term's BM25
alone, from the postings the primary query already looked up.

Because the lexical channel's first ``depth`` are exact under the primary
query, every widened candidate scores at most the ``depth``-th one: widening
appends to the list, in primary-score order, and can change a fused result
only through the other lists (a widened turn the vector channel also ranks
well climbs). A text-only recall is therefore unchanged by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite.lexical.index import Scored
from embedmind.backend.sqlite.lexical.walk import admitted_best_first
from embedmind.lexical import maxscore
from embedmind.lexical import widening as defaults
from embedmind.lexical.maxscore import TermList


@dataclass(frozen=True)
class Widened:
    """Candidates a sub-query brought in beyond the primary list.

    Attributes:
        items: ``(key, primary-query score)`` best first (ties by key).
        via: For each key, the key term whose sub-query brought it in first.
    """

    items: list[tuple[int, float]]
    via: dict[int, str]


def key_terms(lists: Sequence[TermList], limit: int) -> list[int]:
    """Positions (into ``lists``) of the sub-query terms: the rarest, rarest first.

    A query of one term has no sub-query (it would be the query itself), and
    at most all terms but one get one. Ties in idf keep list order, so the
    choice is deterministic.

    Example:
        >>> from embedmind.lexical.maxscore import TermList
        >>> import numpy as np
        >>> def t(idf):
        ...     return TermList(np.zeros(0, np.int64), np.zeros(0, np.float32),
        ...                     np.zeros(0, np.float32), idf, 0.0)
        >>> key_terms([t(1.0), t(0.5), t(3.0)], 2)
        [2, 0]
    """
    if len(lists) < 2:
        return []
    order = sorted(range(len(lists)), key=lambda i: (-lists[i].idf, i))
    return order[: min(limit, len(lists) - 1)]


def primary_scores(
    lists: Sequence[TermList], avgdl: float, keys: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """The primary query's BM25 score of each of ``keys`` (0 where no term matches).

    The same sum :func:`embedmind.lexical.maxscore.exhaustive` computes,
    looked up by binary search for just these keys.
    """
    return maxscore.lookup(lists, avgdl, keys)


def widen(
    conn: apsw.Connection,
    terms: Sequence[str],
    lists: Sequence[TermList],
    avgdl: float,
    condition: tuple[str, list[Any]],
    found: Sequence[tuple[int, float]],
    per_sub_query: int | None = None,
    sub_queries: int | None = None,
) -> Widened:
    """The candidates the key-term sub-queries add to ``found``, scored by the primary query.

    Args:
        conn: A connection inside the recall's read transaction.
        terms: The query terms naming ``lists``, position by position.
        lists: The primary query's term lists.
        avgdl: Their average document length.
        condition: The recall's visibility condition (widening admits only
            what the primary channel could).
        found: The primary lexical list already taken.
        per_sub_query: Candidates each sub-query contributes (default
            :data:`embedmind.lexical.widening.PER_SUB_QUERY`).
        sub_queries: How many key terms get a sub-query (default
            :data:`embedmind.lexical.widening.SUB_QUERIES`).
    """
    per_sub_query = defaults.PER_SUB_QUERY if per_sub_query is None else per_sub_query
    sub_queries = defaults.SUB_QUERIES if sub_queries is None else sub_queries
    seen = {key for key, _ in found}
    via: dict[int, str] = {}
    for i in key_terms(lists, sub_queries):
        term = lists[i]
        scored = Scored(term.keys, term.scores(avgdl))
        for key, _ in admitted_best_first(conn, scored, condition, per_sub_query):
            if key not in seen:
                seen.add(key)
                via[key] = terms[i]
    if not via:
        return Widened([], {})
    keys = np.fromiter(via, dtype=np.int64, count=len(via))
    scores = primary_scores(lists, avgdl, keys)
    items = sorted(
        zip(keys.tolist(), scores.tolist(), strict=True), key=lambda item: (-item[1], item[0])
    )
    return Widened(items, via)
