"""Issue 50: hybrid scores are calibrated on the LoCoMo development split (ECE <= 0.05).

A new store's default recall (the default model, session context on) is asked
every development question as ``embedmind bench locomo`` asks it; the top-10
hits' scores are binned against whether each is an evidence turn, with the
benchmark's own arithmetic (:func:`embedmind_bench.locomo_calibration.calibration`).
The data is CC BY-NC and lives in ``../shared`` beside the repository (or at
``$EMBEDMIND_LOCOMO``, as the benchmark finds it): without it the test skips,
saying where it looked.
"""

from __future__ import annotations

import pytest

import embedmind

bench = pytest.importorskip("embedmind_bench.locomo_data", reason="needs the bench distribution")
from embedmind_bench.locomo_calibration import calibration  # noqa: E402

DATA = bench.data_path()  # ../shared/data/locomo/locomo-dev.json beside the repository
CEILING = 0.05
"""The issue's bound on the development split (0.10 on the held-out conversations)."""


@pytest.mark.skipif(not DATA.exists(), reason=f"LoCoMo development data not found at {DATA}")
def test_top_10_hybrid_scores_are_calibrated_on_the_development_split() -> None:
    # About 16 s on 2 cores: embedding the 2,760 turns, then 759 recalls.
    data = bench.load(DATA)
    with embedmind.Store.open(":memory:") as store:  # defaults: MiniLM, session context on
        store.remember_many(data.drafts, batch_size=512)
        answers = []
        for question in data.questions:
            hits = store.recall(question.text, k=10, namespace=question.namespace)
            answers.append((question, hits.ids, [hit.score for hit in hits]))
    figures = calibration(answers)
    assert figures["hits"] == 10 * len(data.questions)
    assert figures["ece"] <= CEILING, figures
