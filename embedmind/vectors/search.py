"""Filtered vector search without under-return.

usearch has no filter predicate, so the search is planned per query: search
the HNSW graph for a pool of nearest chunks, keep the ones whose memory the
:class:`Selection` admits (one SQL query for the whole pool), and widen the
pool — sized from the admitted fraction seen so far — until ``k`` memories
survive with a margin. When the admitted set looks small (at most
:data:`EXACT_ADMITTED` vectors) or the pool grows past :data:`EXACT_AFTER`,
every admitted memory's vectors are scored exactly with numpy instead.
A memory with several chunks counts once, under its best chunk.

The same planner serves the fragment index with a per-record cap
(:func:`nearest_capped`): the fragment seed's contract is that with
``max_per_record=n`` no record contributes more than ``n`` hits, the cap
applied *during* selection, before the top-``k`` cut.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.storage import vectors as store
from embedmind.storage.vectors import MEMORY, Space
from embedmind.vectors.hnsw import VectorIndex, default_ef

EXACT_AFTER = 16_384
"""Pool size past which the planner scores the admitted memories exactly."""
EXACT_ADMITTED = 5_000
"""Estimated admitted vectors at or below which exact scoring is cheaper than widening."""


Hit = tuple[int, int, float]
"""``(vec_key, record key, cosine)``."""


def nearest(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    ef: int | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` admitted memories nearest to ``query``: ``(key, cosine)`` best first."""
    hits = nearest_capped(conn, index, query, condition, k, cap=1, ef=ef)
    return [(key, sim) for _, key, sim in hits]


def nearest_capped(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    space: Space = MEMORY,
    ef: int | None = None,
) -> list[Hit]:
    """The ``k`` best admitted vectors, at most ``cap`` per record, best first.

    The cap is applied while selecting, before the top-``k`` cut, so one
    record with many vectors cannot crowd out the others; ``cap=1`` is the
    memory search (a memory counts once, under its best chunk).
    """
    index.sync(conn)
    size = len(index)
    if size == 0:
        return []
    breadth = ef if ef is not None else default_ef(size)
    pool = max(4 * k, 32)
    while True:
        vec_keys, sims = index.search(query, pool, breadth)
        owners = store.admitted_owners(conn, vec_keys.tolist(), condition[0], condition[1], space)
        admitted = len(owners) / max(1, len(vec_keys))
        # Unfiltered, k suffice; filtered, ask for a margin so the k-th hit
        # sits well inside the pool, where the graph search is reliable.
        wanted = k if admitted == 1.0 else 2 * k
        pairs = zip(vec_keys.tolist(), sims.tolist(), strict=True)
        candidates = [(v, owners[v], s) for v, s in pairs if v in owners]
        # Stable: equal cosines keep the graph's order, as a plain top-k search would.
        chosen = select(sorted(candidates, key=lambda h: -h[2]), wanted, cap)
        if len(chosen) >= wanted:
            return chosen[:k]
        if size * admitted <= EXACT_ADMITTED or pool >= size or pool >= EXACT_AFTER:
            # Few admitted vectors (or the graph is exhausted): score all of
            # them exactly rather than miss any.
            return exact(conn, index.dims, query, condition, k, cap, space)
        pool = min(size, max(pool * 4, int(4 * k / max(admitted, 1e-9))))


def select(ordered: Iterable[Hit], k: int, cap: int | None) -> list[Hit]:
    """The first ``k`` of ``ordered`` (best first) with at most ``cap`` per record."""
    taken: Counter[int] = Counter()
    out: list[Hit] = []
    for hit in ordered:
        if cap is not None and taken[hit[1]] >= cap:
            continue
        taken[hit[1]] += 1
        out.append(hit)
        if len(out) == k:
            break
    return out


def exact(
    conn: apsw.Connection,
    dims: int,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    space: Space = MEMORY,
) -> list[Hit]:
    """Score every admitted vector exactly, then select with the cap."""
    vec_keys, keys, vectors = store.of_memories(conn, condition[0], condition[1], dims, space)
    if not len(vec_keys):
        return []
    sims = vectors @ query.astype(np.float32)
    order = np.lexsort((vec_keys, -sims))  # best first, ties by vec_key
    ordered = zip(vec_keys[order].tolist(), keys[order].tolist(), sims[order].tolist(), strict=True)
    return select(ordered, k, cap)


def cosines_of(
    conn: apsw.Connection, dims: int, query: npt.NDArray[np.float32], keys: Sequence[int]
) -> dict[int, float]:
    """Best-chunk cosine of each given memory to ``query`` (memories without vectors omitted)."""
    _, owners, vectors = store.of_keys(conn, keys, dims)
    best: dict[int, float] = {}
    for key, sim in zip(owners.tolist(), (vectors @ query).tolist(), strict=True):
        best[key] = max(sim, best.get(key, -1.0))
    return best
