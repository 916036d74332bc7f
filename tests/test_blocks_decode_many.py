"""``blocks.decode_many`` (a term's whole list at once) against ``blocks.decode`` block by block.

Oracle: :func:`embedmind.backend.sqlite.blocks.decode` of each block,
concatenated. Hypothesis draws blocks of every section width (1-8 byte
gaps, tfs and lengths); damaged blocks among good ones are refused as
``decode`` refuses them (``test_compact_postings.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embedmind.backend.sqlite import blocks
from embedmind.backend.sqlite.blocks import Postings
from embedmind.errors import StorageError


@st.composite
def block_lists(draw: st.DrawFn) -> list[Postings]:
    out, key = [], draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 30))
        steps = draw(st.lists(st.integers(1, 3) | st.integers(1, 2**33), min_size=n, max_size=n))
        keys = np.cumsum([key, *steps[1:]]).astype(np.int64)
        key = int(keys[-1]) + draw(st.integers(1, 1000))
        tfs = draw(st.lists(st.integers(1, 3) | st.integers(1, 65_535), min_size=n, max_size=n))
        lens = draw(
            st.lists(st.integers(1, 200) | st.integers(1, 2**32 - 1), min_size=n, max_size=n)
        )
        out.append(blocks.make(keys.tolist(), tfs, lens))
    return out


@given(block_lists())
def test_many_blocks_decode_as_each_block_alone(parts: list[Postings]) -> None:
    data = [blocks.encode(p) for p in parts]
    got = blocks.decode_many(data, [len(p) for p in parts])
    want = blocks.concat([blocks.decode(d, len(p)) for d, p in zip(data, parts, strict=True)])
    assert got.keys.tolist() == want.keys.tolist()
    assert got.tfs.tolist() == want.tfs.tolist()
    assert got.lengths.tolist() == want.lengths.tolist()
    assert (got.keys.dtype, got.tfs.dtype, got.lengths.dtype) == (
        want.keys.dtype, want.tfs.dtype, want.lengths.dtype,
    )  # fmt: skip


@given(block_lists())
def test_the_last_key_of_each_block_is_its_decoded_last_key(parts: list[Postings]) -> None:
    data = [blocks.encode(p) for p in parts][::-1]  # any order: each block is read alone
    counts = [len(p) for p in parts][::-1]
    want = [int(blocks.decode(d, n).keys[-1]) for d, n in zip(data, counts, strict=True)]
    got = blocks.last_keys(data, counts)
    assert got.tolist() == want
    assert got.dtype == np.int64


@pytest.mark.parametrize(
    "damaged",
    [
        # A gap that takes the key past 2**63 - 1.
        bytes([blocks.header(8, 1, 1)])
        + blocks.leb128(5)
        + (2**63).to_bytes(8, "little")
        + b"\1\1\1\1",
        # Gaps that wrap around 2**64 back below the first key.
        bytes([blocks.header(8, 1, 1)])
        + blocks.leb128(5)
        + (2**64 - 1).to_bytes(8, "little")
        + b"\1\1\1\1",
        # One byte short of two postings.
        bytes([blocks.header(1, 1, 1)]) + blocks.leb128(5) + b"\1\1\1\1",
    ],
)
def test_a_damaged_block_is_refused_as_decode_refuses_it(damaged: bytes) -> None:
    good = blocks.encode(blocks.make([1, 2], [1, 1], [3, 3]))
    with pytest.raises(StorageError):
        blocks.decode(damaged, 2)
    with pytest.raises(StorageError):
        blocks.last_keys([good, damaged], [2, 2])
