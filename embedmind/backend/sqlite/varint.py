"""LEB128 variable-length integers, encoded and decoded for whole arrays with numpy.

The compact posting blocks and document term lists
(:mod:`embedmind.backend.sqlite.blocks`, :mod:`embedmind.backend.sqlite.postings`)
are streams of unsigned integers that are mostly small: key gaps, term
frequencies, short document lengths. LEB128 stores seven bits per byte, the
high bit saying "more bytes follow", so a value below 128 costs one byte
(the encoding of protobuf, DWARF and Lucene's ``VInt``). A whole batch is
encoded at once (one byte per value per pass, vectorised) and a block decodes
with a handful of numpy calls; a stream of one-byte values decodes as a copy.

Example:
    >>> import numpy as np
    >>> data = encode(np.array([1, 300, 0], dtype=np.int64)).tobytes()
    >>> data.hex()
    '01ac0200'
    >>> decode(data, 3).tolist()
    [1, 300, 0]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from embedmind.errors import StorageError

_MAX_BYTES = 9
"""Bytes of the largest value kept: 63 bits (an int64 key), never more."""
_LIMITS = np.asarray([1 << (7 * i) for i in range(1, _MAX_BYTES)], dtype=np.uint64)


def sizes(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Bytes each value takes (values must be non-negative)."""
    # 1 + how many of the limits the value reaches: one binary search each,
    # a sixth of the time of comparing every value with every limit.
    found: npt.NDArray[np.int64] = 1 + np.searchsorted(
        _LIMITS, values.astype(np.uint64, copy=False), side="right"
    ).astype(np.int64)
    return found


def encode(
    values: npt.NDArray[np.int64], nbytes: npt.NDArray[np.int64] | None = None
) -> npt.NDArray[np.uint8]:
    """The LEB128 bytes of ``values`` (non-negative, below 2**63), concatenated.

    Args:
        values: The integers, in stream order.
        nbytes: Their :func:`sizes`, when the caller computed them already.

    Raises:
        ValueError: When a value is negative (a caller's bug, never user input).
    """
    if len(values) and int(values.min()) < 0:
        raise ValueError("LEB128 encodes non-negative integers only")
    nb = sizes(values) if nbytes is None else nbytes
    if not len(values) or int(nb.max()) == 1:
        small: npt.NDArray[np.uint8] = values.astype(np.uint8)
        return small
    total = int(nb.sum())
    owner = np.repeat(np.arange(len(values)), nb)
    starts = np.cumsum(nb) - nb
    nth = np.arange(total, dtype=np.int64) - starts[owner]
    v = values.astype(np.uint64, copy=False)[owner]
    out: npt.NDArray[np.uint8] = ((v >> (7 * nth).astype(np.uint64)) & np.uint64(0x7F)).astype(
        np.uint8
    )
    out[nth < nb[owner] - 1] |= 0x80
    return out


def decode(data: bytes, count: int) -> npt.NDArray[np.int64]:
    """Exactly ``count`` values from ``data``.

    Raises:
        StorageError: When ``data`` is not ``count`` whole values (a damaged
            row, or bytes the engine did not write).
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    if count == 0:
        if len(raw):
            raise StorageError(f"{len(raw)} bytes are not whole integers")
        return np.empty(0, dtype=np.int64)
    if count < 0 or len(raw) < count:
        raise StorageError(f"{len(raw)} bytes cannot hold {count} integers")
    if len(raw) == count:  # every value below 128: the common block of a short corpus
        if count and int(raw.max()) >= 0x80:
            raise StorageError(f"{len(raw)} bytes are not {count} whole integers")
        return raw.astype(np.int64)
    ends = np.flatnonzero(raw < 0x80)
    if len(ends) != count or ends[-1] != len(raw) - 1:
        raise StorageError(f"{len(raw)} bytes are not {count} whole integers")
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    widths = ends - starts + 1
    if int(widths.max()) > _MAX_BYTES:
        raise StorageError(f"an integer of {int(widths.max())} bytes is out of range")
    nth = np.arange(len(raw), dtype=np.int64) - np.repeat(starts, widths)
    parts = (raw & 0x7F).astype(np.uint64) << (7 * nth).astype(np.uint64)
    values = np.add.reduceat(parts, starts)
    if int(values.max()) >= 1 << 63:
        raise StorageError("an integer is out of range")
    return values.astype(np.int64)


def decode_all(data: bytes) -> npt.NDArray[np.int64]:
    """Every value of ``data`` (a stream of whole values).

    Raises:
        StorageError: When the last value is cut off, or a value is out of range.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    return decode(data, int(np.count_nonzero(raw < 0x80)))
