"""Packed posting blocks: the on-disk format of the BM25 postings.

A block holds up to :data:`BLOCK_SIZE` postings of one term, sorted by
document key, as three little-endian arrays laid end to end::

    keys     int64[n]    document keys (ascending)
    tfs      uint16[n]   term frequency in the document (saturating at 65535)
    lengths  uint32[n]   document length in terms

so a block decodes with three ``numpy.frombuffer`` calls and scores without a
document-length lookup. Each block row also carries its largest tf and
smallest length, which bound the block's best score (block-max).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from embedmind.errors import StorageError

BLOCK_SIZE = 512
_KEY = np.dtype("<i8")
_TF = np.dtype("<u2")
_LEN = np.dtype("<u4")
_ROW_BYTES = _KEY.itemsize + _TF.itemsize + _LEN.itemsize


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


def encode(postings: Postings) -> bytes:
    """Serialise postings to the block format."""
    return (
        postings.keys.astype(_KEY).tobytes()
        + postings.tfs.astype(_TF).tobytes()
        + postings.lengths.astype(_LEN).tobytes()
    )


def decode(data: bytes, count: int) -> Postings:
    """Parse a block of ``count`` postings.

    Raises:
        StorageError: When the block is not ``count`` postings long (a damaged row).
    """
    # A row the engine did not write (damage, or planted bytes) would otherwise
    # decode into garbage keys, or fail with numpy's ValueError or a huge allocation.
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
