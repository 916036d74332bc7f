"""Exhaustive and MaxScore-pruned BM25 evaluation over in-memory posting lists.

MaxScore (Turtle & Flood, "Query evaluation: strategies and optimizations",
1995), term-at-a-time: terms are scored fully in decreasing order of their
score bound until the bounds of the terms left cannot lift any unseen
document past the current m-th best partial score (θ). Those left-over terms
are then only looked up (binary search) for the surviving candidates, so the
long lists of common words are never scored in full. Every document that can
reach the top m keeps its exact score.

Block-max (Ding & Suel, "Faster top-k document retrieval using block-max
indexes", 2011), term-at-a-time: each term's postings come in blocks with
their own score bound. Once θ is known, a block of a term still scored in
full whose bound plus the bounds of every later term stays below θ cannot
bring a new document into the top m, so it is not scored: only the documents
already seen are looked up in it. θ only rises and partial scores only
under-estimate, so a document skipped this way scores below θ, which the
result already says it does not vouch for.

A query whose lists hold few postings (:data:`SMALL_QUERY`) is scored
exhaustively instead: below that size numpy's cost per call, not the
postings, is what a query pays, and pruning only adds calls. Either way
the result is cut to the ``m`` best (ties at the cut kept), so the caller
walks a few dozen candidates, not thousands. Scores come from the index's
precomputed impacts (:attr:`TermList.impacts`) when it has them, and the
per-key sums live in a buffer each thread reuses, zeroed where it was
touched, instead of a fresh ``np.zeros`` of the key space per query.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from embedmind.lexical import bm25

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

SMALL_QUERY = 32_768
"""Postings (over all query terms) up to which :func:`top` scores exhaustively."""


@dataclass(frozen=True)
class TermList:
    """One query term's postings, ready to score.

    ``tf`` and ``length`` may be stored narrower (the index caches them as
    ``uint16`` and ``uint32``); they are read as float32, which holds them exactly.
    """

    keys: I64
    tf: npt.NDArray[Any]
    length: npt.NDArray[Any]
    idf: float
    bound: float
    block_starts: I64 | None = None
    """Where each block starts in ``keys`` (None: one block)."""
    block_bounds: npt.NDArray[np.float64] | None = None
    """Each block's score bound (None: ``bound``)."""
    impacts: F32 | None = None
    """Every posting's score at ``impact_avgdl``, read-only (None: computed per query)."""
    impact_avgdl: float = 0.0
    """The average document length ``impacts`` were computed for."""

    def blocks(self) -> tuple[I64, npt.NDArray[np.float64]]:
        """``(starts, bounds)`` of the blocks."""
        if self.block_starts is None or self.block_bounds is None:
            return np.zeros(1, np.int64), np.asarray([self.bound])
        return self.block_starts, self.block_bounds

    def scores(self, avgdl: float, select: I64 | None = None) -> F32:
        """BM25 contributions of all postings, or of the positions ``select``.

        Computed in float32 (every path adds these same float32 values into a
        float64 sum, which widens them exactly). The precomputed
        :attr:`impacts` when they are for ``avgdl`` (the same arithmetic, done
        once), else computed here; read-only either way.
        """
        if self.impacts is not None and avgdl == self.impact_avgdl:
            return self.impacts if select is None else self.impacts[select]
        tf = self.tf if select is None else self.tf[select]
        length = self.length if select is None else self.length[select]
        tf = np.asarray(tf, dtype=np.float32)
        length = np.asarray(length, dtype=np.float32)
        norm = np.float32(bm25.K1 * (1 - bm25.B)) + np.float32(bm25.K1 * bm25.B / avgdl) * length
        weight = np.float32(self.idf * (bm25.K1 + 1))
        result: F32 = weight * tf / (tf + norm)
        return result


_SLACK = 1.0 + 1e-9
"""Bounds taken from the impacts themselves sit a hair above them: sums of
bounds and sums of scores add in different orders, so may round differently."""


def with_impacts(term: TermList, avgdl: float) -> TermList:
    """``term`` with its :attr:`TermList.impacts` precomputed for ``avgdl``, bounds made tight.

    The bound of each block (and of the term) becomes its largest impact,
    exactly what its best posting scores, instead of the bound from the
    block's largest tf and shortest length (which rarely sit in one
    document): tighter bounds let :func:`top` skip more. These bounds hold
    for ``avgdl`` only, which is what every caller scores with.
    """
    impacts = term.scores(avgdl)
    impacts.flags.writeable = False  # shared by every query that reads the cache
    if not len(impacts):
        return replace(term, impacts=impacts, impact_avgdl=avgdl)
    if term.block_starts is None:
        return replace(
            term, impacts=impacts, impact_avgdl=avgdl, bound=float(impacts.max()) * _SLACK
        )
    bounds = np.maximum.reduceat(impacts, term.block_starts).astype(np.float64) * _SLACK
    return replace(
        term,
        impacts=impacts,
        impact_avgdl=avgdl,
        bound=float(bounds.max()),
        block_bounds=bounds,
    )


