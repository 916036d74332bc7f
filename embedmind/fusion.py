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


def rrf(lists: Sequence[Sequence[tuple[T, float]]], k: int = RRF_K) -> list[tuple[T, float]]:
    """Fuse ranked ``(item, score)`` lists (each best first); return ``(item, score)`` best first.

    Items with equal scores in a list share its rank (competition ranking), so
    a tie stays a tie and another list — recency, say — can break it. Fused
    ties keep the order in which items were first seen, so the result is
    deterministic.

    Example:
        >>> [item for item, _ in rrf([[("a", 2.0), ("b", 1.0)], [("b", 0.9), ("c", 0.5)]])]
        ['b', 'a', 'c']
    """
    scores: dict[T, float] = {}
    for ranked in lists:
        for item, rank in tied_ranks(ranked):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def tied_ranks(ranked: Sequence[tuple[T, float]]) -> list[tuple[T, int]]:
    """1-based ranks of a best-first list, equal scores sharing the better rank."""
    out: list[tuple[T, int]] = []
    rank, previous = 0, None
    for position, (item, score) in enumerate(ranked, start=1):
        if score != previous:
            rank, previous = position, score
        out.append((item, rank))
    return out
