"""A tiny deterministic embedder for tests: hashed bags of words."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from embedmind.embedders.protocol import Span, Vector, Vectors

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Embed texts as L2-normalised bags of hashed, casefolded words.

    Each word adds ``±1`` to one of ``dims`` buckets chosen by BLAKE2b (not
    Python's salted ``hash()``), so vectors are identical across processes
    and machines. Texts sharing words get a positive cosine; nothing else is
    meaningful. A text without words maps to a fixed unit vector, never to
    zeros, because stores reject zero vectors.

    Args:
        dims: Vector length; at least 2.
        max_tokens: Window size in words used by :meth:`spans`.

    Raises:
        ValueError: When ``dims`` < 2 or ``max_tokens`` < 2.

    Example:
        >>> e = HashingEmbedder(dims=64)
        >>> v = e.embed_query("Alice likes tea")
        >>> v.shape, round(float(v @ v), 6)
        ((64,), 1.0)
    """

    metric = "cos"

    def __init__(self, dims: int = 64, *, max_tokens: int = 256) -> None:
        if dims < 2 or max_tokens < 2:
            raise ValueError("HashingEmbedder needs dims >= 2 and max_tokens >= 2")
        self.dims = dims
        self.max_tokens = max_tokens
        self.model_id = f"hashing-{dims}"
        self.fingerprint = hashlib.sha256(f"embedmind-hashing-v1:{dims}".encode()).hexdigest()

    def __repr__(self) -> str:
        return f"HashingEmbedder(dims={self.dims})"

    def _bucket(self, word: str) -> tuple[int, float]:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dims, 1.0 if (value >> 63) & 1 else -1.0

    def embed_query(self, text: str) -> Vector:
        """Embed one text.

        Args:
            text: Any string, including the empty one.

        Returns:
            A ``(dims,)`` float32 unit vector.
        """
        vector = np.zeros(self.dims, dtype=np.float64)
        for word in _WORD.findall(text.casefold()):
            index, sign = self._bucket(word)
            vector[index] += sign
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            # Empty text (or words that cancel out): a fixed unit vector.
            vector[:] = 0.0
            vector[0] = 1.0
            norm = 1.0
        return (vector / norm).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed many texts.

        Args:
            texts: The texts.

        Returns:
            An ``(n, dims)`` float32 array of unit rows.
        """
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.stack([self.embed_query(t) for t in texts])

    def spans(self, text: str, *, overlap_tokens: int = 32) -> list[Span]:
        """Split ``text`` into overlapping windows of at most ``max_tokens`` words.

        Args:
            text: The text.
            overlap_tokens: Words shared by consecutive windows, at most
                half a window (larger values are clamped).

        Returns:
            Half-open character spans covering the whole text.

        Raises:
            ValueError: When ``overlap_tokens`` is negative.
        """
        if overlap_tokens < 0:
            raise ValueError("overlap_tokens must be >= 0")
        overlap_tokens = min(overlap_tokens, self.max_tokens // 2)
        words = [m.span() for m in _WORD.finditer(text)]
        if len(words) <= self.max_tokens:
            return [(0, len(text))]
        out: list[Span] = []
        start = 0
        while True:
            end = min(start + self.max_tokens, len(words))
            first = 0 if start == 0 else words[start][0]
            last = len(text) if end == len(words) else words[end - 1][1]
            out.append((first, last))
            if end == len(words):
                return out
            start = end - overlap_tokens
