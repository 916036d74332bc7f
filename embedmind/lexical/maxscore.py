"""Exhaustive and block-max MaxScore BM25 evaluation over in-memory posting lists.

Every path adds a document's term scores in one order (:func:`canonical`),
so a score is the same float whether it was summed exhaustively, by the
pruned evaluation or looked up for a few documents, and ties break alike.

MaxScore (Turtle & Flood, "Query evaluation: strategies and optimizations",
1995) with block-max bounds (Ding & Suel, "Faster top-k document retrieval
using block-max indexes", 2011), evaluated one key range at a time
(:func:`_pruned`): with θ the m-th best whole score found so far, the terms
whose bounds together stay below θ are non-essential in a range and only
looked up for the documents the other terms found there; a range whose
bounds all together stay below θ is skipped whole. θ is seeded from the
first term's best documents (:func:`_seed_theta`), and is always an exact
score, never a partial one.

With numpy the pruned path pays per call, so :func:`top` takes it only when
it can skip most postings: a query of at most :data:`SMALL_QUERY` postings,
or one whose essential terms hold more than :data:`PRUNE_SHARE` of them
(at 1M documents, the benchmark's questions: their terms' bounds are
alike), is scored exhaustively. Either way the result is cut to the ``m``
best (ties at the cut kept), so the caller walks a few dozen candidates, not
thousands. Scores come from the index's precomputed float32 impacts
(:attr:`TermList.impacts`) when it has them, and the per-key sums live in a
float64 buffer each thread reuses, zeroed where it was touched, instead of a
fresh ``np.zeros`` of the key space per query.
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
    return _summed(ordered, [term.scores(avgdl) for term in ordered])


def _summed(order: list[TermList], scores: list[F32]) -> tuple[I64, npt.NDArray[np.float64]]:
    """:func:`exhaustive` of terms already in :func:`canonical` order, with their contributions."""
    acc, keys = _Accumulator(order), []
    for i, (term, contributions) in enumerate(zip(order, scores, strict=True)):
        if i == 0:  # the buffer is clean: every key is new, and 0.0 + s is s
            acc.values[term.keys] = contributions
            keys.append(term.keys)
        else:
            keys.append(acc.add(term, contributions))
    found = np.concatenate(keys) if keys else np.empty(0, np.int64)
    totals = acc.values[found]
    acc.release(found)
    return found, totals


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


PRUNE_SHARE = 0.25
"""Largest share of a query's postings in its essential terms for which :func:`top` prunes.

