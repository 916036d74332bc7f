"""A second writer and a reader while ``remember_many`` bulk-loads a fresh store.

Part of ``embedmind bench ingest``. In a fresh store, the main thread writes
``size`` memories with vectors given by one ``remember_many`` call at the
default batch size (each batch is one transaction, so the batch size is what
bounds how long another writer can wait for the writer lock). Meanwhile:

- a *writer* thread calls ``remember`` (vector given) every
  :data:`WRITER_EVERY` seconds; each call's duration is its wait (the writer
  lock, its own short transaction and what follows its commit);
- a *reader* thread runs a hybrid ``recall`` every :data:`READER_EVERY`
  seconds; its latency shows whether reads wait for the bulk load (they must
  not: SQLite readers never wait for a writer in WAL mode, and the vector
  index is extended outside the writer lock).

Threads of one process, the usual shape of an application importing a
history while it keeps serving its agent. Reported: p50, p99 and max of each
(the max is the worst stall), and the bulk load's rate under contention.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from embedmind.model import Draft
from embedmind.store import Store
from embedmind_bench import metrics, scaling
from embedmind_bench.corpus import iter_documents
from embedmind_bench.vectordata import CHUNK, mixed_vectors

WRITER_EVERY = 0.05
READER_EVERY = 0.05
WAIT_TARGET_MS = 500.0
"""The second writer's p99 wait the issue asks for (issue 18)."""


def _summary(seconds: list[float]) -> dict[str, Any]:
    return {
        "p50_ms": metrics.percentile_ms(seconds, 50),
        "p99_ms": metrics.percentile_ms(seconds, 99),
        "max_ms": max(seconds) * 1e3 if seconds else None,
        "samples": len(seconds),
    }


def measure(path: Path, size: int, inputs: scaling.Shared, seed: int) -> dict[str, Any]:
    """Bulk-load ``size`` memories into a fresh store at ``path`` while a writer and a reader run.

    Args:
        path: The store file to create.
        size: Memories the bulk load writes.
        inputs: The shared embedder, base vectors and queries.
        seed: Seed of the embedding-like vectors.

    Returns:
        ``bulk_docs_per_s``, and ``writer`` and ``reader`` latency summaries
        (``p50_ms``, ``p99_ms``, ``max_ms``, ``samples``).
    """
    vectors = np.concatenate(
        [
            mixed_vectors(inputs.base, min(start + CHUNK, size), seed=seed, start=start)
            for start in range(0, size, CHUNK)
        ]
    )
    drafts = [
        Draft(text, id=f"d{i}", vector=vectors[i])
        for i, text in enumerate(iter_documents(size, inputs.spec))
    ]
    extra = mixed_vectors(inputs.base, 1_000, seed=seed + 1)
    store = Store.open(path, embedder=inputs.embedder, synchronous="NORMAL")
    waits: list[float] = []
    reads: list[float] = []
    done = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        i = 0
        while not done.is_set():
            began = time.perf_counter()
            store.remember(f"a live note {i} while importing", vector=extra[i % len(extra)])
            waits.append(time.perf_counter() - began)
            i += 1
            done.wait(WRITER_EVERY)

    def reader() -> None:
        i = 0
        while not done.is_set():
            q = i % len(inputs.queries)
            began = time.perf_counter()
            store.recall(inputs.queries[q], k=10, vector=inputs.query_vectors[q])
            reads.append(time.perf_counter() - began)
            i += 1
            done.wait(READER_EVERY)

    def guarded(target: Any) -> Any:
        def run() -> None:
            try:
                target()
            except BaseException as e:  # reported below, never a silent hang
                failures.append(e)

        return run

    store.remember_many(drafts[:100])  # the threads find a store that exists
    threads = [threading.Thread(target=guarded(f), daemon=True) for f in (writer, reader)]
    try:
        for t in threads:
            t.start()
        began = time.perf_counter()
        store.remember_many(drafts[100:])
        seconds = time.perf_counter() - began
    finally:
        done.set()
        for t in threads:
            t.join(60)
        store.close()
    if failures:
        raise RuntimeError("a contending thread failed") from failures[0]
    return {
        "size": size,
        "bulk_docs_per_s": (size - 100) / seconds,
        "writer": _summary(waits),
        "reader": _summary(reads),
    }
