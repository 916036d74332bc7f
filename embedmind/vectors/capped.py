"""Nearest fragments with a per-record cap applied while selecting, never after the cut.

The fragment seed's contract: with ``max_per_record=n`` no record contributes
more than ``n`` hits, and the cap is applied *during* selection, before the
top-``k`` cut, so one long document cannot crowd out the others. The planner
walks HNSW results best-first, admits fragments whose record passes the
:class:`Selection`, skips fragments over their record's cap, and widens the
pool until ``k`` hits survive or the index is exhausted; when the admitted set
looks small it scores every admitted fragment exactly instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.storage import vectors as store
from embedmind.storage.vectors import FRAGMENTS
from embedmind.vectors.hnsw import VectorIndex, default_ef
from embedmind.vectors.search import EXACT_ADMITTED, EXACT_AFTER

Hit = tuple[int, int, float]
"""``(vec_key, record key, cosine)``."""


def nearest_capped(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
) -> list[Hit]:
    """The ``k`` best admitted fragments, at most ``cap`` per record, best first."""
    index.sync(conn)
    size = len(index)
    if size == 0:
        return []
    pool = max(4 * k, 32)
    while True:
        vec_keys, sims = index.search(query, pool, default_ef(size))
        owners = store.admitted_owners(
            conn, vec_keys.tolist(), condition[0], condition[1], FRAGMENTS
        )
        chosen = select(
            [
                (v, owners[v], s)
                for v, s in zip(vec_keys.tolist(), sims.tolist(), strict=True)
                if v in owners
            ],
            k,
            cap,
        )
        if len(chosen) >= k:
            return chosen
        admitted = len(owners) / max(1, len(vec_keys))
        if len(vec_keys) >= size or pool >= EXACT_AFTER or size * admitted <= EXACT_ADMITTED:
            return exact(conn, index.dims, query, condition, k, cap)
        pool = min(size, pool * 4)


def select(candidates: Sequence[Hit], k: int, cap: int | None) -> list[Hit]:
    """Greedy best-first selection honouring the per-record cap."""
    taken: Counter[int] = Counter()
    out: list[Hit] = []
    for hit in sorted(candidates, key=lambda h: (-h[2], h[0])):
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
) -> list[Hit]:
    """Score every admitted fragment exactly, then select with the cap."""
    vec_keys, keys, vectors = store.of_memories(conn, condition[0], condition[1], dims, FRAGMENTS)
    if not len(vec_keys):
        return []
    sims = vectors @ query.astype(np.float32)
    candidates = list(zip(vec_keys.tolist(), keys.tolist(), sims.tolist(), strict=True))
    return select(candidates, k, cap)
