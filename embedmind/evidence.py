"""Calibrated evidence fusion: a hit's score is the estimated probability that it is relevant.

Hybrid recall scores each candidate (the union of the text channel's and the
vector channel's first candidates) from three features of the query and that
candidate alone:

- ``tq = BM25 / ceiling``: the BM25 score over the largest any memory could
  reach for this query (:meth:`~embedmind.backend.facets.Channels.text_ceiling`,
  the sum of ``weight · idf · (k1 + 1)`` over its scoring terms), so a memory
  matching every rare query word scores near 1 whatever the query's length;
- ``tsat = BM25 / (BM25 + 20)``: the raw evidence, saturating;
- ``cctx``: the cosine of the query with the memory's *dialog vector*
  (:func:`dialog_cosines`): its own vector plus half the mean of its dialog
  neighbours' own vectors, renormalised.

``P = sigmoid(A·tq + B·tsat + C·cctx + D)`` is a logistic model fitted on
the LoCoMo development split (a ranking logistic over every candidate, then
Platt scaling on the top 10, composed into one), with every constant chosen
by leave-one-conversation-out; ``docs/benchmarks.md`` gives the fitting, the
fold spread and the calibration table. A memory outside the text channel's
candidates has BM25 0 (its text evidence was too weak to be listed); the
cosine is exact for every candidate. Because a score depends only on the
query and the candidate, ``recall(q, k=j)`` stays a prefix of ``recall(q, k=n)``
and ``min_score`` is a plain filter.

Text mode and vector mode use the same form with their one channel's
features (:attr:`Models.text`, :attr:`Models.vector`), fitted the same way,
and keep their channel's order (each model is increasing in its feature).
Each constant is fitted once per index setting: a store whose postings carry
date words (:data:`WITH_DATES`) scores BM25 over more terms than one without
(:data:`WITHOUT_DATES`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from embedmind.lexical.session_context import Links

SATURATION = 20.0
"""BM25 at which ``tsat`` reaches one half."""
CONTEXT_WEIGHT = 0.5
"""Weight of the neighbours' mean vector in a dialog vector (0.25 and 1.0 measured lower)."""


@dataclass(frozen=True)
class Model:
    """``P = sigmoid(tq·tq + tsat·tsat + cosine·cos + bias)``."""

    tq: float
    tsat: float
    cosine: float
    bias: float

    def probability(self, bm25: float, ceiling: float, cosine: float) -> float:
        """The estimated probability that a candidate with these features is relevant."""
        tq = bm25 / ceiling if ceiling > 0.0 else 0.0
        tsat = bm25 / (bm25 + SATURATION)
        z = self.tq * tq + self.tsat * tsat + self.cosine * cosine + self.bias
        # Both branches stay finite for any z (exp of a large positive overflows).
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


@dataclass(frozen=True)
class Models:
    """The three fitted models of one index setting (with or without date words)."""

    hybrid: Model
    text: Model
    vector: Model


WITHOUT_DATES = Models(
    hybrid=Model(tq=2.527, tsat=3.610, cosine=3.838, bias=-6.626),
    text=Model(tq=3.397, tsat=6.242, cosine=0.0, bias=-6.197),
    vector=Model(tq=0.0, tsat=0.0, cosine=5.994, bias=-6.080),
)
"""A store whose postings carry no date words (one written before they were, or turned off).

Hybrid: fusion depth 20, LOO recall@10 0.740, top-10 ECE 0.004 (folds <= 0.03);
text (and hybrid without vectors) over the text top 20, LOO top-10 ECE 0.005;
vector over the memory's own cosine (its vector top 20), LOO top-10 ECE 0.002."""
WITH_DATES = Models(
    hybrid=Model(tq=2.864, tsat=3.302, cosine=3.900, bias=-6.696),
    text=Model(tq=3.770, tsat=5.750, cosine=0.0, bias=-6.230),
    vector=WITHOUT_DATES.vector,
)
"""A store whose postings carry date words (:mod:`embedmind.lexical.dates`, the default).

Refitted on the development split indexed with them: hybrid LOO recall@10
0.758 (depth 20); text LOO top-10 ECE 0.005. The vector channel does not see
date words: its model is the same."""


