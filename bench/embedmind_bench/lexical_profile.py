"""Profile the text channel: build (or reuse) a text-only store, then cProfile its queries.

Run it as ``python -m embedmind_bench.lexical_profile --size 100k`` to see
where a text recall spends its time (the ``embedmind bench lexical`` corpus
and questions), and ``--build`` to profile the text-only ingest instead. The
store is kept in ``--store`` (default a temporary file) so repeated profiles
of the query path skip the build. Not a benchmark: its timings are
cProfile's, with the profiler's overhead.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.sizes import parse_sizes

BATCH = 10_000


def build(path: Path, size: int, *, profile: bool) -> float:
    """Remember ``size`` corpus documents text-only into ``path``; return the seconds."""
    from embedmind import Store

    docs = list(iter_documents(size, CorpusSpec()))
    store = Store.open(str(path), embedder=None, synchronous="NORMAL")
    profiler = cProfile.Profile() if profile else None
    began = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    for start in range(0, size, BATCH):
        items = [
            {"id": str(start + i), "content": text}
            for i, text in enumerate(docs[start : start + BATCH])
        ]
        store.remember_many(items, batch_size=BATCH)
    if profiler is not None:
        profiler.disable()
    seconds = time.perf_counter() - began
    store.close()
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    return seconds


def query(path: Path, queries: int, rounds: int) -> None:
    """Profile ``rounds`` passes of the benchmark's questions (after one warm-up pass)."""
    from embedmind import Store

    store = Store.open(str(path), embedder=None)
    asked = make_queries(queries, CorpusSpec())
    for text in asked:
        store.recall(text, mode="text", k=10)
    assert store._lexical is not None  # a SQLite store
    tally = store._lexical.tally  # the engine's own counter, for this report only
    before = (tally.queries, tally.scored, tally.skipped)
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.enable()
    for _ in range(rounds):
        for text in asked:
            store.recall(text, mode="text", k=10)
    profiler.disable()
    elapsed = time.perf_counter() - began
    n = tally.queries - before[0]
    print(
        f"{rounds * len(asked)} queries, {1e3 * elapsed / (rounds * len(asked)):.3f} ms each "
        f"(profiled); blocks per query: {(tally.scored - before[1]) / n:.1f} scored, "
        f"{(tally.skipped - before[2]) / n:.1f} skipped"
    )
    store.close()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(35)


def main(argv: list[str] | None = None) -> None:
    """Parse the options and profile."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k")
    parser.add_argument("--store", type=Path, default=None, help="keep the store here")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", action="store_true", help="profile the ingest instead")
    args = parser.parse_args(argv)
    size = parse_sizes(args.size)[0]
    with tempfile.TemporaryDirectory(prefix="embedmind-profile-") as tmp:
        path = args.store or Path(tmp) / "profile.mind"
        if args.build or not path.exists():
            seconds = build(path, size, profile=args.build)
            print(f"built {size:,} documents in {seconds:.1f} s")
        if not args.build:
            query(path, args.queries, args.rounds)


if __name__ == "__main__":
    main()
