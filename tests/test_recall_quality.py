"""Recall quality: rerank_alpha validation, k-independent fusion, demo stability."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from call_sizes import call_sizes
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import records, vector_rows
from embedmind.cli import demo
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine.recall import FUSION_DEPTH


@pytest.fixture
def hashed() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=64)) as store:
        store.remember_many(["postgres database tuning", "rust ownership rules", "database"])
        yield store


@pytest.mark.parametrize("alpha", [0.5, 1.5, 2.0])
def test_rerank_alpha_with_vector_mode_is_a_typed_error(
    hashed: embedmind.Store, alpha: float
) -> None:
    # It raised a raw IndexError: vector mode computes no lexical list to rerank.
    with pytest.raises(embedmind.InvalidInputError, match="hybrid and text") as caught:
        hashed.recall("database", mode="vector", rerank_alpha=alpha)
    assert caught.value.field == "rerank_alpha"


@pytest.mark.parametrize("alpha", [float("inf"), float("-inf"), float("nan")])
def test_rerank_alpha_must_be_finite(hashed: embedmind.Store, alpha: float) -> None:
    # -inf was accepted and every score came back NaN.
    with pytest.raises(embedmind.InvalidInputError) as caught:
        hashed.recall("database", rerank_alpha=alpha)
    assert caught.value.field == "rerank_alpha"


@pytest.mark.parametrize("mode", ["hybrid", "text"])
def test_rerank_alpha_applies_to_hybrid_and_text(hashed: embedmind.Store, mode: str) -> None:
    result = hashed.recall("database", mode=mode, rerank_alpha=0.5)
    assert result.hits and all(hit.score == hit.score for hit in result.hits)


WORDS = ["bob", "job", "carpenter", "dog", "bank", "work", "tall", "hiking", "tea", "rex", "now"]


@st.composite
def prefix_cases(draw: st.DrawFn) -> dict[str, Any]:
    texts = draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
            min_size=1,
            max_size=120,
        )
    )
    mode = draw(st.sampled_from(["hybrid", "text", "vector"]))
    alphas = [None] if mode == "vector" else [None, 0.0, 0.5, 1.5, 2.5]
    ks = sorted(draw(st.sets(st.integers(1, 3 * FUSION_DEPTH), min_size=2, max_size=4)))
    return {
        "texts": texts,
        "groups": [draw(st.sampled_from("ab")) for _ in texts],
        "query": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))),
        "mode": mode,
        "recency": draw(st.booleans()),
        "widen": draw(st.booleans()),
        "latest": draw(st.booleans()),
        "rerank_alpha": draw(st.sampled_from(alphas)),
        "where": draw(st.sampled_from([None, {"group": "a"}])),
        "ks": ks,
    }


@given(prefix_cases())
def test_a_smaller_k_is_a_prefix_of_a_larger_one(case: dict[str, Any]) -> None:
    # The first hit depended on k: each channel gave 2k candidates to fusion.
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=16)) as store:
        store.remember_many(
            [
                embedmind.Draft(text, metadata={"group": g}, created_at=t0 + dt.timedelta(i % 7))
                for i, (text, g) in enumerate(zip(case["texts"], case["groups"], strict=True))
            ]
        )
        admitted = sum(case["where"] is None or g == "a" for g in case["groups"])
        keys = ("mode", "recency", "widen", "latest", "rerank_alpha", "where")
        options = {key: case[key] for key in keys}
        answers = [store.recall(case["query"], k=k, **options) for k in case["ks"]]
    longest = answers[-1]
    for k, answer in zip(case["ks"], answers, strict=True):
        assert answer.ids == longest.ids[: len(answer.ids)]
        assert [h.score for h in answer] == [h.score for h in longest][: len(answer.ids)]
        if case["mode"] == "vector" or (case["mode"] == "hybrid" and case["rerank_alpha"] is None):
            # Every admitted memory has a vector: filtered recall never under-returns.
            assert len(answer.ids) == min(k, admitted)


BOB_FACTS = [
    "Bob works as a carpenter",
    "Bob's dog is called Rex",
    "Alice has a job at the bank",
    "what is it like to work nights? Bob asked",
    "Bob likes hiking",
    "Carol's job is teaching",
    "The job fair is on Monday",
    "Bob is tall",
]


@pytest.fixture(scope="module")
def default_model() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:") as store:
        yield store


def test_the_first_hit_does_not_depend_on_k(default_model: embedmind.Store) -> None:
    # Issue 15: k=1 gave 'Alice has a job at the bank', k=2 'Bob is tall'.
    default_model.remember_many([embedmind.Draft(f, namespace="bob") for f in BOB_FACTS])
    for k in range(1, len(BOB_FACTS) + 1):
        first = default_model.recall("what is bob's job?", k=k, namespace="bob")[0]
        assert first.content == "Bob works as a carpenter", k


def test_demo_answers_are_the_same_at_k_1_and_k_10(default_model: embedmind.Store) -> None:
    # make demo answered "Is Maya allergic to anything?" right at k=1 only.
    default_model.remember_many(demo.drafts())
    scope = "demo/maya-and-leo"
    for question in demo.QUESTIONS:
        ten = default_model.recall(question, k=10, namespace=scope).ids
        for k in (1, 2, 5):
            assert default_model.recall(question, k=k, namespace=scope).ids == ten[:k], question
    allergy = default_model.recall("Is Maya allergic to anything?", k=1, namespace=scope)
    assert "bee stings" in allergy[0].content


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_tied_scores_keep_the_prefix(mode: str) -> None:
    # Identical memories tie exactly in every channel; which of them a shallow
    # cut keeps must be the ones a deeper cut ranks first (ties go by key).
    texts = ["bob job tea"] * 70 + ["bob dog", "job fair", "tea time"] * 3
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=16)) as store:
        store.remember_many(texts)
        ks = [1, 2, 7, FUSION_DEPTH, FUSION_DEPTH + 1, 2 * FUSION_DEPTH + 5, 3 * FUSION_DEPTH]
        answers = [store.recall("bob job tea", k=k, mode=mode) for k in ks]
    longest = answers[-1].ids
    for k, answer in zip(ks, answers, strict=True):
        assert answer.ids == longest[:k], k


@pytest.mark.parametrize("k", [1, FUSION_DEPTH, 4 * FUSION_DEPTH])
def test_vector_mode_scores_are_exact_cosines(k: int) -> None:
    # The graph holds float16 copies: a shallow k reported their cosine
    # (0.3161545) where a deep k, scored exactly, reported 0.3162278.
    # Repeated words give unequal components, which float16 rounds unequally.
    texts = [
        " ".join([WORDS[i % len(WORDS)]] * (1 + i % 3) + [WORDS[(i * 7) % len(WORDS)]])
        for i in range(60)
    ]
    embedder = HashingEmbedder(dims=16)
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        store.remember_many(texts)
        answer = store.recall("bob job tea", k=k, mode="vector")
    query = np.asarray(embedder.embed_query("bob job tea"), np.float32)
    assert len(answer.ids) == min(k, len(texts))
    for hit in answer:
        vector = np.asarray(embedder.embed_documents([hit.content])[0], np.float32)
        exact = float(vector @ query / np.linalg.norm(vector) / np.linalg.norm(query))
        assert hit.channels["vector"].raw == pytest.approx(exact, abs=1e-6), hit.content


@pytest.mark.parametrize("k", [1, 5])
def test_vector_mode_reads_about_the_rows_it_reports(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each float32 row read back for an exact score is a random read of the
    # largest table (26 ms a query at 1M when it read all FUSION_DEPTH). Each
    # memory checked against the filter is a random read of the memories
    # table: vector mode settled FUSION_DEPTH hits (25 rows checked a query)
    # and reported k of them.
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((400, 32)).astype(np.float32)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=32)) as store:
        store.remember_many([embedmind.Draft(f"m{i}", vector=v) for i, v in enumerate(vectors)])
        deep = store.recall("", vector=vectors[3], k=FUSION_DEPTH, mode="vector")
        read = call_sizes(monkeypatch, vector_rows, "load")
        checked = call_sizes(monkeypatch, records, "keys_passing")
        answer = store.recall("", vector=vectors[3], k=k, mode="vector")
    assert answer.ids == deep.ids[:k] and answer[0].content == "m3"
    assert [h.score for h in answer] == [h.score for h in deep][:k]
    # About k of each (and those float16's error could reorder after the k-th),
    # never the fusion depth.
    assert 0 < sum(read) <= k + 3 < FUSION_DEPTH
    assert 0 < sum(checked) <= k + 8 < FUSION_DEPTH


def test_a_vector_mode_score_does_not_depend_on_k() -> None:
    # Scored in a batch of about k rows, a memory's float32 cosine differed
    # in its last bit with the batch's size (a BLAS product sums each row in
    # an order that depends on it).
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    scores: dict[str, set[float]] = {}
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=384)) as store:
        store.remember_many([embedmind.Draft(f"m{i}", vector=v) for i, v in enumerate(vectors)])
        for k in range(1, 41):
            for hit in store.recall("", vector=query, k=k, mode="vector"):
                scores.setdefault(hit.id, set()).add(hit.score)
    assert len(scores) == 40
    assert {key: s for key, s in scores.items() if len(s) > 1} == {}
