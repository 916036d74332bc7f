"""``pair_order`` against ``numpy.lexsort``, the order it replaces.

Distinct pairs of small values (packed in one int64 and sorted once: the
minor values fill every bit below the major ones) and of values up to 2**62
(too wide to pack: lexsort itself).
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from embedmind.backend.sqlite.pair_order import pair_order


def _check(pairs: list[tuple[int, int]], rng: random.Random) -> None:
    rng.shuffle(pairs)
    major = np.asarray([a for a, _ in pairs], dtype=np.int64)
    minor = np.asarray([b for _, b in pairs], dtype=np.int64)
    assert pair_order(major, minor).tolist() == np.lexsort((minor, major)).tolist()


@given(
    st.sets(st.tuples(st.integers(0, 9), st.integers(0, 40)), max_size=60).map(list), st.randoms()
)
def test_packed_pairs_sort_as_lexsort_sorts_them(
    pairs: list[tuple[int, int]], rng: random.Random
) -> None:
    _check(pairs, rng)


wide = st.integers(0, 2**30) | st.integers(0, 2**62)


@given(st.sets(st.tuples(wide, wide), max_size=60).map(list), st.randoms())
def test_wide_pairs_sort_as_lexsort_sorts_them(
    pairs: list[tuple[int, int]], rng: random.Random
) -> None:
    _check(pairs, rng)
