"""Given vectors validated as one matrix equal the one-at-a-time check: same rows, same errors."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind import batch_drafts
from embedmind.batch_drafts import unit_rows
from embedmind.embedders.adapt import normalized, normalized_one
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.errors import InvalidInputError
from embedmind.vectors.embedding import embed_contents

DIMS = 8
GOOD = [0.25, -1.0, 3.0, 0.0, 1e-3, 7.0, -2.5, 0.5]
BAD: list[object] = [
    [0.0] * DIMS,  # zero
    [1.0] * 3,  # wrong length
    [float("nan")] + [1.0] * (DIMS - 1),
    [float("inf")] + [1.0] * (DIMS - 1),
    "abcdefgh",
    [True] * DIMS,
    [[1.0] * DIMS, [2.0] * DIMS],  # two vectors for one draft
    [1e308] * DIMS,  # finite, but its squares overflow: rescaled, not refused
    [1e-300] * DIMS,  # its squares underflow: rescaled
    np.ones((1, DIMS), np.float32),  # one vector as a (1, dims) row: fine
]

floats = st.floats(-1e6, 1e6, allow_nan=False, width=32)
vectors = st.lists(floats, min_size=DIMS, max_size=DIMS)


def _one_by_one(batch: list[object]) -> list[np.ndarray] | tuple[type, str, str]:
    try:
        return [normalized_one(v, DIMS, f"drafts[{i}].vector") for i, v in enumerate(batch)]
    except InvalidInputError as e:
        return (type(e), e.field, str(e))


def _batched(batch: list[object]) -> list[np.ndarray] | tuple[type, str, str]:
    try:
        return unit_rows(batch, DIMS)
    except InvalidInputError as e:
        return (type(e), e.field, str(e))


def _same(a: object, b: object) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    assert isinstance(a, list) and isinstance(b, list)
    return len(a) == len(b) and all(x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True))


@given(st.lists(vectors, min_size=1, max_size=40))
def test_matrix_rows_are_the_bits_of_row_by_row(batch: list[list[float]]) -> None:
    assert _same(_batched(list(batch)), _one_by_one(list(batch)))


@given(st.lists(st.sampled_from([GOOD, *BAD]), min_size=1, max_size=12))
def test_bad_vectors_raise_what_one_by_one_raises(batch: list[object]) -> None:
    assert _same(_batched(batch), _one_by_one(batch))


@given(st.lists(st.sampled_from([GOOD, *BAD]), min_size=1, max_size=12), st.integers(1, 4))
def test_slices_of_the_batch_give_what_one_by_one_gives(batch: list[object], size: int) -> None:
    # A bulk load validates its vectors a slice at a time; a bad row in a
    # later slice must still be the first error, with its draft's own index.
    with mock.patch.object(batch_drafts, "SLICE", size):
        assert _same(_batched(batch), _one_by_one(batch))
        bad = [i for i, v in enumerate(batch) if isinstance(_one_by_one([v]), tuple)]
        if bad:  # the draft indices given are the ones named
            with pytest.raises(InvalidInputError) as caught:
                unit_rows(batch, DIMS, [10 * i for i in range(len(batch))])
            assert caught.value.field == f"drafts[{10 * bad[0]}].vector"


@given(st.lists(vectors.filter(any), min_size=1, max_size=20))
def test_given_rows_stacked_equal_row_by_row(batch: list[list[float]]) -> None:
    rows = unit_rows(batch, DIMS)
    embedder = HashingEmbedder(DIMS)
    stacked = embed_contents(embedder, ["x"] * len(rows), list(rows))
    for row, embedded in zip(rows, stacked, strict=True):
        assert embedded.vectors.tobytes() == normalized(row, DIMS).tobytes()
        assert embedded.vectors.shape == (1, DIMS)


def test_remember_many_reports_the_first_bad_item_in_order() -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        # Draft 1's vector is bad and draft 2's content is: draft 1 comes first.
        drafts = [
            {"content": "a", "vector": GOOD},
            {"content": "b", "vector": [1.0] * 3},
            {"content": "", "vector": GOOD},
        ]
        with pytest.raises(InvalidInputError) as caught:
            store.remember_many(drafts)
        assert caught.value.field == "drafts[1].vector"
        # Now the bad content comes first: its error, not the later vector's.
        drafts = [drafts[0], drafts[2], drafts[1]]
        with pytest.raises(InvalidInputError) as caught:
            store.remember_many(drafts)
        assert caught.value.field == "content"
        # Vectors of drafts without one in between keep their own index.
        drafts = [{"content": "a"}, {"content": "b"}, {"content": "c", "vector": [0.0] * DIMS}]
        with pytest.raises(InvalidInputError) as caught:
            store.remember_many(drafts)
        assert caught.value.field == "drafts[2].vector"
        assert "zero vector" in str(caught.value)
        assert store.stats().live == 0


def test_a_vector_for_a_text_only_store_is_refused() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        with pytest.raises(InvalidInputError) as caught:
            store.remember_many(["a", {"content": "b", "vector": GOOD}])
        assert caught.value.field == "drafts[1].vector"
        assert store.stats().live == 0
