"""The vector channel and its anchors behind one build/search interface.

Anchors: numpy brute force (exact, the physical limit), raw usearch with the
engine's own settings (f16, M = 16, ef_add = 128), and what a user might pick
instead, hnswlib and faiss ``IndexHNSWFlat`` with the same M and ef. Every
engine gets the same unit vectors keyed by position and answers with the
positions of its top ``k``. Peers are imported lazily (:mod:`.optional`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from embedmind_bench.optional import load, usearch_index
from embedmind_bench.vectordata import Matrix

CONNECTIVITY = 16  # M: the engine's own (embedmind.backend.sqlite.hnsw)
EXPANSION_ADD = 128
BATCH = 10_000  # vectors added per call, so progress bars move


class VectorEngine(Protocol):
    """What the vector benchmark needs from an engine."""

    name: str
    settings: dict[str, Any]

    def build(self, vectors: Matrix, texts: Sequence[str], step: Callable[[int], object]) -> None:
        """Index ``vectors`` keyed by position (``texts`` are their documents)."""

    def search(self, query: Matrix, k: int) -> list[int]:
        """Return the keys of the ``k`` nearest vectors, best first."""

    def close(self) -> None:
        """Release memory and files."""


class NumpyExact:
    """Brute force: one mat-vec per query and a partial sort (recall 1.0)."""

    name = "numpy"
    builds_index = False  # its build rate is not a figure

    def __init__(self, workdir: Path, ef: int, embedder: Any) -> None:
        del workdir, ef, embedder
        self.settings: dict[str, Any] = {"method": "vectors @ q, argpartition"}
        self._vectors: Matrix = np.empty((0, 0), np.float32)

    def build(self, vectors: Matrix, texts: Sequence[str], step: Callable[[int], object]) -> None:
        """Keep a reference: there is nothing to build."""
        self._vectors = vectors
        step(len(vectors))

    def search(self, query: Matrix, k: int) -> list[int]:
        """Score every vector and keep the best ``k``."""
        scores = self._vectors @ query
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.argsort(-scores[top])].tolist()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Drop the reference."""
        self._vectors = np.empty((0, 0), np.float32)