With numpy, pruning pays per call, not per posting: at 1M documents, the
benchmark's questions (whose terms' bounds are alike) keep about half their
postings essential, and scoring those plus the lookups took more CPU than
scoring every posting (5.7 against 4.7 ms). A query with one rare term and
common ones (most of its postings non-essential) is where pruning wins.
"""


def top(
    lists: list[TermList],
    avgdl: float,
    m: int,
    tally: Tally | None = None,
    *,
    small: int | None = None,
    share: float = PRUNE_SHARE,
) -> tuple[I64, npt.NDArray[np.float64], float]:
    """The ``m`` best documents (ties at the cut kept), with exact scores, and the bound θ.

    Every document outside the result scores below θ (θ is 0 when the result
    holds every matching document); so does every result member whose score is
    below θ only as far as the result knows — trust the result down to θ.
    ``tally`` counts the blocks scored and skipped. Lists of at most ``small``
    (default :data:`SMALL_QUERY`, read at each call)
    postings in all are scored exhaustively (every block scored), and so are
    those whose essential terms hold more than ``share`` of the postings
    (:func:`_worth_pruning`).
    """
    if sum(len(term.keys) for term in lists) > (SMALL_QUERY if small is None else small):
        order = canonical(lists)
        scores = [term.scores(avgdl) for term in order]
        theta = _seed_theta(order, scores, m)
        if _worth_pruning(order, theta, share):
            keys, found, theta = _pruned(order, scores, theta, m, tally)
            return _best(keys, found, m, theta)
        keys, found = _summed(order, scores)  # what the seed already computed
    else:
        keys, found = exhaustive(lists, avgdl)
    if tally is not None:
        tally.count(sum(len(term.blocks()[0]) for term in lists), 0)
    return _best(keys, found, m, 0.0)


def _worth_pruning(order: list[TermList], theta: float, share: float) -> bool:
    """Whether the essential terms under ``theta`` hold at most ``share`` of the postings.

    Essential: from the first term on, up to the one from which the bounds
    of every later term together fall below θ (MaxScore's split, over the
    whole key range; the ranges' own bounds can only prune more).
    """
    if theta <= 0.0:
        return False
    remaining = np.cumsum([t.bound for t in order][::-1])[::-1].tolist()
    essential = next((i for i, left in enumerate(remaining) if left < theta), len(order))
    total = sum(len(t.keys) for t in order)
    return sum(len(t.keys) for t in order[:essential]) <= share * total


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


CHUNK_POSTINGS = 8_192
"""Postings (over all query terms) per key range that :func:`_pruned` evaluates at once."""
MAX_CHUNKS = 64


def _pruned(
    order: list[TermList], scores: list[F32], theta: float, m: int, tally: Tally | None
) -> tuple[I64, npt.NDArray[np.float64], float]:
    """Block-max MaxScore over key ranges: a superset of the ``m`` best, as :func:`top` says.

    Document-at-a-time in spirit, vectorised per range: the key space is cut
    into ranges of about :data:`CHUNK_POSTINGS` postings, taken in key order.
    In each range every term has a bound, the largest bound of its blocks
    that overlap the range. With the terms in :func:`canonical` order, the
    terms from the first one whose bound plus those of all later terms is
    below θ on are non-essential there: a document holding only them cannot
    reach θ, so they are never scored in full, only looked up (binary search)
    for the documents the essential terms found, and only for those whose
    partial score plus the bounds left can still reach θ. A range whose every
    bound together stays below θ is skipped whole. Every document that
    survives is scored completely (in canonical order, so exactly as
    :func:`exhaustive` scores it), which is what θ, the m-th best of them,
    is taken from: θ starts at ``theta`` (:func:`_seed_theta`) and only rises.
    """
    first = min(int(t.keys[0]) for t in order if len(t.keys))
    last = max(int(t.keys[-1]) for t in order if len(t.keys)) + 1
    total = sum(len(t.keys) for t in order)
    chunks = int(min(MAX_CHUNKS, max(1, total // CHUNK_POSTINGS)))
    edges = np.unique(np.linspace(first, last, chunks + 1).astype(np.int64))
    chunks = len(edges) - 1
    cuts = [np.searchsorted(t.keys, edges) for t in order]
    bounds, spans = _range_bounds(order, cuts)
    # remaining[i, c]: the most terms i.. can add to a document of range c.
    remaining = np.vstack([np.cumsum(bounds[::-1], axis=0)[::-1], np.zeros((1, chunks))])
    cut_at = [c.tolist() for c in cuts]
    left = remaining.T.tolist()
    touched = [np.zeros(len(t.blocks()[0]), dtype=bool) for t in order]
    acc = _Accumulator(order)
    kept_keys: list[I64] = []
    kept_scores: list[F64] = []
    held = 0
    for c in range(chunks):
        rest = left[c]
        if theta > 0.0 and rest[0] < theta:
            continue  # no document of this range can reach θ
        essential = len(order)
        if theta > 0.0:
            essential = next(i for i in range(len(order) + 1) if rest[i] < theta)
        fresh = []
        for i in range(essential):
            a, b = cut_at[i][c], cut_at[i][c + 1]
            if a < b:
                fresh.append(acc.add_at(order[i].keys[a:b], scores[i][a:b]))
                lo, hi = spans[i][c]
                touched[i][lo : hi + 1] = True
        found = np.concatenate(fresh) if fresh else np.empty(0, np.int64)
        partial = acc.values[found]
        acc.values[found] = 0.0  # the buffer is clean again for the next range
        for i in range(essential, len(order)):
            keep = partial + rest[i] >= theta
            found, partial = found[keep], partial[keep]
            a, b = cut_at[i][c], cut_at[i][c + 1]
            if a < b and len(found):
                partial = _look_up(order[i].keys[a:b], scores[i][a:b], found, partial)
        kept_keys.append(found)
        kept_scores.append(partial)
        held += len(found)
        if held >= m:
            # Only what can still be in the top m is carried to the next range.
            kept = np.concatenate(kept_scores)
            theta = max(theta, float(np.partition(kept, held - m)[held - m]))
            keep = kept >= theta
            kept_keys, kept_scores = [np.concatenate(kept_keys)[keep]], [kept[keep]]
            held = len(kept_scores[0])
    acc.release(np.empty(0, np.int64))
    if tally is not None:
        scored = sum(int(t.sum()) for t in touched)
        tally.count(scored, sum(len(t) for t in touched) - scored)
    keys = np.concatenate(kept_keys) if kept_keys else np.empty(0, np.int64)
    return keys, np.concatenate(kept_scores) if kept_scores else np.empty(0), theta


SEED = 256
"""Documents of the first term whose whole scores :func:`_seed_theta` looks up."""


def _seed_theta(order: list[TermList], scores: list[F32], m: int) -> float:
    """A first θ: the m-th best whole score among the best documents of the first term.

    The first term in :func:`canonical` order bounds highest (usually the
    rarest); its :data:`SEED` highest-scoring documents, looked up in every
    term, have exact scores, so the top m score at least their m-th best.
    Without it the first key range would be scored in full to find θ.
    These documents are scored again with their range (θ only prunes).
    """
    head = scores[0]
    if len(head) < m:
        return 0.0
    pick = np.arange(len(head)) if len(head) <= SEED else np.argpartition(head, -SEED)[-SEED:]
    keys = order[0].keys[pick]
    total = np.zeros(len(keys), dtype=np.float64)
    for term, contributions in zip(order, scores, strict=True):
        total = _look_up(term.keys, contributions, keys, total)
    return float(np.partition(total, len(total) - m)[len(total) - m])


def _range_bounds(
    order: list[TermList], cuts: list[I64]
) -> tuple[F64, list[list[tuple[int, int]]]]:
    """Each term's bound in each key range, and the blocks ``(first, last)`` it overlaps there.

    ``cuts[i]`` are the positions in term ``i``'s keys where the ranges begin
    (and the last one ends). A term with no posting in a range bounds it by 0.
    """
    chunks = len(cuts[0]) - 1
    bounds = np.zeros((len(order), chunks), dtype=np.float64)
    spans: list[list[tuple[int, int]]] = []
    for i, term in enumerate(order):
        starts, block_bounds = term.blocks()
        a, b = cuts[i][:-1], cuts[i][1:]
        lo = np.searchsorted(starts, a, side="right") - 1
        hi = np.searchsorted(starts, np.maximum(b - 1, 0), side="right") - 1
        # The largest block bound over blocks lo..hi: a running max of blocks
        # lo..(next range's lo) from reduceat, and the block holding b - 1.
        inner = np.maximum.reduceat(block_bounds, np.minimum(lo, len(block_bounds) - 1))
        top = np.maximum(inner, block_bounds[hi])
        bounds[i] = np.where(a < b, top, 0.0)
        spans.append(list(zip(lo.tolist(), hi.tolist(), strict=True)))
    return bounds, spans


def _look_up(keys: I64, scores: F32, found: I64, partial: F64) -> F64:
    """``partial`` plus the scores of ``found`` in one term's postings ``keys`` (0 where absent)."""
    at = np.searchsorted(keys, found)
    inside = at < len(keys)
    hit = np.zeros(len(found), dtype=bool)
    hit[inside] = keys[at[inside]] == found[inside]
    partial[hit] += scores[at[hit]]
    return partial


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
