"""Fragment query latency with and without a per-record cap, side by side in one run.

N records x F fragments of embedding-like vectors; the same queries run
uncapped and with max_per_record=2 (target: capped p50 within 2x uncapped).

Usage: python scripts/bench_fragments.py [--records 10000] [--per-record 10] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import embedmind
from embedmind.embedders.hashing import HashingEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--per-record", type=int, default=10)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dims", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(512, args.dims))
    embedder = HashingEmbedder(args.dims)

    def vectors(n: int) -> np.ndarray:
        mix = centres[rng.integers(0, len(centres), n)] + 0.3 * rng.normal(size=(n, args.dims))
        return (mix / np.linalg.norm(mix, axis=1, keepdims=True)).astype(np.float32)

    with tempfile.TemporaryDirectory() as tmp:
        store = embedmind.Store.open(Path(tmp) / "f.mind", embedder=embedder, synchronous="NORMAL")
        store.remember_many(
            [embedmind.Draft(f"document {i}", id=f"d{i}") for i in range(args.records)],
            batch_size=10_000,
        )
        started = time.perf_counter()
        for i in range(args.records):
            block = vectors(args.per_record)
            store.fragments.put(
                f"d{i}", [((j * 100, j * 100 + 100), block[j]) for j in range(args.per_record)]
            )
        total = args.records * args.per_record
        print(
            f"put {total:,} fragments: {total / (time.perf_counter() - started):,.0f} fragments/s"
        )
        queries = vectors(args.queries)
        store.fragments.query(queries[0].tolist(), k=10)  # builds / loads the index
        timings: dict[str, list[float]] = {"uncapped": [], "max_per_record=2": []}
        for q in queries:
            for name, cap in (("uncapped", None), ("max_per_record=2", 2)):
                started = time.perf_counter()
                hits = store.fragments.query(q.tolist(), k=10, max_per_record=cap)
                timings[name].append(time.perf_counter() - started)
                if cap is not None:
                    per = {h.record_id for h in hits}
                    assert all(sum(h.record_id == r for h in hits) <= cap for r in per)
        print(f"{total:,} fragments, {args.dims} dims, cores {os.cpu_count()}")
        p50 = {}
        for name, samples in timings.items():
            ms = np.asarray(samples) * 1000
            p50[name] = float(np.percentile(ms, 50))
            print(f"  {name:<18} p50 {p50[name]:6.2f} ms  p95 {np.percentile(ms, 95):6.2f} ms")
        print(
            f"  capped / uncapped p50 = {p50['max_per_record=2'] / p50['uncapped']:.2f}  (target <= 2)"
        )
        store.close()


if __name__ == "__main__":
    main()
