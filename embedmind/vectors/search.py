"""Filtered vector search without under-return.

usearch has no filter predicate, so the search is planned per query: search
the HNSW graph for a pool of nearest chunks, keep the ones whose memory the
:class:`Selection` admits (one SQL query for the whole pool), and widen the
pool — sized from the admitted fraction seen so far — until ``k`` memories
survive with a margin. When the admitted set looks small (at most
:data:`EXACT_ADMITTED` vectors) or the pool grows past :data:`EXACT_AFTER`,
every admitted memory's vectors are scored exactly with numpy instead.
A memory with several chunks counts once, under its best chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.storage import vectors as store
from embedmind.vectors.hnsw import VectorIndex, default_ef

EXACT_AFTER = 16_384
"""Pool size past which the planner scores the admitted memories exactly."""
EXACT_ADMITTED = 5_000
"""Estimated admitted vectors at or below which exact scoring is cheaper than widening."""


def nearest(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    ef: int | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` admitted memories nearest to ``query``: ``(key, cosine)`` best first."""
    index.sync(conn)
    size = len(index)
    if size == 0:
        return []
    breadth = ef if ef is not None else default_ef(size)
    pool = max(4 * k, 32)
    while True:
        vec_keys, sims = index.search(query, pool, breadth)
        owners = store.admitted_owners(conn, vec_keys.tolist(), condition[0], condition[1])
        best = _best_per_memory(vec_keys, sims, owners)
        admitted = len(owners) / max(1, len(vec_keys))
        # Unfiltered, k suffice; filtered, ask for a margin so the k-th hit
        # sits well inside the pool, where the graph search is reliable.
        if len(best) >= k and (admitted == 1.0 or len(best) >= 2 * k):
            return best[:k]
        if size * admitted <= EXACT_ADMITTED or pool >= size or pool >= EXACT_AFTER:
            # Few admitted memories (or the graph is exhausted): score all of
            # them exactly rather than miss any.
            return exact(conn, index.dims, query, condition, k)
        pool = min(size, max(pool * 4, int(4 * k / max(admitted, 1e-9))))


def _best_per_memory(
    vec_keys: npt.NDArray[np.int64], sims: npt.NDArray[np.float32], owners: dict[int, int]
) -> list[tuple[int, float]]:
    best: dict[int, float] = {}
    for vec_key, sim in zip(vec_keys.tolist(), sims.tolist(), strict=True):
        key = owners.get(vec_key)
        if key is not None and key not in best:
            best[key] = sim  # results arrive best first: the first chunk wins
    return sorted(best.items(), key=lambda item: -item[1])


def exact(
    conn: apsw.Connection,
    dims: int,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
) -> list[tuple[int, float]]:
    """Score every admitted memory's stored vectors exactly."""
    sql, params = condition
    _, keys, vectors = store.of_memories(conn, sql, params, dims)
    if not len(keys):
        return []
    sims = vectors @ query.astype(np.float32)
    order = np.lexsort((keys, -sims))
    best: dict[int, float] = {}
    for key, sim in zip(keys[order].tolist(), sims[order].tolist(), strict=True):
        if key not in best:
            best[key] = float(sim)
            if len(best) == k:
                break
    return list(best.items())


def cosines_of(
    conn: apsw.Connection, dims: int, query: npt.NDArray[np.float32], keys: Sequence[int]
) -> dict[int, float]:
    """Best-chunk cosine of each given memory to ``query`` (memories without vectors omitted)."""
    _, owners, vectors = store.of_keys(conn, keys, dims)
    best: dict[int, float] = {}
    for key, sim in zip(owners.tolist(), (vectors @ query).tolist(), strict=True):
        best[key] = max(sim, best.get(key, -1.0))
    return best
