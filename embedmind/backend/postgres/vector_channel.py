"""The vector channel on pgvector: HNSW top-k under a filter, without under-return.

A filtered ``ORDER BY embedding <=> q LIMIT k`` on an HNSW index under-returns
(pgvector #259, #630, #716, #740): the index hands over its ``ef_search``
nearest vectors, the filter drops most of them, and fewer than ``k`` rows are
left — none at all when the filter keeps 0.3 % of the rows. This channel plans
each query so that cannot happen:

1. **Few admitted rows → exact.** The planner's row estimate for the filter
   decides first (it costs nothing); when it is below :data:`ESTIMATE_CHECK`
   the admitted rows are counted, up to :data:`EXACT_BELOW` (a bounded count,
   so a broad filter stops early). At most that many rows are scored exactly —
   a scan of the admitted rows ordered by the distance itself, which no index
   can serve.
2. **Otherwise HNSW with an iterative scan.** ``hnsw.iterative_scan =
   relaxed_order`` lets the index keep producing candidates past
   ``ef_search`` until the ``LIMIT`` is met (up to ``hnsw.max_scan_tuples``);
   ``ef_search`` is raised to at least :data:`MIN_EF_SEARCH`; the relaxed order
   is restored by sorting the (materialised) candidates again. With ``cap``
   (at most ``cap`` vectors per memory: one is memory search, best chunk wins)
   the limit widens until ``k`` memories are found or the index runs dry.
3. **Still short → exact.** When the index stops before ``k`` admitted
   memories (the estimate was wrong, or ``max_scan_tuples`` was reached), the
   admitted rows are scored exactly. So a selective filter never returns fewer
   than ``min(k, admitted)`` hits, whatever the planner believed.

Scores are cosines (``1 - <=>``), higher is better.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

Conn = psycopg.Connection[TupleRow]

EXACT_BELOW = 2_000
"""Admitted rows up to which an exact scan is cheaper than the index (and always complete)."""
ESTIMATE_CHECK = 50_000
"""Planner estimates below this are checked with a bounded count; above, the index runs."""
MIN_EF_SEARCH = 200
"""The HNSW candidate list at least (pgvector's default 40 gives recall near 0.9)."""
MAX_SCAN_TUPLES = 50_000
"""Vectors an iterative scan may visit before it gives up (then the exact scan answers)."""
_OVERFETCH = 2
_SLACK = 10


@dataclass(frozen=True)
class Hit:
    """One vector found: its own key, its memory's key, its cosine to the query."""

    vec_key: int
    key: int
    cosine: float


@dataclass(frozen=True)
class Plan:
    """How a query was answered (for explain and for the tests)."""

    path: str
    """``"exact"``, ``"hnsw"`` or ``"hnsw+exact"`` (the index fell short)."""
    estimate: float
    counted: int | None


@dataclass(frozen=True)
class Space:
    """One vector table: its name and the dimension its HNSW index was built for."""

    table: str
    dimensions: int


def vector_literal(query: npt.NDArray[np.float32]) -> str:
    """Pgvector's text form of a vector (``[x,y,...]``), full float32 precision."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(query, dtype=np.float32)) + "]"


def vector_top(
    conn: Conn,
    space: Space,
    query: npt.NDArray[np.float32],
    condition: sql.Composable,
    params: Sequence[Any],
    k: int,
    *,
    cap: int | None = 1,
    ef: int | None = None,
    exact_below: int = EXACT_BELOW,
) -> tuple[list[Hit], Plan]:
    """The ``k`` admitted vectors nearest ``query``, at most ``cap`` per memory, best first.

    Args:
        conn: A connection inside a transaction (the HNSW settings are local to it).
        space: The vector table and its indexed dimension.
        query: A unit float32 vector.
        condition: SQL over the memory alias ``m`` admitting rows.
        params: The condition's parameters.
        k: Hits wanted.
        cap: Vectors per memory at most (``None``: no cap).
        ef: A search-breadth hint (raised to :data:`MIN_EF_SEARCH`).
        exact_below: Admitted rows up to which the exact scan answers.

    Returns:
        The hits and the plan that produced them.
    """
    if k <= 0:
        return [], Plan("exact", 0.0, 0)
    q = vector_literal(query)
    estimate = _estimate(conn, condition, params)
    counted: int | None = None
    if estimate < ESTIMATE_CHECK:
        counted = _bounded_count(conn, condition, params, exact_below)
        if counted <= exact_below:
            return _exact(conn, space, q, condition, params, k, cap), Plan(
                "exact", estimate, counted
            )
    hits, complete = _hnsw(conn, space, q, condition, params, k, cap, ef)
    if complete:
        return hits, Plan("hnsw", estimate, counted)
    return _exact(conn, space, q, condition, params, k, cap), Plan("hnsw+exact", estimate, counted)


def _estimate(conn: Conn, condition: sql.Composable, params: Sequence[Any]) -> float:
    query = sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {}").format(condition)
    row = conn.execute(query, params).fetchone()
    plan = row[0] if row else [{"Plan": {"Plan Rows": 0}}]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def _bounded_count(conn: Conn, condition: sql.Composable, params: Sequence[Any], bound: int) -> int:
    query = sql.SQL(
        "SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {} LIMIT %s) admitted"
    ).format(condition)
    row = conn.execute(query, [*params, bound + 1]).fetchone()
    return int(row[0]) if row else 0


def _exact(
    conn: Conn,
    space: Space,
    q: str,
    condition: sql.Composable,
    params: Sequence[Any],
    k: int,
    cap: int | None,
) -> list[Hit]:
    # ``embedding <=> q`` (no cast) matches no index expression: an exact scan.
    per_memory: sql.Composable = sql.SQL("")
    if cap is not None:
        per_memory = sql.SQL("WHERE rank <= {}").format(sql.Literal(int(cap)))
    query = sql.SQL(
        """
        SELECT vec_key, key, distance FROM (
            SELECT v.vec_key, v.key, v.embedding <=> %s::vector AS distance,
                   row_number() OVER (PARTITION BY v.key
                                      ORDER BY v.embedding <=> %s::vector, v.vec_key) AS rank
            FROM {table} v JOIN memories m ON m.key = v.key
            WHERE {condition}
        ) scored {per_memory}
        ORDER BY distance, vec_key LIMIT %s
        """
    ).format(table=sql.Identifier(space.table), condition=condition, per_memory=per_memory)
    rows = conn.execute(query, [q, q, *params, k]).fetchall()
    return [Hit(int(v), int(key), 1.0 - float(d)) for v, key, d in rows]


def _hnsw(
    conn: Conn,
    space: Space,
    q: str,
    condition: sql.Composable,
    params: Sequence[Any],
    k: int,
    cap: int | None,
    ef: int | None,
) -> tuple[list[Hit], bool]:
    """Index search; ``complete`` is False when the index ran out before ``k`` memories."""
    ef_search = min(1_000, max(MIN_EF_SEARCH, ef or 0, k))
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)",
        (str(ef_search), str(MAX_SCAN_TUPLES)),
    )
    cast = sql.SQL("v.embedding::vector({})").format(sql.Literal(space.dimensions))
    query = sql.SQL(
        """
        WITH candidates AS MATERIALIZED (
            SELECT v.vec_key, v.key, {cast} <=> %s::vector AS distance
            FROM {table} v JOIN memories m ON m.key = v.key
            WHERE {condition}
            ORDER BY {cast} <=> %s::vector LIMIT %s
        )
        SELECT vec_key, key, distance FROM candidates ORDER BY distance, vec_key
        """
    ).format(cast=cast, table=sql.Identifier(space.table), condition=condition)
    # Over-fetch: a relaxed-order scan may hand over a near vector a little late.
    limit = k * _OVERFETCH + _SLACK
    while True:
        rows = conn.execute(query, [q, *params, q, limit]).fetchall()
        hits = _capped([Hit(int(v), int(key), 1.0 - float(d)) for v, key, d in rows], cap, k)
        if len(hits) >= k:
            return hits, True
        if len(rows) < limit:  # the index is exhausted (or max_scan_tuples was reached)
            return hits, False
        limit *= 4


def _capped(hits: list[Hit], cap: int | None, k: int) -> list[Hit]:
    if cap is None:
        return hits[:k]
    seen: dict[int, int] = {}
    out = []
    for hit in hits:
        if seen.get(hit.key, 0) < cap:
            seen[hit.key] = seen.get(hit.key, 0) + 1
            out.append(hit)
            if len(out) == k:
                break
    return out
