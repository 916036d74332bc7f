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
        return [row.astype("<f4").tobytes() for row in self.vectors]


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
    out: list[Embedded] = []
    row = 0
    for spans, vector in zip(plans, given, strict=True):
        if vector is not None:
            out.append(Embedded(spans, normalized(vector, embedder.dims)))
            continue
        assert matrix is not None  # texts were embedded above
        out.append(Embedded(spans, np.ascontiguousarray(matrix[row : row + len(spans)])))
        row += len(spans)
    return out
