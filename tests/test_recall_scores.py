"""Issue 50: a hit's score is its probability of relevance, and the dialog cosine is exact.

- the Alice/Bob case: the evidence decides the tie the old rank fusion gave to Bob;
- scores lie in [0, 1] and an unrelated question's hits score low;
- ``min_score`` is exactly a filter of the unthresholded list (property);
- the dialog cosines recall scores with equal a from-scratch numpy oracle
  over the live memories' vectors after every write path (property);
- one channel's scores are probabilities in that channel's own order.

The calibration on the LoCoMo development split is ``tests/test_locomo_calibration.py``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_session_context import T0, apply, op

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine.recall import Scorer
from embedmind.errors import InvalidInputError
from embedmind.evidence import CONTEXT_WEIGHT

TOY = ["Alice prefers green tea", "Bob drinks espresso", "Carol likes hiking",
       "The meeting is on Monday"]  # fmt: skip


@pytest.fixture(scope="module")
def toy() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:") as store:  # the default model, as a new user has it
        store.remember_many(TOY)
        yield store


def test_the_evidence_puts_alice_first(toy: embedmind.Store) -> None:
    result = toy.recall("what does alice drink", k=3)
    assert result[0].content == "Alice prefers green tea"
    # Bob's BM25 is higher, Alice's cosine much higher: no longer a tie.
    assert result[0].channels["text"].rank == 2 and result[0].channels["vector"].rank == 1
    assert result[0].score > result[1].score


def test_scores_are_probabilities_and_an_unrelated_question_scores_low(
    toy: embedmind.Store,
) -> None:
    for query in ["what does alice drink", "espresso", "monday meeting", ""]:
        assert all(0.0 <= hit.score <= 1.0 for hit in toy.recall(query, k=4))
    unrelated = toy.recall("quantum chromodynamics lattice gauge", k=4)
    assert len(unrelated) == 4 and max(hit.score for hit in unrelated) < 0.01


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.01, 1.5, "0.5", True])
def test_min_score_is_checked(toy: embedmind.Store, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="min_score"):
        toy.recall("tea", min_score=bad)  # type: ignore[arg-type]


WORDS = ["tea", "coffee", "alice", "bob", "drinks", "green", "monday", "hike", "espresso"]


@pytest.fixture(scope="module")
def corpus() -> Iterator[embedmind.Store]:
    rng = np.random.default_rng(7)
    drafts = [
        embedmind.Draft(
            " ".join(rng.choice(WORDS, size=int(rng.integers(1, 5)))),
            session_id=f"s{i // 7}", created_at=T0 + dt.timedelta(minutes=i),
        )
        for i in range(120)
    ]  # fmt: skip
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        store.remember_many(drafts)
        yield store


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    k=st.integers(1, 60),
    mode=st.sampled_from(["hybrid", "text", "vector"]),
    recency=st.booleans(),
    cut=st.floats(0.0, 1.0),
)
def test_min_score_is_exactly_a_filter_of_the_full_list(
    corpus: embedmind.Store, query: str, k: int, mode: str, recency: bool, cut: float
) -> None:
    full = corpus.recall(query, k=k, mode=mode, recency=recency)
    scores = sorted({hit.score for hit in full})
    # Also thresholds exactly at a hit's score (kept: ">=").
    for threshold in [cut, *scores[:: max(1, len(scores) // 3)]]:
        threshold = min(max(threshold, 0.0), 1.0)
        kept = corpus.recall(query, k=k, mode=mode, recency=recency, min_score=threshold)
        assert list(kept) == [hit for hit in full if hit.score >= threshold]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    mode=st.sampled_from(["text", "vector"]),
)
def test_one_channel_scores_are_its_probabilities_in_its_own_order(
    corpus: embedmind.Store, query: str, mode: str
) -> None:
    # Oracle: the channel's raw scores, best first (ties in write order), are
    # what mode=text / mode=vector ranked on; the score is a probability that
    # is a function of the raw score alone, increasing: equal raw, equal score.
    hits = list(corpus.recall(query, k=200, mode=mode))
    raw = [hit.channels[mode].raw for hit in hits]
    assert raw == sorted(raw, reverse=True)
    assert all(0.0 < hit.score < 1.0 for hit in hits)
    by_raw: dict[float, set[float]] = {}
    for value, hit in zip(raw, hits, strict=True):
        by_raw.setdefault(value, set()).add(hit.score)
    assert all(len(scores) == 1 for scores in by_raw.values()), "a tie became two scores"
    ordered = [next(iter(by_raw[value])) for value in sorted(by_raw)]
    assert ordered == sorted(ordered)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


# -- the dialog cosine: exact through every write path -----------------------------


def oracle(store: embedmind.Store, query: np.ndarray[Any, Any]) -> dict[str, float]:
    """Each live memory's dialog cosine, rebuilt from scratch from the public API."""
    live = list(store.iter(include_superseded=True, include_expired=True))
    dialogs: dict[tuple[str, str], list[Any]] = {}
    for memory in live:
        if memory.session_id is not None:
            dialogs.setdefault((memory.namespace, memory.session_id), []).append(memory)
    around: dict[str, list[str]] = {}
    for turns in dialogs.values():
        turns.sort(key=lambda m: (m.created_at, m.id))  # ids are distinct per minute here
        for i, turn in enumerate(turns):
            around[turn.id] = [t.id for t in turns[max(0, i - 1) : i + 2] if t.id != turn.id]
    stored = store.vectors([m.id for m in live])
    own = {i: np.asarray(v, dtype=np.float64) for i, v in stored.items()}
    out = {}
    for memory in live:
        vector = own[memory.id]
        if around.get(memory.id):
            vector = vector + CONTEXT_WEIGHT * np.mean([own[o] for o in around[memory.id]], axis=0)
        out[memory.id] = float(vector @ query / np.linalg.norm(vector))
    return out


