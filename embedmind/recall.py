"""Recall: run the channels under one visibility condition, fuse, and build hits.

The lexical channel scores every document that contains a query term, then
walks them best-first and keeps those the :class:`Selection` admits — checking
candidates in growing batches by key, and switching to the full set of admitted
keys once many candidates have failed. Either way it stops only when ``k``
admitted documents are found or the candidates run out, so a selective filter
never makes it return fewer than ``k`` hits while ``k`` exist.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

from embedmind.fusion import rrf
from embedmind.lexical import maxscore
from embedmind.lexical.index import LexicalIndex, Scored, best_first, query_terms
from embedmind.model import ChannelScore, Hit, Memory, Mode, Recall
from embedmind.storage import records

TEXT = "text"
VECTOR = "vector"
_FIRST_BATCH = 64
_MAXSCORE_SLACK = 16
"""Extra candidates MaxScore keeps beyond ``k``, room for a few filtered-out hits."""
_SWITCH_TO_FULL_SCAN = 8_192
"""Candidates checked one batch at a time before fetching every admitted key at once."""


@dataclass(frozen=True)
class Ranked:
    """One channel's result: ``(key, raw score)`` best first."""

    channel: str
    items: list[tuple[int, float]]


@dataclass
class Timer:
    """Per-phase wall times in milliseconds, for ``explain=True``."""

    phases: dict[str, float] = field(default_factory=dict)
    _started: float = field(default_factory=time.perf_counter)

    def lap(self, phase: str) -> None:
        """Record the time since the previous lap under ``phase``."""
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + (now - self._started) * 1000
        self._started = now


def text_channel(
    conn: apsw.Connection,
    lexical: LexicalIndex,
    text: str,
    condition: tuple[str, list[Any]],
    k: int,
) -> Ranked:
    """The top ``k`` admitted documents by BM25.

    MaxScore first: its candidates are exact down to its bound θ, so when the
    first ``k`` admitted candidates all score at least θ they are the answer.
    Otherwise (a selective filter) every matching document is scored.
    """
    lists, avgdl = lexical.term_lists(conn, query_terms(text))
    keys, scores, theta = maxscore.top(lists, avgdl, k + _MAXSCORE_SLACK)
    found = admitted_best_first(conn, Scored(keys, scores), condition, k)
    if theta == 0.0 or (len(found) == k and found[-1][1] >= theta):
        return Ranked(TEXT, found)
    keys, scores = maxscore.exhaustive(lists, avgdl)
    return Ranked(TEXT, admitted_best_first(conn, Scored(keys, scores), condition, k))


def admitted_best_first(
    conn: apsw.Connection, scored: Scored, condition: tuple[str, list[Any]], k: int
) -> list[tuple[int, float]]:
    """Walk ``scored`` best-first and keep the first ``k`` keys the condition admits."""
    found: list[tuple[int, float]] = []
    sql, params = condition
    checked = 0
    allowed: np.ndarray[Any, Any] | None = None
    for positions in best_first(scored, max(_FIRST_BATCH, 4 * k)):
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


def fuse(ranked: Sequence[Ranked], mode: Mode, k: int) -> list[tuple[int, float]]:
    """Combine channel results into ``(key, score)`` best first, at most ``k``.

    A single channel asked for by name keeps its raw score; otherwise scores
    are RRF scores.
    """
    if mode is not Mode.HYBRID and len(ranked) == 1:
        return ranked[0].items[:k]
    fused = rrf([[key for key, _ in r.items] for r in ranked])
    return fused[:k]


def build_recall(
    conn: apsw.Connection,
    fused: list[tuple[int, float]],
    ranked: Sequence[Ranked],
    mode: Mode,
    degraded: tuple[str, ...],
    timings: Mapping[str, float] | None,
) -> Recall:
    """Load the memories of the fused keys and assemble the :class:`Recall`."""
    memories: dict[int, Memory] = records.select_by_keys(conn, [key for key, _ in fused])
    positions = {
        r.channel: {key: (rank, raw) for rank, (key, raw) in enumerate(r.items, start=1)}
        for r in ranked
    }
    hits = []
    for rank, (key, score) in enumerate(fused, start=1):
        channels = {
            name: ChannelScore(*found[key]) for name, found in positions.items() if key in found
        }
        hits.append(Hit(memories[key], score, rank, channels))
    return Recall(tuple(hits), mode, tuple(r.channel for r in ranked), degraded, timings)