def canonical(lists: Sequence[TermList]) -> list[TermList]:
    """``lists`` in the order every score sums them: largest bound first (stable).

    Float addition is not associative, so the exhaustive sum, the pruned
    evaluation (which must take the terms in this order to prune) and every
    lookup of a few documents' scores add the terms in this one order: a
    document's score is then the same float whichever path computed it, and
    ties break the same way.
    """
    return sorted(lists, key=lambda t: -t.bound)


def exhaustive(lists: Sequence[TermList], avgdl: float) -> tuple[I64, npt.NDArray[np.float64]]:
    """Every document holding a query term, with its exact score (:func:`canonical` order)."""
    ordered = canonical(lists)
    acc, keys = _Accumulator(ordered), []
    for term in ordered:
        keys.append(acc.add(term, term.scores(avgdl)))
    found = np.concatenate(keys) if keys else np.empty(0, np.int64)
    scores = acc.values[found]
    acc.release(found)
    return found, scores


def lookup(lists: Sequence[TermList], avgdl: float, keys: I64, partial: F64 | None = None) -> F64:
    """The scores of ``keys`` by binary search: ``partial`` plus the terms of ``lists``.

    With ``partial`` None (0 for every key) and every query term in ``lists``,
    the same floats :func:`exhaustive` computes (0 where no term matches).
    """
    total = np.zeros(len(keys), dtype=np.float64) if partial is None else partial.copy()
    for term in canonical(lists):
        at = np.searchsorted(term.keys, keys)
        inside = at < len(term.keys)
        found = np.zeros(len(keys), dtype=bool)
        found[inside] = term.keys[at[inside]] == keys[inside]
        total[found] += term.scores(avgdl, at[found])
    return total


@dataclass
class Tally:
    """Blocks a store's queries scored and skipped (``embedmind bench lexical`` reports them)."""

    queries: int = 0
    scored: int = 0
    skipped: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, scored: int, skipped: int) -> None:
        """Add one query's blocks."""
        with self._lock:
            self.queries += 1
            self.scored += scored
            self.skipped += skipped


def top(
    lists: list[TermList],
    avgdl: float,
    m: int,
    tally: Tally | None = None,
    *,
    small: int = SMALL_QUERY,
) -> tuple[I64, npt.NDArray[np.float64], float]:
    """The ``m`` best documents (ties at the cut kept), with exact scores, and the bound θ.

    Every document outside the result scores below θ (θ is 0 when the result
    holds every matching document); so does every result member whose score is
    below θ only as far as the result knows — trust the result down to θ.
    ``tally`` counts the blocks scored and skipped. Lists of at most ``small``
    postings in all are scored exhaustively (every block scored).
    """
    if sum(len(term.keys) for term in lists) <= small:
        keys, scores = exhaustive(lists, avgdl)
        if tally is not None:
            tally.count(sum(len(term.blocks()[0]) for term in lists), 0)
        return _best(keys, scores, m, 0.0)
    keys, scores, theta = _pruned(lists, avgdl, m, tally)
    return _best(keys, scores, m, theta)


def _best(
    keys: I64, scores: npt.NDArray[np.float64], m: int, theta: float
) -> tuple[I64, npt.NDArray[np.float64], float]:
    """Cut a result to its ``m`` best (and those tied with the m-th); raise θ to the cut.

    A dropped document scores below the cut (exactly, or it was below θ
    already), so the result still holds every document scoring at least
    the new θ.
    """
    if len(keys) <= m:
        return keys, scores, theta
    cut = float(np.partition(scores, len(scores) - m)[len(scores) - m])
    keep = scores >= cut
    return keys[keep], scores[keep], max(theta, cut)


def _pruned(
    lists: list[TermList], avgdl: float, m: int, tally: Tally | None
) -> tuple[I64, npt.NDArray[np.float64], float]:
    """Block-max MaxScore: a superset of the ``m`` best, as :func:`top` describes."""
    acc = _Accumulator(lists)
    parts: list[I64] = []
    found = _maxscore(acc, parts, lists, avgdl, m, tally)
    acc.release(np.concatenate(parts) if parts else np.empty(0, np.int64))
    return found


