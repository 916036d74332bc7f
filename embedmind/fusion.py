"""Reciprocal Rank Fusion.

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods" (SIGIR 2009): each list contributes
``1 / (k + rank)`` (1-based rank) to every item it holds, with k = 60. Fusion
is a union: an item found by one list only still scores. The raw scales of
the lists (cosine, BM25) are deliberately ignored, so there is nothing to
calibrate.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
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


def fusion_depths(k: int, base: int) -> list[int]:
    """The candidate depths a top-``k`` fusion needs: ``base``, doubled until one reaches ``k``.

    Example:
        >>> fusion_depths(8, 40), fusion_depths(100, 40)
        ([40], [40, 80, 160])
    """
    depths = [base]
    while depths[-1] < k:
        depths.append(depths[-1] * 2)
    return depths


def prefix_stable(
    rank_at: Callable[[int], Sequence[tuple[T, float]]], depths: Sequence[int], k: int
) -> list[tuple[T, float]]:
    """The first ``k`` of the ranking at ``depths[0]``, then what each deeper ranking adds.

    ``rank_at(depth)`` ranks the candidates found within ``depth`` of each
    list. Taking the first depth's whole ranking before anything a deeper one
    finds makes the answer for a smaller ``k`` always the beginning of the
    answer for a larger one (when the lists at a depth are the first items of
    the lists at a deeper one): a user asking for fewer hits gets the first
    hits of a longer list, never a different first hit.

    Example:
        >>> ranking = {2: [("a", 1.0), ("b", 0.5)], 4: [("c", 2.0), ("a", 1.0), ("d", 0.1)]}
        >>> [item for item, _ in prefix_stable(ranking.__getitem__, [2, 4], 4)]
        ['a', 'b', 'c', 'd']
    """
    out: list[tuple[T, float]] = []
    seen: set[T] = set()
    for depth in depths:
        for item, score in rank_at(depth):
            if item not in seen:
                seen.add(item)
                out.append((item, score))
        if len(out) >= k:
            break
    return out[:k]
