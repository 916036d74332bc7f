"""Embedding-like vectors at any corpus size, without embedding every text.

Random Gaussian vectors are pathological for every HNSW (recall@10 0.08-0.15,
``shared/BENCHMARKS.md``), so vector figures use *embedding-like* vectors:
unit vectors made as noisy mixes of two real MiniLM embeddings of corpus
texts. They keep the clustered geometry of real embeddings while costing a
few seconds at a million, where embedding every text with MiniLM (about 500
texts/s on 2 cores, less when busy) would take over half an hour by itself.
Queries are always real question embeddings.

Vectors are made in seeded chunks like the text corpus, so the first ``n``
vectors are the same whatever the total (the 100k set is a prefix of the 1M).

Example:
    >>> import numpy as np
    >>> base = np.eye(4, dtype=np.float32)
    >>> a, b = mixed_vectors(base, 5, seed=1), mixed_vectors(base, 3, seed=1)
    >>> a.shape, bool(np.allclose(a[:3], b)), bool(np.allclose(np.linalg.norm(a, axis=1), 1))
    ((5, 4), True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from embedmind_bench.corpus import CorpusSpec, iter_documents

Matrix = npt.NDArray[np.float32]
# Vectors are drawn in chunks of this many; changing it changes the vectors.
CHUNK = 10_000
# Real embeddings the mixes are made of: enough distinct directions for
# realistic neighbourhoods, cheap enough to embed in seconds.
BASE_TEXTS = 2_000
_VECTOR_STREAM = 3


class Embedder(Protocol):
    """The part of an embedder these helpers use."""

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed many texts."""

    def embed_query(self, text: str) -> Matrix:
        """Embed one text."""


def mix(base: Matrix, n: int, rng: np.random.Generator) -> Matrix:
    """Return ``n`` unit vectors, each a noisy mix of two rows of ``base``.

    One row dominates (weight 0.55-0.95), so vectors cluster around real
    embeddings the way paraphrases do; a little noise keeps them distinct.

    Args:
        base: Real embeddings, one per row (unit length).
        n: How many vectors to make.
        rng: The generator to draw from.

    Returns:
        An ``(n, dims)`` float32 array of unit rows.
    """
    a = base[rng.integers(0, len(base), n)]
    b = base[rng.integers(0, len(base), n)]
    weight = rng.uniform(0.55, 0.95, size=(n, 1))
    mixed = weight * a + (1 - weight) * b + 0.01 * rng.normal(size=a.shape)
    unit: Matrix = (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)
    return unit


def mixed_vectors(base: Matrix, n: int, *, seed: int, start: int = 0) -> Matrix:
    """Return vectors ``start .. n-1`` of the seeded embedding-like stream over ``base``.

    Args:
        base: Real embeddings to mix.
        n: One past the last vector wanted.
        seed: Seed of the stream.
        start: The first vector wanted (for filling in after real embeddings).

    Returns:
        An ``(n - start, dims)`` float32 array; vector ``i`` is the same for
        every ``n > i``.
    """
    out = np.empty((max(n - start, 0), base.shape[1]), dtype=np.float32)
    for index in range(start // CHUNK, (n + CHUNK - 1) // CHUNK):
        rng = np.random.default_rng([seed, _VECTOR_STREAM, index])
        block = mix(base, CHUNK, rng)
        lo, hi = max(index * CHUNK, start), min((index + 1) * CHUNK, n)
        out[lo - start : hi - start] = block[lo - index * CHUNK : hi - index * CHUNK]
    return out


def base_vectors(embedder: Embedder, spec: CorpusSpec, count: int = BASE_TEXTS) -> Matrix:
    """Embed the first ``count`` corpus documents: the mixes' ingredients.

    Args:
        embedder: The embedder under test.
        spec: The corpus.
        count: How many documents to embed.

    Returns:
        An ``(count, dims)`` float32 array.
    """
    return np.asarray(embedder.embed_documents(list(iter_documents(count, spec))), np.float32)


def corpus_vectors(real: Matrix, base: Matrix, n: int, *, seed: int) -> Matrix:
    """Return ``n`` document vectors: the real embeddings first, embedding-like after.

    Args:
        real: Real embeddings of the first documents (may be empty or longer than ``n``).
        base: Real embeddings to mix for the rest.
        n: How many vectors.
        seed: Seed of the embedding-like stream.

    Returns:
        An ``(n, dims)`` float32 array.
    """
    head = real[:n]
    if len(head) == n:
        return np.ascontiguousarray(head, dtype=np.float32)
    tail = mixed_vectors(base, n, seed=seed, start=len(head))
    return np.concatenate([head.astype(np.float32), tail])


def query_vectors(embedder: Embedder, queries: Sequence[str]) -> Matrix:
    """Embed each question on its own, as a caller embeds a query.

    Args:
        embedder: The embedder under test.
        queries: The questions.

    Returns:
        A ``(len(queries), dims)`` float32 array.
    """
    return np.stack([np.asarray(embedder.embed_query(q), np.float32) for q in queries])


def exact_top_k(vectors: Matrix, queries: Matrix, k: int) -> list[list[int]]:
    """Return the exact cosine top-``k`` keys per query (unit vectors: dot product).

    Args:
        vectors: ``(n, dims)`` unit rows.
        queries: ``(q, dims)`` unit rows.
        k: How many neighbours.

    Returns:
        Per query, the ``k`` best keys, best first.
    """
    k = min(k, len(vectors))
    truth: list[list[int]] = []
    # Blocks of queries keep the score matrix small at a million vectors.
    for start in range(0, len(queries), 64):
        scores = queries[start : start + 64] @ vectors.T
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        for row, keys in zip(scores, top, strict=True):
            truth.append(keys[np.argsort(-row[keys], kind="stable")].tolist())
    return truth
