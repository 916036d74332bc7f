"""Exhaustive and MaxScore-pruned BM25 evaluation over in-memory posting lists.

MaxScore (Turtle & Flood, "Query evaluation: strategies and optimizations",
1995), term-at-a-time: terms are scored fully in decreasing order of their
score bound until the bounds of the terms left cannot lift any unseen
document past the current m-th best partial score (θ). Those left-over terms
are then only looked up (binary search) for the surviving candidates, so the
long lists of common words are never scored in full. Every document that can
reach the top m keeps its exact score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from embedmind.lexical import bm25

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TermList:
    """One query term's postings, ready to score."""

    keys: I64
    tf: F32
    length: F32
    idf: float
    bound: float

    def scores(self, avgdl: float, select: I64 | None = None) -> npt.NDArray[np.float64]:
        """BM25 contributions of all postings, or of the positions ``select``."""
        tf = self.tf if select is None else self.tf[select]
        length = self.length if select is None else self.length[select]
        norm = np.float32(bm25.K1 * (1 - bm25.B)) + np.float32(bm25.K1 * bm25.B / avgdl) * length
        weight = np.float32(self.idf * (bm25.K1 + 1))
        result: npt.NDArray[np.float64] = (weight * tf / (tf + norm)).astype(np.float64)
        return result


def exhaustive(lists: list[TermList], avgdl: float) -> tuple[I64, npt.NDArray[np.float64]]:
    """Every document holding a query term, with its exact score."""
    acc, keys = _Accumulator(lists), []
    for term in lists:
        keys.append(acc.add(term, term.scores(avgdl)))
    found = np.concatenate(keys) if keys else np.empty(0, np.int64)
    return found, acc.values[found]


def top(lists: list[TermList], avgdl: float, m: int) -> tuple[I64, npt.NDArray[np.float64], float]:
    """A superset of the ``m`` best documents, with exact scores, and the bound θ.

    Every document outside the result scores below θ (θ is 0 when the result
    holds every matching document); so does every result member whose score is
    below θ only as far as the result knows — trust the result down to θ.
    """
    order = sorted(lists, key=lambda t: -t.bound)
    remaining = [*np.cumsum([t.bound for t in order][::-1])[::-1].tolist(), 0.0]
    acc = _Accumulator(lists)
    parts: list[I64] = []
    theta = 0.0
    done = 0
    for i, term in enumerate(order):
        parts.append(acc.add(term, term.scores(avgdl)))
        done = i + 1
        seen = sum(len(p) for p in parts)
        if done < len(order) and seen >= m:
            candidates = np.concatenate(parts)
            theta = float(np.partition(acc.values[candidates], seen - m)[seen - m])
            if remaining[done] < theta:
                break
    candidates = np.concatenate(parts) if parts else np.empty(0, np.int64)
    if done == len(order):
        return candidates, acc.values[candidates], 0.0
    partial = acc.values[candidates]
    for i in range(done, len(order)):
        keep = partial + remaining[i] >= theta
        candidates, partial = candidates[keep], partial[keep]
        term = order[i]
        at = np.searchsorted(term.keys, candidates)
        inside = at < len(term.keys)
        found = np.zeros(len(candidates), dtype=bool)
        found[inside] = term.keys[at[inside]] == candidates[inside]
        partial[found] += term.scores(avgdl, at[found])
    return candidates, partial, theta


class _Accumulator:
    """Dense per-key score sums; ``np.zeros`` is calloc-backed, so only touched pages cost."""

    def __init__(self, lists: list[TermList]) -> None:
        top = max((int(t.keys[-1]) for t in lists if len(t.keys)), default=-1) + 1
        self.values = np.zeros(top, dtype=np.float64)

    def add(self, term: TermList, scores: npt.NDArray[np.float64]) -> I64:
        """Add one term's scores; return the keys seen for the first time."""
        fresh: I64 = term.keys[self.values[term.keys] == 0.0]
        self.values[term.keys] += scores  # keys are unique within one term
        return fresh
