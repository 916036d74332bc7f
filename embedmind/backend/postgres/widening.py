"""Candidate widening on PostgreSQL: key-term sub-queries bring candidates, the primary scores them.

:mod:`embedmind.lexical.widening`'s rule and constants, in SQL: one sub-query
per key term — the query's :data:`~embedmind.lexical.widening.SUB_QUERIES`
rarest own terms (fewest postings), rarest first, never all of them — each
taking its first :data:`~embedmind.lexical.widening.PER_SUB_QUERY`
admitted memories by that term's BM25 alone. The candidates not already in
the primary list's first ``base`` are then scored with the *primary* query
(:func:`.lexical.scores_of`: the same postings, weights and statistics), so
widening never invents a score: it only decides which memories the lexical
list that fusion sees holds, and a text-only recall is unchanged by it.

The primary query is :func:`.lexical.text_top`'s, alias expansions included,
so the widened list's first ``k`` are exactly a text recall's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.backend.postgres import lexical
from embedmind.lexical import widening as defaults
from embedmind.lexical.aliases import Table
from embedmind.lexical.bm25 import K1, B

Conn = psycopg.Connection[TupleRow]
Scored = list[tuple[int, float]]

_BY_TERM = sql.SQL(
    """
    WITH stats AS (
        SELECT sum(total_length)::float8 / greatest(sum(doc_count), 1) AS avgdl FROM lex_stats
    )
    SELECT p.key FROM lex_postings p JOIN memories m ON m.key = p.key CROSS JOIN stats s
    WHERE p.term = %s AND {condition}
    ORDER BY p.tf::float8 / (p.tf + {k1} * (1 - {b} + {b} * p.length / s.avgdl)) DESC, p.key
    LIMIT %s
    """
)
"""A sub-query: one term's postings best first (its idf is a constant factor), filtered."""


def key_terms(conn: Conn, terms: Sequence[str], limit: int) -> list[str]:
    """The sub-query terms: the rarest of the query's terms that occur, rarest first.

    A query with fewer than two such terms has none (the sub-query would be
    the query itself), and at most all but one get one; ties keep query order.
    """
    rows = conn.execute(
        "SELECT term, count(*) FROM lex_postings WHERE term = ANY(%s) GROUP BY term",
        (list(terms),),
    )
    df = {str(term): int(n) for term, n in rows}
    present = [term for term in terms if term in df]
    if len(present) < 2:
        return []
    order = sorted(range(len(present)), key=lambda i: (df[present[i]], i))
    return [present[i] for i in order[: min(limit, len(present) - 1)]]


def text_widened(
    conn: Conn,
    text: str,
    table: Table,
    condition: sql.Composable,
    params: Sequence[Any],
    k: int,
    base: int,
) -> tuple[Scored, Scored, dict[int, str]]:
    """The top ``k``, the candidates sub-queries add to its first ``base``, and their key terms.

    Returns:
        ``(top k, widened (key, primary score) best first with ties by key,
        {widened key: the key term whose sub-query brought it in first})``.
    """
    weights = lexical.weighted_terms(text, table)
    found = lexical.top(conn, weights, condition, params, k)
    if not found:
        return found, [], {}
    seen = {key for key, _ in found[:base]}
    via: dict[int, str] = {}
    query = _BY_TERM.format(
        condition=condition, k1=sql.Literal(K1), b=sql.Literal(B)
    )  # fmt: skip
    for term in key_terms(conn, lexical.query_terms(text), defaults.SUB_QUERIES):
        for (key,) in conn.execute(query, [term, *params, defaults.PER_SUB_QUERY]):
            if int(key) not in seen:
                seen.add(int(key))
                via[int(key)] = term
    if not via:
        return found, [], {}
    scores = lexical.scores_of(conn, weights, list(via))
    items = sorted(((key, scores.get(key, 0.0)) for key in via), key=lambda i: (-i[1], i[0]))
    return found, items, via
