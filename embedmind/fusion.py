"""Reciprocal Rank Fusion.

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods" (SIGIR 2009): each list contributes
``1 / (k + rank)`` (1-based rank) to every item it holds, with k = 60. Fusion
is a union: an item found by one list only still scores. The raw scales of
the lists (cosine, BM25) are deliberately ignored, so there is nothing to
calibrate.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

RRF_K = 60
"""The RRF constant of Cormack et al. (2009)."""

T = TypeVar("T", bound=Hashable)


def rrf(lists: Sequence[Sequence[T]], k: int = RRF_K) -> list[tuple[T, float]]:
    """Fuse ranked lists; return ``(item, score)`` best first.

    Ties keep the order in which items were first seen across the lists, so
    the result is deterministic.

    Example:
        >>> [item for item, _ in rrf([["a", "b"], ["b", "c"]])]
        ['b', 'a', 'c']
    """
    scores: dict[T, float] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))