class RawUsearch:
    """usearch as the engine configures it, without SQLite around it."""

    name = "usearch"

    def __init__(self, workdir: Path, ef: int, embedder: Any) -> None:
        del workdir, embedder
        self._ef = ef
        self.settings: dict[str, Any] = {
            "dtype": "f16",
            "metric": "cos",
            "M": CONNECTIVITY,
            "ef_add": EXPANSION_ADD,
            "ef_search": ef,
        }
        self._index: Any = None

    def build(self, vectors: Matrix, texts: Sequence[str], step: Callable[[int], object]) -> None:
        """Add the vectors in batches, all cores."""
        index = usearch_index()(
            ndim=vectors.shape[1],
            metric="cos",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        for start in range(0, len(vectors), BATCH):
            block = vectors[start : start + BATCH]
            index.add(np.arange(start, start + len(block), dtype=np.uint64), block)
            step(len(block))
        index.expansion_search = self._ef
        self._index = index

    def search(self, query: Matrix, k: int) -> list[int]:
        """One graph search."""
        return np.asarray(self._index.search(query, k).keys).tolist()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Free the index."""
        self._index = None


class Hnswlib:
    """hnswlib, cosine space, the same M and ef."""

    name = "hnswlib"

    def __init__(self, workdir: Path, ef: int, embedder: Any) -> None:
        del workdir, embedder
        self._ef = ef
        self.settings: dict[str, Any] = {
            "space": "cosine",
            "M": CONNECTIVITY,
            "ef_construction": EXPANSION_ADD,
            "ef": ef,
        }
        self._index: Any = None

    def build(self, vectors: Matrix, texts: Sequence[str], step: Callable[[int], object]) -> None:
        """Add the vectors in batches, all cores."""
        hnswlib, reason = load("hnswlib")
        if hnswlib is None:
            raise RuntimeError(reason)
        index = hnswlib.Index(space="cosine", dim=vectors.shape[1])
        index.init_index(max_elements=len(vectors), ef_construction=EXPANSION_ADD, M=CONNECTIVITY)
        for start in range(0, len(vectors), BATCH):
            block = vectors[start : start + BATCH]
            index.add_items(block, np.arange(start, start + len(block)))
            step(len(block))
        index.set_ef(self._ef)
        self._index = index

    def search(self, query: Matrix, k: int) -> list[int]:
        """One graph search."""
        labels, _ = self._index.knn_query(query, k=k)
        return labels[0].tolist()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Free the index."""
        self._index = None


class Faiss:
    """faiss ``IndexHNSWFlat`` on inner product (unit vectors: cosine)."""

    name = "faiss"

    def __init__(self, workdir: Path, ef: int, embedder: Any) -> None:
        del workdir, embedder
        self._ef = ef
        self.settings: dict[str, Any] = {
            "index": "IndexHNSWFlat",
            "metric": "inner product",
            "M": CONNECTIVITY,
            "efConstruction": EXPANSION_ADD,
            "efSearch": ef,
        }
        self._index: Any = None

    def build(self, vectors: Matrix, texts: Sequence[str], step: Callable[[int], object]) -> None:
        """Add the vectors in batches."""
        faiss, reason = load("faiss")
        if faiss is None:
            raise RuntimeError(reason)
        index = faiss.IndexHNSWFlat(vectors.shape[1], CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EXPANSION_ADD
        for start in range(0, len(vectors), BATCH):
            block = vectors[start : start + BATCH]
            index.add(block)
            step(len(block))
        index.hnsw.efSearch = self._ef
        self._index = index

    def search(self, query: Matrix, k: int) -> list[int]:
        """One graph search."""
        _, keys = self._index.search(query.reshape(1, -1), k)
        return [int(key) for key in keys[0] if key >= 0]

    def close(self) -> None:
        """Free the index."""
        self._index = None


class EmbedmindVector:
    """The engine under test: ``recall(mode="vector", vector=q)`` on a store.

    The build time covers the writes and the first search, because the HNSW
    index catches up with the durable vectors on the first recall.
    """

    name = "embedmind"

    def __init__(self, workdir: Path, ef: int, embedder: Any) -> None:
        from embedmind.store import Store

        self._ef = ef
        self.settings: dict[str, Any] = {"mode": "vector", "ef_search": ef, "synchronous": "NORMAL"}
        self._store = Store.open(workdir / "vector.mind", embedder=embedder, synchronous="NORMAL")

    def build(self, vectors: Matrix, texts: Sequence[str], step: Callable[[int], object]) -> None:
        """Remember every text with its vector, then run one search to build the index."""
        from embedmind.model import Draft

        for start in range(0, len(vectors), BATCH):
            drafts = [
                Draft(texts[i], id=str(i), vector=vectors[i])
                for i in range(start, min(start + BATCH, len(vectors)))
            ]
            self._store.remember_many(drafts, batch_size=BATCH)
            step(len(drafts))
        self.search(vectors[0], 1)

    def search(self, query: Matrix, k: int) -> list[int]:
        """Recall in vector mode with the query's vector given."""
        vector = cast("Sequence[float]", query)  # recall takes any float sequence, arrays too
        hits = self._store.recall("", k=k, mode="vector", vector=vector, ef_search=self._ef)
        return [int(i) for i in hits.ids]

    def phases(self, query: Matrix, k: int) -> dict[str, float]:
        """One such recall's phases in seconds (``explain=True``), ``vector`` the channel's own.

        The ``vector`` phase spans opening the read session, the graph
        search, the key mapping, the filter and the exact rescoring of the
        hits; ``load`` reads the memories. What no phase covers (request
        checks, closing the session, assembling the result) is the rest of
        the recall's wall time.
        """
        vector = cast("Sequence[float]", query)
        found = self._store.recall(
            "", k=k, mode="vector", vector=vector, ef_search=self._ef, explain=True
        )
        assert found.timings is not None  # explain=True carries them
        return {phase: ms / 1e3 for phase, ms in found.timings.items()}

    def close(self) -> None:
        """Close the store."""
        self._store.close()


ENGINES: dict[str, Callable[[Path, int, Any], VectorEngine]] = {
    "numpy": NumpyExact,
    "usearch": RawUsearch,
    "hnswlib": Hnswlib,
    "faiss": Faiss,
    "embedmind": EmbedmindVector,
}
# The module each engine needs beyond the core dependencies, and its distribution.
REQUIRES = {"hnswlib": ("hnswlib", "hnswlib"), "faiss": ("faiss", "faiss-cpu")}
