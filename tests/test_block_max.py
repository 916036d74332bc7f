"""Block-max MaxScore (``embedmind.lexical.maxscore.top``) against exhaustive scoring.

Oracle: ``exhaustive`` scores every posting. ``top`` may skip blocks, but
every document scoring at least θ must come back with its exact score, and
every document it leaves out must score below θ — whatever the blocks and
their bounds (hypothesis draws both). A pruned run must also skip blocks on
lists built to allow it, or the pruning is not there at all.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from embedmind.lexical import bm25, maxscore
from embedmind.lexical.maxscore import TermList

AVGDL = 10.0


def _term(keys: list[int], tfs: list[int], lengths: list[int], idf: float, cut: int) -> TermList:
    k = np.asarray(keys, dtype=np.int64)
    tf = np.asarray(tfs, dtype=np.float64)
    ln = np.asarray(lengths, dtype=np.float64)
    starts = np.arange(0, len(k), cut, dtype=np.int64)
    block_tf = np.maximum.reduceat(tf, starts)
    block_len = np.minimum.reduceat(ln, starts)
    bounds = bm25.upper_bounds(block_tf, block_len, idf, AVGDL) * 1.0001
    bound = float(bounds.max())
    return TermList(k, tf.astype(np.float32), ln.astype(np.float32), idf, bound, starts, bounds)


@st.composite
def term_lists(draw: st.DrawFn) -> list[TermList]:
    lists = []
    for _ in range(draw(st.integers(1, 5))):
        keys = sorted(draw(st.sets(st.integers(1, 300), min_size=1, max_size=120)))
        n = len(keys)
        tfs = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
        lengths = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
        idf = draw(st.floats(0.05, 8.0))
        lists.append(_term(keys, tfs, lengths, idf, draw(st.integers(1, 16))))
    return lists


@settings(max_examples=300)
@given(term_lists(), st.integers(1, 30), st.sampled_from([0, maxscore.SMALL_QUERY]))
def test_every_document_at_or_above_theta_keeps_its_exact_score(
    lists: list[TermList], m: int, small: int
) -> None:
    # small=0 with share=1 prunes every query with a θ; the default scores these exhaustively.
    all_keys, all_scores = maxscore.exhaustive(lists, AVGDL)
    exact = dict(zip(all_keys.tolist(), all_scores.tolist(), strict=True))
    keys, scores, theta = maxscore.top(lists, AVGDL, m, small=small, share=1.0)
    got = dict(zip(keys.tolist(), scores.tolist(), strict=True))
    for key, score in exact.items():
        if score >= theta:
            assert key in got and abs(got[key] - score) <= 1e-9 * max(1.0, score), key
        elif key not in got:
            assert score < theta
    for key, score in got.items():
        assert score <= exact[key] + 1e-9  # a partial score never over-states
    best = sorted(exact.values(), reverse=True)[:m]
    assert sorted((s for s in got.values() if s >= theta), reverse=True)[: len(best)] == [
        s for s in best if s >= theta
    ]


def test_blocks_that_cannot_reach_the_top_are_skipped() -> None:
    rng = np.random.default_rng(3)
    rare = _term(list(range(1, 2000, 97)), [3] * 21, [5] * 21, 6.0, 8)
    keys = np.arange(1, 20_001, dtype=np.int64)
    # One block of the common term holds short documents; the rest cannot reach θ.
    lengths = np.where(keys < 512, 3, 60).tolist()
    common = _term(keys.tolist(), rng.integers(1, 2, len(keys)).tolist(), lengths, 0.3, 256)
    tally = maxscore.Tally()
    keys_top, scores, theta = maxscore.top([rare, common], AVGDL, 10, tally, small=0)
    assert tally.queries == 1 and tally.skipped > 0.5 * (tally.scored + tally.skipped)
    all_keys, all_scores = maxscore.exhaustive([rare, common], AVGDL)
    best = all_keys[np.lexsort((all_keys, -all_scores))][:10]
    got = keys_top[np.lexsort((keys_top, -scores))][:10]
    assert got.tolist() == best.tolist()


def test_a_skipped_block_of_the_last_term_keeps_theta() -> None:
    # Found by hypothesis: every term was scored, but key 3's block of the last
    # one was skipped; returning θ = 0 ("complete") would vouch for its absence.
    lists = [_term([1, 2, 3], [1, 2, 1], [1, 1, 1], 3.5, 1), _term([1, 2], [1, 2], [1, 1], 4.0, 1)]
    keys, scores, theta = maxscore.top(lists, AVGDL, 2, small=0, share=1.0)
    exact = dict(zip(*(a.tolist() for a in maxscore.exhaustive(lists, AVGDL)), strict=True))
    assert 3 in keys or exact[3] < theta


@settings(max_examples=200)
@given(term_lists(), st.integers(1, 30), st.sampled_from([0, maxscore.SMALL_QUERY]))
def test_the_result_is_cut_to_the_m_best_and_their_ties(
    lists: list[TermList], m: int, small: int
) -> None:
    # The channel walks what top returns: thousands of partial candidates
    # would cost it a sort and a visibility check each.
    keys, scores, theta = maxscore.top(lists, AVGDL, m, small=small, share=1.0)
    if len(keys) > m:
        cut = np.sort(scores)[::-1][m - 1]
        assert (scores >= cut).all() and theta >= cut


def test_precomputed_impacts_score_exactly_as_computed_ones() -> None:
    term = _term(list(range(1, 400, 3)), [1, 2, 3] * 44 + [1], [4, 9, 30] * 44 + [7], 1.7, 32)
    fast = maxscore.with_impacts(term, AVGDL)
    assert fast.impacts is not None and not fast.impacts.flags.writeable
    assert fast.scores(AVGDL).tolist() == term.scores(AVGDL).tolist()
    select = np.asarray([0, 5, 17], dtype=np.int64)
    assert fast.scores(AVGDL, select).tolist() == term.scores(AVGDL, select).tolist()
    # Another avgdl (a write since) computes afresh instead of reusing stale impacts.
    assert fast.scores(2 * AVGDL).tolist() == term.scores(2 * AVGDL).tolist()
    assert fast.scores(2 * AVGDL).tolist() != fast.scores(AVGDL).tolist()


def test_the_reused_accumulator_starts_clean_for_every_query() -> None:
    # Two queries on one thread share a buffer: the second must not see the first's sums.
    first = [_term([1, 2, 3], [1, 1, 1], [5, 5, 5], 2.0, 2)]
    second = [_term([2, 3, 4], [2, 2, 2], [5, 5, 5], 1.0, 2)]
    maxscore.exhaustive(first, AVGDL)
    keys, scores = maxscore.exhaustive(second, AVGDL)
    alone = second[0].scores(AVGDL)
    assert keys.tolist() == [2, 3, 4] and scores.tolist() == alone.tolist()
    maxscore.top(first, AVGDL, 1, small=0, share=1.0)
    keys, scores, _ = maxscore.top(second, AVGDL, 3, small=0, share=1.0)
    assert sorted(scores.tolist()) == sorted(alone.tolist())
