"""Vector and hybrid recall: the seed's golden cases, filtered search, identity, chunks."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

import embedmind
from embedmind import Draft
from embedmind.backend.sqlite import hnsw
from embedmind.embedders.hashing import HashingEmbedder


class WordEmbedder:
    """The engine seed's toy model: one axis per concept; synonyms share an axis.

    A plain class with LangChain-style methods returning lists, so it also
    exercises the wrapping of foreign embedders.
    """

    def __init__(self, groups: Sequence[Sequence[str]]) -> None:
        self.axes = {word: axis for axis, group in enumerate(groups) for word in group}
        self.dims = 16

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in re.findall(r"\w+", text.lower()):
            if word in self.axes:
                vector[self.axes[word]] += 1.0
        vector[15] += 0.01  # never a zero vector
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


GROUPS = [["carro", "automovel"], ["rust", "ownership"], ["postgres", "database"], ["xyzzy"]]


@pytest.fixture
def golden() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=WordEmbedder(GROUPS)) as store:
        yield store


def test_rare_exact_token_is_found_through_the_lexical_half(golden: embedmind.Store) -> None:
    target = golden.remember("the deploy key is Q7ZK-991 for staging", id="key")
    golden.remember_many([f"rust ownership note {i}" for i in range(20)])
    result = golden.recall("Q7ZK-991", k=3)
    assert result.ids[0] == target.id
    assert "text" in result[0].channels
    assert "vector" in result.channels


def test_synonym_is_found_through_the_vector_half(golden: embedmind.Store) -> None:
    golden.remember("comprei um automovel novo", id="car")
    golden.remember_many([f"postgres tuning tip {i}" for i in range(10)])
    result = golden.recall("carro", k=3)
    assert result.ids[0] == "car"
    assert "text" not in result[0].channels  # BM25 never saw the word
    assert result[0].channels["vector"].rank == 1


def test_a_memory_matching_both_halves_ranks_first(golden: embedmind.Store) -> None:
    golden.remember("rust ownership rules", id="both")
    golden.remember("ownership of the house", id="text-ish")
    golden.remember("borrow checker and ownership in rust", id="vector-ish")
    golden.remember_many([f"database note {i}" for i in range(10)])
    result = golden.recall("rust ownership", k=3)
    assert result.ids[0] == "both"
    assert set(result[0].channels) == {"text", "vector"}


def test_fusion_is_a_union(golden: embedmind.Store) -> None:
    golden.remember("xyzzy", id="lexical-only")  # shares the query word
    golden.remember("automovel", id="vector-only")  # shares only the concept
    result = golden.recall("xyzzy carro", k=5)
    assert {"lexical-only", "vector-only"} <= set(result.ids)
    assert result[0].score == pytest.approx(1 / 61 + 1 / 61) or result[0].score > 1 / 61


def test_vector_mode_keeps_cosine_order_and_raw_cosines(golden: embedmind.Store) -> None:
    golden.remember("postgres database", id="db")
    result = golden.recall("database", mode="vector", k=10)
    assert result.channels == ("vector",)
    assert all(0.0 < h.score < 1.0 for h in result)
    cosines = [h.channels["vector"].raw for h in result]  # the cosines themselves
    assert 0.0 < cosines[0] <= 1.0 and cosines == sorted(cosines, reverse=True)
    assert [h.score for h in result] == sorted((h.score for h in result), reverse=True)


def test_recency_breaks_ties_but_adds_nothing(golden: embedmind.Store) -> None:
    import datetime as dt

    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    golden.remember("postgres database", id="old", created_at=t0)
    golden.remember("postgres database", id="new", created_at=t0 + dt.timedelta(days=9))
    golden.remember("unrelated rust", id="noise", created_at=t0 + dt.timedelta(days=99))
    plain = golden.recall("postgres", k=3)
    recent = golden.recall("postgres", k=3, recency=True)
    assert set(recent.ids) == set(plain.ids)
    assert recent.ids[:2] == ["new", "old"]  # the tie is broken towards the newer
    assert recent.ids[2] == "noise"  # one list of three cannot lift a weak match


def test_rerank_modes(golden: embedmind.Store) -> None:
    # "rust" shares ownership's axis: the query leans towards vector-best,
    # while BM25 prefers lexical-best (three "database" to one).
    golden.remember("database database database", id="lexical-best")
    golden.remember("database ownership ownership", id="vector-best")
    assert golden.recall("database rust", k=2, mode="text").ids[0] == "lexical-best"
    for alpha in (2.0, 1.5, 0.5, 0.0):
        result = golden.recall("database rust", k=2, rerank_alpha=alpha)
        assert set(result.ids) == {"lexical-best", "vector-best"}
    assert golden.recall("database rust", k=2, rerank_alpha=2.0).ids[0] == "vector-best"
    assert golden.recall("database rust", k=2, rerank_alpha=0.0).ids[0] == "vector-best"
    assert golden.recall("database rust", k=2, rerank_alpha=0.99).ids[0] == "lexical-best"


def test_caller_vectors_are_validated(golden: embedmind.Store) -> None:
    for bad in ([0.0] * 16, [1.0] * 3, [float("nan")] + [1.0] * 15, "abc"):
        with pytest.raises(embedmind.InvalidInputError):
            golden.remember("x", vector=bad)  # type: ignore[arg-type]
    assert golden.stats().live == 0
    m = golden.remember("no words the model knows", vector=[0.0] * 14 + [3.0, 4.0])
    assert golden.recall("anything", vector=[0.0] * 14 + [3.0, 4.0], mode="vector").ids == [m.id]


def test_embedder_identity_is_recorded_and_enforced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "id.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        store.remember("hello")
        assert store.stats().embedder == "hashing-64"
    with pytest.raises(embedmind.EmbedmindError) as info:
        embedmind.Store.open(path, embedder=HashingEmbedder(32))
    message = str(info.value)
    assert "hashing-64" in message and "hashing-32" in message and "reembed" in message
    with embedmind.Store.open(path, embedder=None) as text_only:  # still readable
        assert text_only.recall("hello").ids


def test_long_content_is_chunked_and_recalled_once() -> None:
    embedder = HashingEmbedder(64, max_tokens=20)
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        words = " ".join(f"word{i}" for i in range(100))
        memory = store.remember(words + " zebra giraffe")
        assert store.stats().vectors > 1
        result = store.recall("zebra giraffe", k=5, mode="vector")
        assert result.ids.count(memory.id) == 1


def test_near_duplicates_are_reported_and_the_write_happens() -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        first = store.remember("alice likes green tea in the morning", namespace="n")
        store.remember("alice likes green tea in the morning", namespace="other")
        outcome = store.remember_detailed("alice likes green tea in the morning!", namespace="n")
        assert [s.id for s in outcome.similar] == [first.id]
        assert outcome.similar[0].score >= 0.8
        assert store.get(outcome.memory.id) is not None
        unrelated = store.remember_detailed("quantum chromodynamics lecture notes", namespace="n")
        assert unrelated.similar == ()


CENTRES = np.random.default_rng(2).normal(size=(256, 64))


def _clustered(n: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    # Noisy mixtures of shared cluster centres, like real embeddings (pure
    # Gaussian noise is pathological for every HNSW); queries come from the
    # same distribution as the memories.
    mix = CENTRES[rng.integers(0, len(CENTRES), size=n), :dims] + 0.45 * rng.normal(size=(n, dims))
    return (mix / np.linalg.norm(mix, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def filtered_store() -> Iterator[tuple[embedmind.Store, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    n, dims = 25_000, 64  # above EXACT_BELOW: the HNSW widening path runs
    vectors = _clustered(n, dims, rng)
    bucket = rng.random(n)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims)) as store:
        # A graph built on several threads differs from run to run (their interleaving),
        # and so did its recall: 195-200 of 200 at 50 % admitted under a loaded `make
        # test`. Built on one thread it is the same graph every run; what the tests
        # below check is the filtered search over it.
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(hnsw, "ADD_THREADS", 1)
            store.remember_many(
                [
                    Draft(
                        f"m{i}", id=str(i), metadata={"u": float(bucket[i])},
                        vector=vectors[i].tolist(),
                    )
                    for i in range(n)
                ],
                batch_size=5_000,
            )  # fmt: skip
            store.recall("", k=1, mode="vector", vector=vectors[0].tolist())  # the graph holds all
        yield store, vectors, bucket


@pytest.mark.parametrize("selectivity", [0.0001, 0.001, 0.01, 0.1, 0.5, 1.0])
def test_filtered_vector_recall_never_under_returns(
    filtered_store: tuple[embedmind.Store, np.ndarray, np.ndarray], selectivity: float
) -> None:
    store, vectors, bucket = filtered_store
    rng = np.random.default_rng(int(selectivity * 1e6))
    admitted = np.flatnonzero(bucket < selectivity)
    k = 10
    found, wanted = [], []
    for query in _clustered(20, vectors.shape[1], rng):
        exact = admitted[np.argsort(-(vectors[admitted] @ query), kind="stable")[:k]]
        got = store.recall(
            "", k=k, mode="vector", vector=query.tolist(), where={"u": {"$lt": selectivity}}
        )
        assert len(got) == min(k, len(admitted))
        found.append(len({int(i) for i in got.ids} & set(exact.tolist())))
        wanted.append(min(k, len(admitted)))
    # Counted in whole hits (the mean of [0.9, 1.0 x 18, 0.9] is 0.98999... in
    # floats, though it is 198 of 200). The one-thread graph gives 200 of 200 at
    # every selectivity here.
    assert 100 * sum(found) >= 98 * sum(wanted), (selectivity, found)


def test_degraded_notes_say_what_ran_when_no_vectors_exist() -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(16)) as store:
        vector = store.recall("anything", mode="vector")
        hybrid = store.recall("anything", mode="hybrid")
    assert vector.ids == [] and vector.degraded == ("no vectors stored yet: nothing to search",)
    assert hybrid.degraded == ("no vectors stored yet: used text only",)
