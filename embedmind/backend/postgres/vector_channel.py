"""The vector channel on pgvector: HNSW top-k under a filter, without under-return.

A filtered ``ORDER BY embedding <=> q LIMIT k`` on an HNSW index under-returns
(pgvector #259, #630, #716, #740): the index hands over its ``ef_search``
nearest vectors, the filter drops most of them, and fewer than ``k`` rows are
left — none at all when the filter keeps 0.3 % of the rows. This channel plans
each query so that cannot happen:

1. **Few admitted rows → exact.** Unless the planner's estimate says the
   selection admits nearly every row (:data:`BROAD`), the admitted memories'
   keys are read, at most :func:`exact_bound` + 1 of them (a bounded read, so a
   broad filter stops early). When that is all of them, their vectors are
   fetched by key and scored exactly. The bound grows with the store
   (``4 * k * sqrt(n)``, at least :data:`EXACT_BELOW`): a filtered HNSW walk
   loses the admitted top ``k`` once the filter keeps a few percent of the rows.
2. **Otherwise HNSW with an iterative scan.** ``hnsw.iterative_scan =
   relaxed_order`` lets the index keep producing candidates past
   ``ef_search`` until the ``LIMIT`` is met (up to ``hnsw.max_scan_tuples``);
   ``ef_search`` follows the store's size (:func:`ef_search`: ``2 * sqrt(n)``
   between :data:`MIN_EF_SEARCH` and pgvector's ceiling); the relaxed order
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
import math
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
"""Admitted rows up to which the exact scan always answers (cheaper than the index)."""
EXACT_PER_ROOT = 4.0
"""Beyond :data:`EXACT_BELOW`, the exact scan answers up to ``EXACT_PER_ROOT * k * sqrt(n)``
admitted rows of ``n`` indexed: a filtered HNSW walk finds the admitted top ``k`` only when
they lie well inside its candidate list (``k / selectivity`` far below ``ef_search``).
Measured at 100k (embedding-like 384-dimension vectors, ``ef_search`` 632), filtered
recall@10 of the iterative scan: 0.76 at 1 % admitted, 0.905 at 3 %, 0.985 at 10 %; the
bound there is 12,649 rows (12.6 %)."""
BROAD = 0.9
"""A planner estimate above this share of the indexed rows skips the count (no filter)."""
MIN_EF_SEARCH = 200
"""The HNSW candidate list at least (pgvector's default 40 gives recall near 0.9 at 10k)."""
EF_PER_ROOT = 2.0
"""``ef_search`` per square root of the vectors indexed, so the search deepens as the graph grows.

Measured on embedding-like 384-dimension vectors (``m = 16``, ``ef_construction = 64``),
recall@10 against exact cosine: 0.994 at 10k with 200; at 100k 0.82 with 40, 0.89 with
200, 0.97 with 400 and 0.997 with 600 (2 x sqrt(100,000) = 632). On the peers corpus,
whose clusters are tighter, no depth was enough with ``m = 16`` (0.969 at 632, 0.979 at
1,000); the graph's links decide it there (``schema.HNSW_M``: 0.995 at 632 with 32)."""
MAX_EF_SEARCH = 1_000
"""pgvector's ceiling for ``hnsw.ef_search``."""
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
    ef_search: int | None = None
    """The ``hnsw.ef_search`` the index ran with (``None``: it did not run)."""


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
    exact_below: int | None = None,
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
        exact_below: Admitted rows up to which the exact scan answers (default
            :func:`exact_bound`).

    Returns:
        The hits and the plan that produced them.
    """
    if k <= 0:
        return [], Plan("exact", 0.0, 0)
    q = vector_literal(query)
    estimate = _estimate(conn, condition, params)
    indexed = _indexed(conn, space)
    bound = exact_bound(k, indexed) if exact_below is None else exact_below
    counted: int | None = None
    # The estimate only decides whether counting can pay: a broad selection stops the
    # bounded count early anyway, and a filter the planner cannot see into (it guesses
    # a fixed share) is counted rather than trusted.
    if estimate < BROAD * indexed:
        keys = _admitted_keys(conn, condition, params, bound)
        counted = len(keys)
        if counted <= bound:
            # The read is one snapshot: these keys are the admitted memories, so their
            # vectors are fetched by key (the index on key), not by the condition again.
            by_key = (sql.SQL("v.key = ANY(%s::bigint[])"), [keys])
            return _exact(conn, space, q, by_key, k, cap), Plan("exact", estimate, counted)
    depth = ef_search(k, indexed, ef)
    hits, complete = _hnsw(conn, space, q, condition, params, k, cap, depth)
    if complete:
        return hits, Plan("hnsw", estimate, counted, depth)
    hits = _exact(conn, space, q, _joined(condition, params), k, cap)
    return hits, Plan("hnsw+exact", estimate, counted, depth)


def exact_bound(k: int, indexed: float) -> int:
    """Admitted rows up to which the exact scan answers (see :data:`EXACT_PER_ROOT`)."""
    return max(EXACT_BELOW, int(EXACT_PER_ROOT * k * math.sqrt(max(indexed, 0.0))))


def ef_search(k: int, indexed: float, hint: int | None = None) -> int:
    """The HNSW candidate list for ``k`` hits from ``indexed`` vectors (see :data:`EF_PER_ROOT`)."""
    depth = max(MIN_EF_SEARCH, 4 * k, hint or 0, EF_PER_ROOT * math.sqrt(max(indexed, 0.0)))
    return int(min(MAX_EF_SEARCH, depth))


def _indexed(conn: Conn, space: Space) -> float:
    # The statistics' row count (free); before the first ANALYZE, the size over a row's width.
    row = conn.execute(
        "SELECT CASE WHEN reltuples >= 0 THEN reltuples "
        "ELSE pg_relation_size(oid) / %s END FROM pg_class WHERE oid = to_regclass(%s)",
        (4 * space.dimensions + 40, space.table),
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


def _estimate(conn: Conn, condition: sql.Composable, params: Sequence[Any]) -> float:
    query = sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {}").format(condition)
    row = conn.execute(query, params).fetchone()
    plan = row[0] if row else [{"Plan": {"Plan Rows": 0}}]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def _admitted_keys(
    conn: Conn, condition: sql.Composable, params: Sequence[Any], bound: int
) -> list[int]:
    """The admitted memories' keys, at most ``bound + 1`` (a broad filter stops early)."""
    query = sql.SQL("SELECT m.key FROM memories m WHERE {} LIMIT %s").format(condition)
    return [int(key) for (key,) in conn.execute(query, [*params, bound + 1])]


def _joined(condition: sql.Composable, params: Sequence[Any]) -> tuple[sql.Composable, list[Any]]:
    """The vectors of the memories ``condition`` admits (a join to the memories table)."""
    where = sql.SQL("v.key IN (SELECT m.key FROM memories m WHERE {})").format(condition)
    return where, list(params)


def _exact(
    conn: Conn,
    space: Space,
    q: str,
    vectors: tuple[sql.Composable, list[Any]],
    k: int,
    cap: int | None,
) -> list[Hit]:
    """The vectors ``vectors`` selects (SQL over the alias ``v``), scored; the best ``k``."""
    # ``embedding <=> q`` (no cast) matches no index expression: an exact scan. The
    # distances are computed once and materialised narrow (keys and a float), so the
    # per-memory ranking sorts 24-byte rows, not rows that still carry the vectors.
    per_memory: sql.Composable = sql.SQL("")
    if cap is not None:
        per_memory = sql.SQL("WHERE rank <= {}").format(sql.Literal(int(cap)))
    query = sql.SQL(
        """
        WITH scored AS MATERIALIZED (
            SELECT v.vec_key, v.key, v.embedding <=> %s::vector AS distance
            FROM {table} v WHERE {where}
        )
        SELECT vec_key, key, distance FROM (
            SELECT vec_key, key, distance,
                   row_number() OVER (PARTITION BY key ORDER BY distance, vec_key) AS rank
            FROM scored
        ) ranked {per_memory}
        ORDER BY distance, vec_key LIMIT %s
        """
    ).format(table=sql.Identifier(space.table), where=vectors[0], per_memory=per_memory)
    rows = conn.execute(query, [q, *vectors[1], k]).fetchall()
    return [Hit(int(v), int(key), 1.0 - float(d)) for v, key, d in rows]


def _hnsw(
    conn: Conn,
    space: Space,
    q: str,
    condition: sql.Composable,
    params: Sequence[Any],
    k: int,
    cap: int | None,
    depth: int,
) -> tuple[list[Hit], bool]:
    """Index search with ``hnsw.ef_search`` = ``depth``; ``complete``: ``k`` memories found."""
    conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)",
        (str(depth), str(MAX_SCAN_TUPLES)),
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


def memory_vectors(
    conn: Conn, keys: Sequence[int]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The given memories' vectors as ``(owners, rows)``, sorted by key then chunk (``vec_key``)."""
    rows = conn.execute(
        "SELECT key, embedding::real[] FROM memory_vectors WHERE key = ANY(%s) "
        "ORDER BY key, vec_key",
        (list(keys),),
    ).fetchall()
    owners = np.array([int(key) for key, _ in rows], dtype=np.int64)
    vectors = np.array([embedding for _, embedding in rows], dtype=np.float32)
    return owners, vectors
