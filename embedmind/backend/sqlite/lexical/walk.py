"""Walking a scored list best-first under a visibility condition (the lexical channel's core).

Candidates are checked in growing batches by key (the first of ``k``: with
no filter, or one most candidates pass, only the rows returned are read —
at a million memories each row checked is a page read, about 0.3 ms on a
loaded machine), switching to the full set of admitted keys once many have
failed, so a selective filter costs one scan rather than many small lookups.
Shared by the primary lexical channel and the key-term sub-queries of widening.
"""

from __future__ import annotations

from typing import Any

import apsw
import numpy as np

from embedmind.backend.sqlite import records
from embedmind.backend.sqlite.lexical.index import Scored, best_first

_SWITCH_TO_FULL_SCAN = 8_192
"""Candidates checked one batch at a time before fetching every admitted key at once."""


def admitted_best_first(
    conn: apsw.Connection, scored: Scored, condition: tuple[str, list[Any]], k: int
) -> list[tuple[int, float]]:
    """Walk ``scored`` best-first and keep the first ``k`` keys the condition admits."""
    found: list[tuple[int, float]] = []
    sql, params = condition
    checked = 0
    allowed: np.ndarray[Any, Any] | None = None
    for positions in best_first(scored, k):
        keys = scored.keys[positions]
        if allowed is None and checked >= _SWITCH_TO_FULL_SCAN:
            # Many candidates failed: the filter is selective, so fetch every
            # admitted key once and finish with vectorised membership tests.
            allowed = np.asarray(records.all_keys_passing(conn, sql, params), dtype=np.int64)
        if allowed is not None:
            mask = np.isin(keys, allowed)
        else:
            passing = records.keys_passing(conn, keys.tolist(), sql, params)
            mask = np.fromiter((key in passing for key in keys.tolist()), bool, len(keys))
            checked += len(keys)
        for pos in positions[mask][: k - len(found)].tolist():
            found.append((int(scored.keys[pos]), float(scored.scores[pos])))
        if len(found) >= k:
            break
    return found
