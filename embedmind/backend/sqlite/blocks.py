"""Packed posting blocks: the on-disk format of the BM25 postings.

A block holds up to :data:`BLOCK_SIZE` postings of one term, sorted by
document key. Since schema 7 (``migrations.m0007_compact_postings``) it is
stored compactly, the way Lucene and tantivy store theirs — small integers in
as few bytes as they need — while every value stays exact (scores do not
move)::

    header   1 byte      bits 0-1, 2-3, 4-5: byte width (1, 2, 4 or 8) of the
                         gaps, tfs and lengths below; bits 6-7: 0
    first    LEB128      the first document key
    gaps     width[n-1]  key[i] - key[i-1] (keys ascend)
    tfs      width[n]    term frequency in the document (saturating at 65535)
    lengths  width[n]    document length in terms

Each section takes the smallest width that holds its largest value, so a
block of a short-document corpus costs about three bytes a posting (it cost
14 in the fixed int64/uint16/uint32 layout of schemas 1-6, which
:func:`decode_fixed` still reads for the migration). A block decodes with
three ``numpy.frombuffer`` calls and a cumulative sum, and scores without a
document-length lookup. Each block row also carries its largest tf and
smallest length, which bound the block's best score (block-max).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from embedmind.errors import StorageError

BLOCK_SIZE = 512
_KEY = np.dtype("<i8")
_TF = np.dtype("<u2")
_LEN = np.dtype("<u4")
_ROW_BYTES = _KEY.itemsize + _TF.itemsize + _LEN.itemsize
_WIDTHS = (1, 2, 4, 8)
_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
}
_KEY_MAX = 2**63 - 1


@dataclass(frozen=True)
class Postings:
    """Postings of one term (or one block), sorted by key."""

    keys: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.uint16]
    lengths: npt.NDArray[np.uint32]

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def slice(self, start: int, stop: int) -> Postings:
        """Return postings ``[start, stop)``."""
        return Postings(self.keys[start:stop], self.tfs[start:stop], self.lengths[start:stop])

    def without(self, key: int) -> Postings:
        """Return these postings without ``key`` (unchanged when absent)."""
        keep = self.keys != key
        return Postings(self.keys[keep], self.tfs[keep], self.lengths[keep])

    def merged(self, other: Postings) -> Postings:
        """Return the union of two disjoint posting sets, sorted by key."""
        keys = np.concatenate([self.keys, other.keys])
        order = np.argsort(keys, kind="stable")
        return Postings(
            keys[order],
            np.concatenate([self.tfs, other.tfs])[order],
            np.concatenate([self.lengths, other.lengths])[order],
        )


def make(keys: list[int], tfs: list[int], lengths: list[int]) -> Postings:
    """Build postings from Python lists (tf and length saturate at their type's max)."""
    return Postings(
        np.asarray(keys, dtype=np.int64),
        np.minimum(np.asarray(tfs, dtype=np.int64), 65_535).astype(np.uint16),
        np.minimum(np.asarray(lengths, dtype=np.int64), 2**32 - 1).astype(np.uint32),
    )


def width(largest: int) -> int:
    """The fewest bytes of :data:`_WIDTHS` that hold ``largest`` (non-negative)."""
    for w in _WIDTHS:
        if largest < 1 << (8 * w):
            return w
    raise ValueError(f"{largest} does not fit in 8 bytes")  # pragma: no cover - int64 input


def leb128(value: int) -> bytes:
    """The LEB128 bytes of one non-negative integer."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def header(gap_width: int, tf_width: int, length_width: int) -> int:
    """The header byte naming a block's three section widths."""
    return (
        _WIDTHS.index(gap_width) | _WIDTHS.index(tf_width) << 2 | _WIDTHS.index(length_width) << 4
    )


def section(values: npt.NDArray[np.int64], w: int) -> bytes:
    """``values`` as little-endian unsigned integers of ``w`` bytes each."""
    data: bytes = values.astype(_DTYPES[w]).tobytes()
    return data


def encode(postings: Postings) -> bytes:
    """Serialise postings to the block format (at least one posting)."""
    keys = postings.keys.astype(np.int64)
    gaps = np.diff(keys)
    tfs = postings.tfs.astype(np.int64)
    lengths = postings.lengths.astype(np.int64)
    gw = width(int(gaps.max())) if len(gaps) else 1
    tw, lw = width(int(tfs.max())), width(int(lengths.max()))
    return (
        bytes([header(gw, tw, lw)])
        + leb128(int(keys[0]))
        + section(gaps, gw)
        + section(tfs, tw)
        + section(lengths, lw)
    )


def encode_many(
    keys: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
) -> list[bytes]:
    """:func:`encode` of many blocks at once: block ``i`` is postings ``[starts[i], stops[i])``.

    The same bytes as encoding each block alone (``tests/test_blocks.py``),
    with the per-block work left to slicing: section widths come from
    ``reduceat`` and every value is laid out with one fancy-indexing pass.
    """
    counts = stops - starts
    n = len(keys)
    block_of = np.repeat(np.arange(len(starts)), counts)
    offset = np.arange(n, dtype=np.int64) - starts[block_of]
    gaps = np.zeros(n, dtype=np.int64)
    gaps[1:] = np.diff(keys)
    gaps[starts] = 0  # a block's first key is stored apart, as LEB128
    gap_w = _widths(np.maximum.reduceat(gaps, starts))
    tf_w = _widths(np.maximum.reduceat(tfs, starts))
    len_w = _widths(np.maximum.reduceat(lengths, starts))
    sizes = gap_w * (counts - 1) + (tf_w + len_w) * counts
    base = np.cumsum(sizes) - sizes  # where each block's body starts in ``body``
    # Byte position of each value: gaps (all but the first), then tfs, then lengths.
    b = block_of
    gap_at = base[b] + gap_w[b] * (offset - 1)
    tf_at = base[b] + gap_w[b] * (counts[b] - 1) + tf_w[b] * offset
    len_at = base[b] + gap_w[b] * (counts[b] - 1) + tf_w[b] * counts[b] + len_w[b] * offset
    body = np.zeros(int(sizes.sum()), dtype=np.uint8)
    has_gap = offset > 0
    _scatter(body, gaps[has_gap], gap_at[has_gap], gap_w[b][has_gap])
    _scatter(body, tfs, tf_at, tf_w[b])
    _scatter(body, lengths, len_at, len_w[b])
    heads = (
        np.searchsorted(_WIDTHS, gap_w)
        | np.searchsorted(_WIDTHS, tf_w) << 2
        | np.searchsorted(_WIDTHS, len_w) << 4
    ).tolist()
    firsts = keys[starts].tolist()
    ends = (base + sizes).tolist()
    raw_body = body.tobytes()
    return [
        bytes([h]) + leb128(f) + raw_body[a:e]
        for h, f, a, e in zip(heads, firsts, base.tolist(), ends, strict=True)
    ]


def appended_many(
    blobs: Sequence[bytes],
    counts: Sequence[int],
    heads: Sequence[Head],
    last_keys: npt.NDArray[np.int64],
    keys: npt.NDArray[np.int64],
    tfs: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    runs: npt.NDArray[np.int64],
) -> list[bytes | None]:
    """:func:`encode` of each block of ``blobs`` with new postings after its own, from its bytes.

    Block ``i`` (``counts[i]`` postings, :func:`heads_of` ``heads[i]``, the
    last keyed ``last_keys[i]``) gets
    the next ``runs[i]`` (at least one) of ``keys``, ``tfs`` and ``lengths``,
    all keyed above its own. Where every new gap, tf and length fits the
    block's section widths, the whole block keeps those widths, so its
    encoding is the old sections, each followed by the new values: the old
    postings are neither decoded nor encoded again. ``None`` for a block
    where a new value needs a wider section (encode the whole block then).
    """
    gap_w, tf_w, len_w = (np.asarray([h[i] for h in heads], dtype=np.int64) for i in (2, 3, 4))
    starts = np.cumsum(runs) - runs
    b = np.repeat(np.arange(len(runs)), runs)  # each new posting's block
    offset = np.arange(len(keys), dtype=np.int64) - starts[b]
    gaps = np.empty(len(keys), dtype=np.int64)
    gaps[1:] = np.diff(keys)
    gaps[starts] = keys[starts] - last_keys
    fits = (
        (_widths(np.maximum.reduceat(gaps, starts)) <= gap_w)
        & (_widths(np.maximum.reduceat(tfs, starts)) <= tf_w)
        & (_widths(np.maximum.reduceat(lengths, starts)) <= len_w)
    )
    sections = []
    for values, w in ((gaps, gap_w), (tfs, tf_w), (lengths, len_w)):
        sizes = runs * w
        base = np.cumsum(sizes) - sizes
        body = np.zeros(int(sizes.sum()), dtype=np.uint8)
        _scatter(body, values, base[b] + w[b] * offset, w[b])  # a misfit is cut, then dropped
        sections.append((body.tobytes(), base.tolist(), (base + sizes).tolist()))
    (g, g_at, g_end), (t, t_at, t_end), (n, n_at, n_end) = sections
    out: list[bytes | None] = []
    fit = fits.tolist()
    for i, (data, count, (_, at, gw, tw, _lw)) in enumerate(zip(blobs, counts, heads, strict=True)):
        if not fit[i]:
            out.append(None)
            continue
        tf_at = at + gw * (count - 1)
        len_at = tf_at + tw * count
        new_gaps, new_tfs = g[g_at[i] : g_end[i]], t[t_at[i] : t_end[i]]
        new_lengths = n[n_at[i] : n_end[i]]
        out.append(
            b"".join(
                (data[:tf_at], new_gaps, data[tf_at:len_at], new_tfs, data[len_at:], new_lengths)
            )
        )
    return out


def _scatter(
    body: npt.NDArray[np.uint8],
    values: npt.NDArray[np.int64],
    at: npt.NDArray[np.int64],
    w: npt.NDArray[np.int64],
) -> None:
    """Write each of ``values`` little-endian in ``w[i]`` bytes at ``body[at[i]:]``."""
    raw = values.astype("<u8").view(np.uint8).reshape(-1, 8)
    for byte in range(8):
        wide = w > byte
        if not wide.any():
            break
        body[at[wide] + byte] = raw[wide, byte]


def _widths(largest: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """:func:`width` of each value."""
    w = np.ones(len(largest), dtype=np.int64)
    w[largest >= 1 << 8] = 2
    w[largest >= 1 << 16] = 4
    w[largest >= 1 << 32] = 8
    return w


def decode(data: bytes, count: int) -> Postings:
    """Parse a block of ``count`` postings.

    Raises:
        StorageError: When the bytes are not a block of ``count`` postings (a
            damaged row, or bytes the engine did not write).
    """
    # A row the engine did not write (damage, or planted bytes) would otherwise
    # decode into garbage keys, or fail with numpy's ValueError or a huge allocation.
    first, at, gw, tw, lw = _head(data, count)
    gaps = np.frombuffer(data, dtype=_DTYPES[gw], count=count - 1, offset=at)
    at += gw * (count - 1)
    tfs = np.frombuffer(data, dtype=_DTYPES[tw], count=count, offset=at)
    lengths = np.frombuffer(data, dtype=_DTYPES[lw], count=count, offset=at + tw * count)
    keys = np.empty(count, dtype=np.uint64)
    keys[0] = first
    np.cumsum(gaps, dtype=np.uint64, out=keys[1:])
    keys[1:] += np.uint64(first)
    if first > _KEY_MAX or (count > 1 and (int(keys[-1]) > _KEY_MAX or int(keys[-1]) < first)):
        raise StorageError("a posting block holds a key out of range")
    # Only the widths the engine never writes can hold an out-of-range count.
    if (tw > 2 and int(tfs.max()) > 65_535) or (lw > 4 and int(lengths.max()) > 2**32 - 1):
        raise StorageError("a posting block holds a count out of range")
    return Postings(keys.astype(np.int64), tfs.astype(np.uint16), lengths.astype(np.uint32))


def decode_many(blobs: Sequence[bytes], counts: Sequence[int]) -> Postings:
    """:func:`decode` of many blocks at once, concatenated in the order given.

    A term's list at a million documents is hundreds of blocks; decoding
    them one by one costs a dozen numpy calls each. Here only the header
    and the LEB128 first key are read per block (in Python); each section
    (gaps, tfs, lengths) of every block is then cut out as bytes, joined,
    and read with one ``numpy.frombuffer`` per byte width. The same postings
    and the same checks as :func:`decode` (``tests/test_blocks_decode_many.py``).

    Raises:
        StorageError: When a block is not what :func:`decode` accepts.
    """
    if not blobs:
        return make([], [], [])
    heads = heads_of(blobs, counts)
    sizes = np.asarray(counts, dtype=np.int64)
    firsts = np.asarray([head[0] for head in heads], dtype=np.uint64)
    gap_runs: list[tuple[int, bytes]] = []
    tf_runs: list[tuple[int, bytes]] = []
    length_runs: list[tuple[int, bytes]] = []
    for data, count, (_, at, gw, tw, lw) in zip(blobs, counts, heads, strict=True):
        tf_at = at + gw * (count - 1)
        length_at = tf_at + tw * count
        gap_runs.append((gw, data[at:tf_at]))
        tf_runs.append((tw, data[tf_at:length_at]))
        length_runs.append((lw, data[length_at:]))
    starts = np.cumsum(sizes) - sizes
    gaps = np.zeros(int(sizes.sum()), dtype=np.uint64)
    inner = np.ones(len(gaps), dtype=bool)
    inner[starts] = False  # a block's first key is stored apart
    gaps[inner] = _read(gap_runs)
    tfs, lengths = _read(tf_runs), _read(length_runs)
    sums = np.cumsum(gaps, dtype=np.uint64)
    b = np.repeat(np.arange(len(blobs)), sizes)  # each posting's block
    keys = firsts[b] + (sums - sums[starts][b])
    last = keys[starts + sizes - 1]
    if (firsts > _KEY_MAX).any() or (last > _KEY_MAX).any() or (last < firsts).any():
        raise StorageError("a posting block holds a key out of range")
    if (tfs > 65_535).any() or (lengths > 2**32 - 1).any():
        raise StorageError("a posting block holds a count out of range")
    return Postings(keys.astype(np.int64), tfs.astype(np.uint16), lengths.astype(np.uint32))


def last_keys(
    blobs: Sequence[bytes], counts: Sequence[int], heads: Sequence[Head] | None = None
) -> npt.NDArray[np.int64]:
    """The largest key of each block, without decoding its postings.

    A bulk write appends to each term's last block and needs only that
    block's last key (``first`` plus its gaps): its tfs and lengths are not
    read, and its gaps are summed, not accumulated. The same checks of the
    header, the size and the key range as :func:`decode`. ``heads``: the
    blocks' :func:`heads_of`, when the caller has them already.

    Raises:
        StorageError: When a block is not what :func:`decode` accepts.
    """
    if not blobs:
        return np.empty(0, dtype=np.int64)
    if heads is None:
        heads = heads_of(blobs, counts)
    firsts = np.asarray([head[0] for head in heads], dtype=np.uint64)
    runs = [
        (gw, data[at : at + gw * (count - 1)])
        for data, count, (_, at, gw, _, _) in zip(blobs, counts, heads, strict=True)
    ]
    gaps = _read(runs)
    per_block = np.asarray(counts, dtype=np.int64) - 1
    ends = np.cumsum(per_block)
    sums = np.zeros(len(gaps) + 1, dtype=np.uint64)
    np.cumsum(gaps, dtype=np.uint64, out=sums[1:])
    # Modulo 2**64, as decode's cumulative sum: the checks below are the same.
    last = firsts + (sums[ends] - sums[ends - per_block])
    if (firsts > _KEY_MAX).any() or (last > _KEY_MAX).any() or (last < firsts).any():
        raise StorageError("a posting block holds a key out of range")
    keys: npt.NDArray[np.int64] = last.astype(np.int64)
    return keys


def _read(runs: list[tuple[int, bytes]]) -> npt.NDArray[np.uint64]:
    """The values of ``(byte width, bytes)`` runs, in order: one ``frombuffer`` per width run."""
    parts: list[npt.NDArray[np.uint64]] = []
    i = 0
    while i < len(runs):
        w, j = runs[i][0], i
        while j < len(runs) and runs[j][0] == w:
            j += 1
        joined = b"".join(data for _, data in runs[i:j])
        parts.append(np.frombuffer(joined, dtype=_DTYPES[w]).astype(np.uint64))
        i = j
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


Head = tuple[int, int, int, int, int]
"""A block's ``(first key, where its gaps start, gap, tf and length widths)``."""


def heads_of(blobs: Sequence[bytes], counts: Sequence[int]) -> list[Head]:
    """The :data:`Head` of each block, checked as :func:`decode` checks it.

    Raises:
        StorageError: When a block's header or size does not fit its count.
    """
    return [_head(data, count) for data, count in zip(blobs, counts, strict=True)]


def _head(data: bytes, count: int) -> Head:
    """``(first key, where the gaps start, gap, tf and length widths)`` of one block, checked."""
    if count <= 0 or len(data) < 2 or data[0] >> 6:
        raise StorageError(f"a posting block of {len(data)} bytes cannot hold {count} postings")
    head = data[0]
    gw, tw, lw = _WIDTHS[head & 3], _WIDTHS[(head >> 2) & 3], _WIDTHS[(head >> 4) & 3]
    first, at = 0, 1
    for shift in range(0, 63, 7):
        if at >= len(data):
            break
        byte = data[at]
        first |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            break
    else:
        at = -1
    if at < 0 or len(data) != at + gw * (count - 1) + (tw + lw) * count or data[at - 1] >= 0x80:
        raise StorageError(f"a posting block of {len(data)} bytes cannot hold {count} postings")
    return first, at, gw, tw, lw


def decode_fixed(data: bytes, count: int) -> Postings:
    """Parse a block in the fixed layout of schemas 1-6 (for the migration only).

    ``keys int64[n] ‖ tfs uint16[n] ‖ lengths uint32[n]``, little-endian.

    Raises:
        StorageError: When the block is not ``count`` postings long (a damaged row).
    """
    if count < 0 or len(data) != count * _ROW_BYTES:
        raise StorageError(f"a posting block of {len(data)} bytes cannot hold {count} postings")
    tf_at = 8 * count
    len_at = tf_at + 2 * count
    return Postings(
        np.frombuffer(data, dtype=_KEY, count=count).astype(np.int64),
        np.frombuffer(data, dtype=_TF, count=count, offset=tf_at).astype(np.uint16),
        np.frombuffer(data, dtype=_LEN, count=count, offset=len_at).astype(np.uint32),
    )


def concat(parts: list[Postings]) -> Postings:
    """Concatenate key-ordered, non-overlapping blocks."""
    if not parts:
        return make([], [], [])
    if len(parts) == 1:
        return parts[0]
    return Postings(
        np.concatenate([p.keys for p in parts]),
        np.concatenate([p.tfs for p in parts]),
        np.concatenate([p.lengths for p in parts]),
    )
