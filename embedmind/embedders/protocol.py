"""The embedder interface the store programs against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Span", "Vector", "Vectors"]

#: One L2-normalised float32 embedding, shape ``(dims,)``.
Vector = npt.NDArray[np.float32]
#: A float32 matrix of L2-normalised rows, shape ``(n, dims)``.
Vectors = npt.NDArray[np.float32]
#: A half-open ``[start, end)`` character span of a text.
Span = tuple[int, int]


@runtime_checkable
class Embedder(Protocol):
    """What the store needs from an embedding model.

    ``fingerprint`` identifies the exact weights and how they were run, so a
    store can refuse vectors from a different model (or variant of one).
    """

    model_id: str
    dims: int
    metric: str
    fingerprint: str
    max_tokens: int

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` into an ``(n, dims)`` float32 array of unit rows."""
        ...

    def embed_query(self, text: str) -> Vector:
        """Embed one query into a ``(dims,)`` float32 unit vector."""
        ...

    def spans(self, text: str, *, overlap_tokens: int = 32) -> list[Span]:
        """Split ``text`` into overlapping windows that fit ``max_tokens``."""
        ...
