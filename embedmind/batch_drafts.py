"""Caller-given vectors of a whole batch validated as matrices, with per-draft errors.

``remember_many`` of 100k drafts with vectors used to validate and normalise
each vector in its own numpy calls (14 % of a bulk load's profile,
``python -m embedmind_bench.ingest_profile``). Here the batch's vectors
are stacked into matrices of :data:`SLICE` rows, each checked (real
numbers, length, finite, non-zero) and normalised in a handful of array
operations. The per-row
arithmetic is the one :func:`embedmind.embedders.adapt.normalized` does on a
single vector (float64, the row's 2-norm, divide, float32), so the rows are
bit for bit what validating them one at a time gives.

Anything a matrix cannot take as it is — a malformed vector, a ragged or
non-numeric slice, a row whose squared norm over- or underflows — falls back
to validating each vector of that slice on its own with
:func:`~embedmind.embedders.adapt.normalized_one`, so the error (type, field
``drafts[i].vector`` and message) is exactly the one the one-at-a-time
validation raises for the first bad vector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embedmind.embedders.adapt import normalized_one
from embedmind.embedders.protocol import Vector

SLICE = 4_096
"""Vectors validated as one matrix (a few ms of numpy, which holds the GIL)."""


def unit_rows(
    vectors: Sequence[object], dims: int, indices: Sequence[int] | None = None
) -> list[Vector]:
    """Validate caller-given vectors and return them as unit float32 rows, in order.

    Args:
        vectors: One vector per draft (a sequence of numbers, a 1-D array, or
            a ``(1, dims)`` array).
        dims: The store's vector length.
        indices: Each vector's draft index, for error fields (default: 0, 1, ...).

    Returns:
        One ``(dims,)`` float32 unit row per vector.

    Raises:
        InvalidInputError: For the first malformed vector, with field
            ``drafts[i].vector`` and the message of the one-at-a-time check.
    """
    at = range(len(vectors)) if indices is None else indices
    rows: list[Vector] = []
    # In slices: stacking 100,000 rows at once held the GIL for 120-320 ms, a
    # stall for every other thread of the process (a reader beside a bulk load).
    for start in range(0, len(vectors), SLICE):
        part = vectors[start : start + SLICE]
        matrix = _matrix(part, dims)
        if matrix is None:
            rows += [
                normalized_one(v, dims, f"drafts[{i}].vector")
                for i, v in zip(at[start : start + SLICE], part, strict=True)
            ]
        else:
            rows += list(matrix)
    return rows


def _matrix(vectors: Sequence[object], dims: int) -> np.ndarray | None:
    """The batch normalised as one ``(n, dims)`` float32 matrix, or ``None`` to go row by row."""
    rows = []
    try:
        for vector in vectors:
            row = vector if isinstance(vector, np.ndarray) else np.asarray(vector)
            # Each row's own kind: stacked, [True, ...] beside floats would pass as 1.0.
            if row.dtype.kind not in "iuf":
                return None
            rows.append(row)
        raw = np.stack(rows)
    except (TypeError, ValueError, OverflowError):  # ragged or not numbers: row by row
        return None
    if raw.ndim == 3 and raw.shape[1] == 1:  # (1, dims) rows are single vectors too
        raw = raw[:, 0, :]
    if raw.ndim != 2 or raw.shape[1] != dims or not dims:
        return None
    array = raw.astype(np.float64)
    if not np.isfinite(array).all():
        return None
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(array, axis=1)
    if not ((norms > 0) & np.isfinite(norms)).all():
        return None  # zero rows, or squares that over/underflow: the rescaling path per row
    unit: np.ndarray = (array / norms[:, None]).astype(np.float32)
    return unit
