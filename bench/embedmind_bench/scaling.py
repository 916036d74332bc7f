"""Stores of 10k, 100k or 1M memories for the scaling workloads (ingest, recall).

Each size gets a fresh store on disk (``synchronous="NORMAL"``), filled with
the seeded chat corpus in transactions of 10,000 memories, each with an
*embedding-like* vector given (:mod:`.vectordata`). Embedding a million texts
with MiniLM (about 500 texts/s on 2 cores, half that when busy) would take
over half an hour by itself, so the cost of embedding is measured apart, on
a sample, where it is a per-text constant (:mod:`.ingest`).

Writes also keep the HNSW index current: the store saves it every 20,000
unsaved vectors inside the write, and the first recall catches up with the
rest, so that first recall is timed and reported as ``index_catchup_s``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedmind.model import Draft
from embedmind.store import Store
from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.machine import disk_read_kb
from embedmind_bench.progress import ProgressFactory
from embedmind_bench.vectordata import (
    CHUNK,
    Embedder,
    Matrix,
    base_vectors,
    mixed_vectors,
    query_vectors,
)

BATCH = 10_000  # memories per transaction (the store's maximum batch)


@dataclass
class Options:
    """How to run a scaling workload.

    Attributes:
        sizes: Store sizes, in run order (each a fresh store).
        queries: Questions per size (recall).
        seed: Seed of the corpus and of the embedding-like vectors.
        embed_sample: Texts embedded by the store itself, per size and round (ingest).
        embed_rounds: Alternated rounds of the raw embedder and the store (ingest).
        warmup: Untimed leading queries per mode (recall).
        workdir: Where stores go (a temporary directory when ``None``).
    """

    sizes: list[int] = field(default_factory=lambda: [10_000])
    queries: int = 200
    seed: int = CorpusSpec().seed
    embed_sample: int = 2_000
    embed_rounds: int = 3
    warmup: int = 10
    workdir: Path | None = None


@dataclass
class Shared:
    """What every size reuses: the mixes' real embeddings and the queries."""

    embedder: Embedder
    spec: CorpusSpec
    base: Matrix
    queries: list[str]
    query_vectors: Matrix


def shared(options: Options, embedder: Embedder | None) -> Shared:
    """Embed the base texts and the questions once for the whole run.

    Args:
        options: The run's options.
        embedder: The embedder (default: a new ``MiniLMEmbedder``).

    Returns:
        The shared inputs.
    """
    if embedder is None:
        from embedmind.embedders.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    spec = CorpusSpec(seed=options.seed)
    queries = make_queries(options.queries, spec)
    return Shared(
        embedder, spec, base_vectors(embedder, spec), queries, query_vectors(embedder, queries)
    )


def fill(
    path: Path, size: int, inputs: Shared, seed: int, progress: ProgressFactory
) -> tuple[Store, dict[str, Any]]:
    """Create a store at ``path`` holding ``size`` memories with vectors given.

    Only ``remember_many`` is timed, not making the texts and vectors.

    Args:
        path: The store file to create.
        size: How many memories.
        inputs: The shared embedder and base vectors.
        seed: Seed of the embedding-like vectors.
        progress: Progress bar factory.

    Returns:
        The open store and its figures: ``ingest_s``, ``docs_per_s``,
        ``index_catchup_s`` (the first recall), ``index_catchup_read_kb``
        (what it read from the disk), ``docs_per_s_incl_index``.
    """
    store = Store.open(path, embedder=inputs.embedder, synchronous="NORMAL")
    bar = progress(f"fill {size:,}", size)
    seconds = 0.0
    docs = iter_documents(size, inputs.spec)
    for start in range(0, size, CHUNK):
        end = min(start + CHUNK, size)
        vectors = mixed_vectors(inputs.base, end, seed=seed, start=start)
        drafts = [
            Draft(next(docs), id=f"d{i}", vector=vectors[i - start]) for i in range(start, end)
        ]
        began = time.perf_counter()
        store.remember_many(drafts, batch_size=BATCH)
        seconds += time.perf_counter() - began
        bar.update(end - start)
    bar.close()
    read_before = disk_read_kb()
    began = time.perf_counter()
    store.recall(inputs.queries[0], k=10, vector=inputs.query_vectors[0])
    catchup = time.perf_counter() - began
    return store, {
        "docs": size,
        "ingest_s": seconds,
        "docs_per_s": size / seconds,
        "index_catchup_s": catchup,
        "index_catchup_read_kb": disk_read_kb() - read_before,
        "docs_per_s_incl_index": size / (seconds + catchup),
    }


def disk_bytes(path: Path) -> int:
    """Return the size of a store's files (database, WAL, index file).

    Args:
        path: The store file.

    Returns:
        Bytes on disk of every file whose name starts with the store's.
    """
    return sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*") if p.is_file())
