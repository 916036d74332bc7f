"""Vector recall, side by side in one run.

1. remember_many throughput as a fraction of the raw embedder's throughput
   (same texts, same embedder; target >= 0.85).
2. The vector channel at N embedding-like vectors (noisy mixes of real
   embeddings) against raw usearch (same dtype, same ef) and numpy brute
   force: p50/p95 latency and recall@10 (targets: overhead <= 2x raw usearch,
   recall@10 >= 0.97).
3. Hybrid recall p50 at N memories, query embedding included (target <= 10 ms).

Usage: python scripts/bench_vectors.py [--size 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

import embedmind
from embedmind.benchmarks.corpus import iter_documents, make_queries
from embedmind.embedders.minilm import MiniLMEmbedder


def percentiles(samples: list[float]) -> tuple[float, float]:
    ms = np.asarray(samples) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def embedding_like(base: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Noisy mixes of real embeddings: unit vectors with a realistic geometry."""
    a = base[rng.integers(0, len(base), n)]
    b = base[rng.integers(0, len(base), n)]
    w = rng.uniform(0.55, 0.95, size=(n, 1))
    mix = w * a + (1 - w) * b + 0.01 * rng.normal(size=a.shape)
    return (mix / np.linalg.norm(mix, axis=1, keepdims=True)).astype(np.float32)


def ingest_ratio(embedder: MiniLMEmbedder, texts: list[str]) -> None:
    started = time.perf_counter()
    embedder.embed_documents(texts)
    raw = len(texts) / (time.perf_counter() - started)
    with (
        tempfile.TemporaryDirectory() as tmp,
        embedmind.Store.open(Path(tmp) / "i.mind", embedder=embedder) as store,
    ):
        started = time.perf_counter()
        store.remember_many(texts, batch_size=256)
        stored = len(texts) / (time.perf_counter() - started)
    print(f"\n[ingest] {len(texts)} short texts")
    print(f"  raw embedder      {raw:8.1f} texts/s")
    print(f"  remember_many     {stored:8.1f} texts/s")
    print(f"  ratio             {stored / raw:8.2f}   (target >= 0.85)")


def vector_channel(embedder: MiniLMEmbedder, size: int, queries: list[str], workdir: Path) -> None:
    from usearch.index import Index

    rng = np.random.default_rng(7)
    base = embedder.embed_documents(list(iter_documents(2_000)))
    vectors = embedding_like(base, size, rng)
    qv = np.stack([embedder.embed_query(q) for q in queries])
    texts = list(iter_documents(size))

    store = embedmind.Store.open(workdir / "v.mind", embedder=embedder, synchronous="NORMAL")
    started = time.perf_counter()
    store.remember_many(
        [
            embedmind.Draft(t, id=str(i), vector=v)
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ],
        batch_size=10_000,
    )
    build_store = size / (time.perf_counter() - started)
    store.recall("warm up", k=10, mode="vector")  # loads / builds the index

    raw = Index(
        ndim=vectors.shape[1], metric="cos", dtype="f16", connectivity=16, expansion_add=128
    )
    started = time.perf_counter()
    raw.add(np.arange(size, dtype=np.uint64), vectors)
    build_raw = size / (time.perf_counter() - started)
    ef = 256
    raw.expansion_search = ef

    exact = [set(np.argsort(-(vectors @ q))[:10].tolist()) for q in qv]
    t_np: list[float] = []
    t_raw: list[float] = []
    t_store: list[float] = []
    r_raw: list[float] = []
    r_store: list[float] = []
    for q, truth in zip(qv, exact, strict=True):
        started = time.perf_counter()
        np.argpartition(-(vectors @ q), 10)[:10]
        t_np.append(time.perf_counter() - started)
        started = time.perf_counter()
        keys = np.asarray(raw.search(q, 10).keys).tolist()
        t_raw.append(time.perf_counter() - started)
        r_raw.append(len(truth & set(keys)) / 10)
        started = time.perf_counter()
        hits = store.recall("", k=10, mode="vector", vector=q, ef_search=ef)
        t_store.append(time.perf_counter() - started)
        r_store.append(len({int(i) for i in hits.ids} & truth) / 10)
    recalls = r_store
    print(f"\n[vector channel] {size:,} embedding-like vectors, 384 dims, f16, ef {ef}")
    print(
        f"  build: embedmind {build_store:,.0f} vec/s (incl. SQLite), raw usearch {build_raw:,.0f} vec/s"
    )
    for name, samples, rec in (
        ("numpy brute force", t_np, 1.0),
        ("raw usearch", t_raw, float(np.mean(r_raw))),
        ("embedmind vector", t_store, float(np.mean(recalls))),
    ):
        p50, p95 = percentiles(samples)
        print(f"  {name:<18} p50 {p50:7.3f} ms  p95 {p95:7.3f} ms  recall@10 {rec:.3f}")
    ratio = percentiles(t_store)[0] / percentiles(t_raw)[0]
    print(f"  embedmind / raw usearch p50 = {ratio:.2f}  (target <= 2)")

    hybrid = []
    for q in queries:
        started = time.perf_counter()
        store.recall(q, k=10)
        hybrid.append(time.perf_counter() - started)
    p50, p95 = percentiles(hybrid)
    print(f"\n[hybrid recall] {size:,} memories, query embedding included")
    print(f"  p50 {p50:.2f} ms  p95 {p95:.2f} ms  (target p50 <= 10 ms)")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ingest", type=int, default=2_000)
    args = parser.parse_args()
    import onnxruntime
    import usearch

    print(
        f"python {platform.python_version()}  numpy {np.__version__}  onnxruntime {onnxruntime.__version__}  "
        f"usearch {usearch.__version__}  embedmind {embedmind.__version__}  cores {os.cpu_count()}"
    )
    embedder = MiniLMEmbedder()
    print(f"embedder {embedder.model_id} variant {embedder.variant} threads {embedder.threads}")
    ingest_ratio(embedder, list(iter_documents(args.ingest)))
    if args.size > 0:  # --size 0: the ingest comparison only
        with tempfile.TemporaryDirectory() as tmp:
            vector_channel(embedder, args.size, make_queries(args.queries), Path(tmp))


if __name__ == "__main__":
    main()