def models(date_words: bool) -> Models:
    """The fitted models for a store with or without date words in its postings."""
    return WITH_DATES if date_words else WITHOUT_DATES


Vectors = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]
"""Stored vectors as ``(owners, rows)``: each row's memory key; rows sorted by key, then chunk."""


def dialog_cosines(
    query: npt.NDArray[np.float32],
    keys: Sequence[int],
    vectors: Vectors,
    links: Mapping[int, Links],
) -> dict[int, float]:
    """Each memory's cosine with ``query`` through its dialog vector (no vector: omitted).

    A memory's dialog vector, per chunk, is ``normalise(chunk + w · mean(neighbours))``
    with ``w =`` :data:`CONTEXT_WEIGHT`, where the neighbours are the
    ``links`` the lexical index holds for it (the previous and next turn in
    its namespace and session, :mod:`embedmind.lexical.session_context`) and a
    neighbour counts as its normalised mean chunk. A memory without
    neighbours keeps its own vectors. The best chunk counts. Computed in
    float64 from the stored float32 vectors, so both backends agree; a few
    array operations whatever the number of candidates (it runs in every
    hybrid recall).
    """
    owners, stored = vectors
    if not len(owners):
        return {}
    members, starts, counts = np.unique(owners, return_index=True, return_counts=True)
    rows = stored.astype(np.float64)
    means = _segment_sums(rows, starts, counts) / counts[:, None]
    units = means / _norms(means)
    wanted = np.fromiter(dict.fromkeys(keys), dtype=np.int64)
    slot = _slots(members, wanted)
    wanted, slot = wanted[slot >= 0], slot[slot >= 0]
    if not len(wanted):
        return {}
    # Each candidate's neighbours' mean unit vector (zero without neighbours).
    pairs = np.array([links.get(int(key), (None, None)) for key in wanted], dtype=object)
    around = np.zeros((len(wanted), rows.shape[1]))
    present = np.zeros(len(wanted))
    for side in (0, 1):
        found = np.fromiter((-1 if o is None else o for o in pairs[:, side]), dtype=np.int64)
        other = _slots(members, found)
        has = other >= 0
        around[has] += units[other[has]]
        present += has
    shift = CONTEXT_WEIGHT * around / np.maximum(present, 1.0)[:, None]
    # Every chunk of each candidate, in order, with its candidate's shift.
    sizes = counts[slot]
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    picked = np.repeat(starts[slot] - firsts, sizes) + np.arange(int(sizes.sum()))
    chunks = rows[picked] + np.repeat(shift, sizes, axis=0)
    # Only a shifted chunk is renormalised: an own chunk is compared as stored.
    norms = _norms(chunks)
    norms[np.repeat(present, sizes) == 0] = 1.0
    chunks /= norms
    sims = np.clip(chunks @ np.asarray(query, dtype=np.float64), -1.0, 1.0)
    best = np.maximum.reduceat(sims, firsts)
    return dict(zip(wanted.tolist(), best.tolist(), strict=True))


def _segment_sums(
    rows: npt.NDArray[np.float64], starts: npt.NDArray[np.intp], counts: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]:
    """The sum of each run of ``rows`` (``counts[i]`` rows from ``starts[i]``)."""
    if len(counts) == len(rows):  # one chunk each, the usual case
        return rows
    # A 2-D ``np.add.reduceat`` costs ~10x a cumulative sum of the same rows.
    total = np.cumsum(rows, axis=0)
    ends = total[starts + counts - 1]
    before = np.where((starts > 0)[:, None], total[np.maximum(starts - 1, 0)], 0.0)
    sums: npt.NDArray[np.float64] = ends - before
    return sums


def _slots(members: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each key's index in the sorted ``members`` (-1 when absent)."""
    at = np.minimum(np.searchsorted(members, keys), len(members) - 1)
    found: npt.NDArray[np.int64] = np.where(members[at] == keys, at, -1)
    return found


def _norms(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row's norm as a column (never below 1e-12, so a zero row stays zero)."""
    norms: npt.NDArray[np.float64] = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return norms
