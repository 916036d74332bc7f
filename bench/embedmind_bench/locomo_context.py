"""Session context in ``embedmind bench locomo``: a second store with the switch on.

The same turns and vectors are written to a store whose lexical postings carry
session context (:mod:`embedmind.backend.sqlite.lexical.context`), so its modes are asked in
the same round-robin as the store without it and the latencies compare side
by side. The cost of indexing with context is measured apart, text only
(no vectors, so the lexical postings are what is timed), alternating the two
settings over a few rounds and keeping each one's best.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from embedmind.store import Store
from embedmind_bench.locomo_data import Dataset

ROUNDS = 3


def set_session_context(store: Store, on: bool) -> None:
    """Turn an open store's session context on or off (re-indexes its postings).

    ``Store.open(path, session_context=...)`` is the public switch; the
    benchmarks flip it on a store they already filled, through the same write.
    """
    store._set_session_context(on)


def text_only_ingest(data: Dataset, root: Path) -> dict[str, Any]:
    """Seconds to write every turn text-only, with and without session context, and the ratio."""
    drafts = [dataclasses.replace(d, vector=None) for d in data.drafts]
    best = {False: float("inf"), True: float("inf")}
    for round_ in range(ROUNDS):
        for on in (False, True):
            path = root / f"text-only-{round_}-{on}.mind"
            with Store.open(path, embedder=None, synchronous="NORMAL", session_context=on) as store:
                started = time.perf_counter()
                store.remember_many(drafts, batch_size=512)
                best[on] = min(best[on], time.perf_counter() - started)
    return {
        "turns": len(drafts),
        "without_context_s": best[False],
        "with_context_s": best[True],
        "ratio": best[True] / best[False],
    }
