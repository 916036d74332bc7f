"""Recall quality: rerank_alpha validation, k-independent fusion, demo stability."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder


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
