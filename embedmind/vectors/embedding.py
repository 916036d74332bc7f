"""Embedding before the write transaction: spans, batching, caller-given vectors.

Content longer than the model's window is embedded in overlapping chunks; each
chunk becomes one more vector of the same memory, tagged with its
``[start, end)`` character span. All chunks of a batch go to the embedder in
one call, so the embedder's own parallelism sees the whole batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from embedmind.embedders.adapt import normalized
from embedmind.embedders.protocol import Embedder, Vectors


@dataclass(frozen=True)
class Embedded:
    """One memory's vectors: unit float32 rows and their character spans."""

    spans: list[tuple[int, int]]
    vectors: Vectors

    def blobs(self) -> list[bytes]:
        """The rows in the storage format (little-endian float32)."""
        return row_blobs(self.vectors)


def row_blobs(matrix: Vectors) -> list[bytes]:
    """Each row of ``matrix`` in the storage format (little-endian float32).

    The whole matrix is converted once and its bytes cut per row: a bulk
    load's batch of 10,000 vectors made 10,000 ``astype`` calls row by row.
    """
    if not len(matrix):
        return []
    data = np.ascontiguousarray(matrix, dtype="<f4").tobytes()
    width = len(data) // len(matrix)
    return [data[at : at + width] for at in range(0, len(data), width)]


def embed_contents(
    embedder: Embedder, contents: Sequence[str], given: Sequence[object | None]
) -> list[Embedded]:
    """Embed each content (or validate the vector given for it).

    Args:
        embedder: The store's embedder.
        contents: The memories' texts.
        given: Per memory, a caller-computed vector or ``None``.

    Returns:
        One :class:`Embedded` per content.

    Raises:
        InvalidInputError: When a given vector is malformed.
        EmbedderError: When the embedder fails.
    """
    plans: list[list[tuple[int, int]]] = []
    texts: list[str] = []
    for content, vector in zip(contents, given, strict=True):
        spans = [(0, len(content))] if vector is not None else embedder.spans(content)
        plans.append(spans)
        if vector is None:
            texts += [content[start:end] for start, end in spans]
    matrix = normalized(embedder.embed_documents(texts), embedder.dims) if texts else None
    mine = iter(_given_rows([v for v in given if v is not None], embedder.dims))
    out: list[Embedded] = []
    row = 0
    for spans, vector in zip(plans, given, strict=True):
        if vector is not None:
            out.append(Embedded(spans, next(mine)))
            continue
        assert matrix is not None  # texts were embedded above
        out.append(Embedded(spans, np.ascontiguousarray(matrix[row : row + len(spans)])))
        row += len(spans)
    return out


def _given_rows(vectors: list[object], dims: int) -> list[Vectors]:
    """Each given vector as a ``(1, dims)`` unit row, normalised as one matrix when they stack.

    Row by row or stacked, each row goes through the same float64 arithmetic,
    so the result is the same bits; stacking saves a numpy round trip per vector.
    """
    if not vectors:
        return []
    try:
        stacked = np.stack([np.asarray(v) for v in vectors])
    except (TypeError, ValueError):  # ragged or odd: one at a time
        stacked = None
    if stacked is None or stacked.ndim != 2:
        return [normalized(v, dims) for v in vectors]
    unit = normalized(stacked, dims)
    return [unit[i : i + 1] for i in range(len(vectors))]
