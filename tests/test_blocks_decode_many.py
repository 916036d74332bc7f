"""``blocks.decode_many`` (a term's whole list at once) against ``blocks.decode`` block by block.

Oracle: :func:`embedmind.backend.sqlite.blocks.decode` of each block,
concatenated. Hypothesis draws blocks of every section width (1-8 byte
gaps, tfs and lengths); damaged blocks among good ones are refused as
``decode`` refuses them (``test_compact_postings.py``).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from embedmind.backend.sqlite import blocks
from embedmind.backend.sqlite.blocks import Postings


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