def engine_cosines(store: embedmind.Store, query: np.ndarray[Any, Any]) -> dict[str, float]:
    """The dialog cosines recall scores with, for every live memory."""
    backend = store._engine.backend
    with backend.read() as session:
        keys = list(range(1, 5000))
        ids = {k: i.id for k, i in session.records.identities(keys, live=True).items()}
        scorer = Scorer(session, "", query.astype(np.float32))
        scorer.prepare(list(ids))
        return {ids[k]: scorer.dialog_cosine(k) for k in ids}


@settings(max_examples=25, deadline=None)
@given(st.lists(op, min_size=3, max_size=18))
def test_the_dialog_cosine_equals_a_rebuild_after_every_write(steps: list[tuple[Any, ...]]) -> None:
    query = np.asarray(HashingEmbedder(32).embed_query("dog cello recital hike"), np.float64)
    query /= np.linalg.norm(query)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as store:
        made: dict[str, str] = {}
        for step in steps:
            apply(store, step, made)
            want, got = oracle(store, query), engine_cosines(store, query)
            assert got.keys() == want.keys(), step
            for key, value in want.items():
                assert got[key] == pytest.approx(value, abs=1e-6), (step, key)


def test_the_dialog_cosine_survives_export_and_import(tmp_path: Any) -> None:
    query = np.asarray(HashingEmbedder(32).embed_query("tea monday"), np.float64)
    query /= np.linalg.norm(query)
    drafts = [
        embedmind.Draft(w, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
        for i, w in enumerate(["green tea", "on monday", "hike", "espresso"])
    ]
    dump = tmp_path / "dump.jsonl"
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as store:
        store.remember_many(drafts)
        store.forget(store.recall("hike", k=1, mode="text")[0].id)
        store.export_jsonl(dump)
        before = engine_cosines(store, query)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as copy:
        copy.import_jsonl(dump)
        assert engine_cosines(copy, query) == pytest.approx(before)
        assert engine_cosines(copy, query) == pytest.approx(oracle(copy, query))