def _maxscore(
    acc: _Accumulator,
    parts: list[I64],
    lists: list[TermList],
    avgdl: float,
    m: int,
    tally: Tally | None,
) -> tuple[I64, npt.NDArray[np.float64], float]:
    """:func:`_pruned`'s evaluation; every key it adds to ``acc`` is appended to ``parts``."""
    order = canonical(lists)
    remaining = [*np.cumsum([t.bound for t in order][::-1])[::-1].tolist(), 0.0]
    theta = 0.0
    done = 0
    scored = skipped = 0
    for i, term in enumerate(order):
        if theta > 0.0 and remaining[i] < theta:
            break  # a document holding none of the terms scored so far stays below θ
        starts, bounds = term.blocks()
        live = bounds + remaining[i + 1] >= theta if theta > 0.0 else None
        if live is None or live.all():
            parts.append(acc.add(term, term.scores(avgdl)))
            scored += len(starts)
        else:
            parts.append(_add_blocks(acc, term, avgdl, starts, live, np.concatenate(parts)))
            scored += int(live.sum())
            skipped += int((~live).sum())
        done = i + 1
        seen = sum(len(p) for p in parts)
        if done < len(order) and seen >= m:
            candidates = np.concatenate(parts)
            theta = float(np.partition(acc.values[candidates], seen - m)[seen - m])
    candidates = np.concatenate(parts) if parts else np.empty(0, np.int64)
    skipped += sum(len(term.blocks()[0]) for term in order[done:])  # looked up, not scored
    if tally is not None:
        tally.count(scored, skipped)
    if done == len(order):
        # Every term scored: complete (θ 0) unless a block was skipped, whose
        # unseen documents score below the θ that skipped it.
        return candidates, acc.values[candidates], theta if skipped else 0.0
    partial = acc.values[candidates]
    for i in range(done, len(order)):
        keep = partial + remaining[i] >= theta
        candidates, partial = candidates[keep], partial[keep]
        partial = lookup([order[i]], avgdl, candidates, partial)
    return candidates, partial, theta


def _add_blocks(
    acc: _Accumulator,
    term: TermList,
    avgdl: float,
    starts: I64,
    live: npt.NDArray[np.bool_],
    seen: I64,
) -> I64:
    """Score ``term``'s live blocks in full and look ``seen`` up in the others; return new keys."""
    n = len(term.keys)
    stops = np.append(starts[1:], n)
    # Postings of the live blocks, without visiting the skipped ones.
    sizes = (stops - starts)[live]
    firsts = starts[live]
    positions = np.repeat(firsts - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))
    at = np.searchsorted(term.keys, seen)
    inside = at < n
    found = np.zeros(len(seen), dtype=bool)
    found[inside] = term.keys[at[inside]] == seen[inside]
    block_of = np.searchsorted(starts, at[found], side="right") - 1
    looked = at[found][~live[block_of]]
    select = np.concatenate([positions, looked])
    return acc.add_at(term.keys[select], term.scores(avgdl, select))


_local = threading.local()


class _Accumulator:
    """Dense per-key score sums in a buffer this thread reuses from query to query.

    A fresh ``np.zeros`` of the key space per query costs a page fault per
    page touched (most of them, at a million keys); the reused buffer is
    zeroed only where the query wrote. A buffer is taken out of the thread's
    slot while in use, so a query that fails midway never hands a dirty one
    on: the next query allocates a new one.
    """

    def __init__(self, lists: Sequence[TermList]) -> None:
        top = max((int(t.keys[-1]) for t in lists if len(t.keys)), default=-1) + 1
        buffer: F64 | None = getattr(_local, "buffer", None)
        _local.buffer = None
        if buffer is None or len(buffer) < top:
            buffer = np.zeros(max(top, 1024), dtype=np.float64)
        self.values: F64 = buffer

    def release(self, touched: I64) -> None:
        """Zero the keys ``touched`` (every key added) and give the buffer back to the thread.

        Only on success: a query that raised keeps its buffer out of reuse.
        """
        self.values[touched] = 0.0
        _local.buffer = self.values

    def add(self, term: TermList, scores: F32) -> I64:
        """Add one term's scores; return the keys seen for the first time."""
        return self.add_at(term.keys, scores)

    def add_at(self, keys: I64, scores: F32) -> I64:
        """Add ``scores`` at ``keys`` (unique); return the keys seen for the first time."""
        # One gather and one scatter: ``values[keys] += scores`` costs about
        # twice as much in numpy (it gathers again before it scatters).
        sums = self.values[keys]
        fresh: I64 = keys[sums == 0.0]
        sums += scores
        self.values[keys] = sums
        return fresh
