"""The calibration and per-conversation figures of ``bench locomo``, against plain oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embedmind_bench.locomo_calibration import BINS, calibration, folds, tables
from embedmind_bench.locomo_data import Question

answers = st.lists(
    st.tuples(
        st.sampled_from(["locomo/conv-1", "locomo/conv-2"]),
        st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), max_size=12),
    ),
    min_size=1,
    max_size=8,
)


def _questions(
    drawn: list[tuple[str, list[tuple[float, bool]]]],
) -> list[tuple[Question, list[str], list[float]]]:
    out = []
    for n, (namespace, hits) in enumerate(drawn):
        ids = [f"q{n}/h{i}" for i in range(len(hits))]
        evidence = frozenset([f"q{n}/none", *(i for i, (_, e) in zip(ids, hits, strict=True) if e)])
        out.append((Question(namespace, f"q{n}", 4, evidence), ids, [s for s, _ in hits]))
    return out


@given(answers)
def test_the_ece_is_the_count_weighted_gap_of_ten_equal_bins(
    drawn: list[tuple[str, list[tuple[float, bool]]]],
) -> None:
    figures = calibration(_questions(drawn))
    top = [pair for _, hits in drawn for pair in hits[:10]]  # the first 10 hits count
    assert figures["hits"] == len(top)
    if not top:
        assert figures["ece"] is None
        return
    scores = np.array([s for s, _ in top])
    labels = np.array([e for _, e in top], dtype=float)
    slot = np.minimum((scores * BINS).astype(int), BINS - 1)
    gap = sum(
        abs(scores[slot == b].mean() - labels[slot == b].mean()) * (slot == b).sum()
        for b in range(BINS)
        if (slot == b).any()
    )
    assert figures["ece"] == pytest.approx(gap / len(top))
    assert sum(row["count"] for row in figures["bins"]) == len(top)


def test_a_perfectly_calibrated_score_has_no_error_and_a_confident_wrong_one_all() -> None:
    q = Question("locomo/conv-1", "q", 4, frozenset({"a"}))
    assert calibration([(q, ["a", "b"], [1.0, 0.0])])["ece"] == 0.0
    assert calibration([(q, ["b"], [1.0])])["ece"] == 1.0


def test_folds_give_each_conversation_and_the_spread() -> None:
    a = Question("locomo/conv-1", "q", 4, frozenset({"x", "y"}))
    b = Question("locomo/conv-2", "q", 4, frozenset({"z"}))
    figures = folds([(a, ["x", "n"]), (b, ["n"])])
    assert figures["conversations"]["conv-1"]["recall@10"] == 0.5
    assert figures["conversations"]["conv-2"]["hit@10"] == 0.0
    assert figures["min"] == {"recall@10": 0.0, "hit@10": 0.0}
    assert figures["max"] == {"recall@10": 0.5, "hit@10": 1.0}
    calibrated, spread = tables(
        {"hybrid": {"folds": figures, "calibration": calibration([(a, ["x"], [0.9])])}},
        binned=("hybrid",),
    )
    assert "ECE 0.100" in calibrated.render() and "0.9-1.0" in calibrated.render()
    assert spread.header == ["method", "conv-1", "conv-2", "min", "max"]
