"""Text channel p50 at two sizes in one run: embedmind beside tantivy, queries round-robin.

Run it as ``python -m embedmind_bench.lexical_growth --small S --large L``
with two text-only stores that ``python -m embedmind_bench.lexical_profile
--size 100k --store S`` (and ``--size 1M --store L``) built from the
benchmark corpus: building a million-document store takes half an hour on
2 loaded cores, so the stores are built once and reused. tantivy indexes
the same documents here. Every query is asked of all four engines in turn
(the order rotating), one warm-up pass, then ``--rounds`` timed passes.
Prints p50/p95, embedmind over tantivy at each size, the growth of each
from the small size to the large one, the blocks scored and skipped, the
postings each store's process cache holds and the peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.lexical_engines import TantivyEngine


def _text_recall(store: Any) -> Callable[[str, int], object]:
    """The store's text-mode recall as a ``(query, k)`` search, like the tantivy engine's."""
    return lambda query, k: store.recall(query, mode="text", k=k)


def main(argv: list[str] | None = None) -> None:
    """Parse the options, build tantivy at both sizes, time every engine round-robin."""
    from embedmind import Store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, required=True, help="text-only store of 100k")
    parser.add_argument("--large", type=Path, required=True, help="text-only store of 1M")
    parser.add_argument("--sizes", default="100000,1000000", help="their document counts")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    docs = list(iter_documents(max(sizes), CorpusSpec()))
    engines: dict[str, Callable[[str, int], object]] = {}
    stores = {}
    with tempfile.TemporaryDirectory(prefix="embedmind-growth-") as tmp:
        for n in sizes:
            home = Path(tmp) / f"tantivy-{n}"
            home.mkdir()
            engine = TantivyEngine(home)
            began = time.perf_counter()
            engine.build(docs[:n], lambda *_: None)
            print(f"tantivy build {n:,}: {time.perf_counter() - began:.1f} s", flush=True)
            engines[f"tantivy {n}"] = engine.search
        del docs
        for n, path in zip(sizes, (args.small, args.large), strict=True):
            store = stores[n] = Store.open(str(path), embedder=None)
            engines[f"embedmind {n}"] = _text_recall(store)
        queries = make_queries(args.queries, CorpusSpec())
        names = list(engines)
        latencies: dict[str, list[float]] = {name: [] for name in names}
        for round_ in range(args.rounds + 1):  # round 0 warms up
            for i, query in enumerate(queries):
                shift = i % len(names)
                for name in names[shift:] + names[:shift]:
                    began_ns = time.perf_counter_ns()
                    engines[name](query, 10)
                    if round_:
                        latencies[name].append((time.perf_counter_ns() - began_ns) / 1e6)
    p50 = {name: float(np.percentile(v, 50)) for name, v in latencies.items()}
    for name in names:
        print(f"{name:18s} p50 {p50[name]:.3f} ms  p95 {np.percentile(latencies[name], 95):.3f} ms")
    for n in sizes:
        print(f"{n:,}: embedmind / tantivy p50 {p50[f'embedmind {n}'] / p50[f'tantivy {n}']:.2f}x")
    small, large = sizes
    for label in ("embedmind", "tantivy"):
        growth = p50[f"{label} {large}"] / p50[f"{label} {small}"]
        print(f"p50 growth {small:,} -> {large:,}: {label} {growth:.2f}x")
    for n, store in stores.items():
        assert store._lexical is not None  # a SQLite store
        tally = store._lexical.tally  # the engine's own counter, for this report only
        print(
            f"{n:,}: blocks per query {tally.scored / tally.queries:.1f} scored, "
            f"{tally.skipped / tally.queries:.1f} skipped ({tally.queries} queries); "
            f"postings cached {store._lexical.cached_bytes() / 2**20:.1f} MiB"
        )
        store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB (both stores, the tantivy indexes and the corpus)")


if __name__ == "__main__":
    main()
