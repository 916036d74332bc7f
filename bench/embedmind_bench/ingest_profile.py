"""Where ``remember_many`` spends its time: a cProfile of a vectors-given bulk load.

Run it as ``python -m embedmind_bench.ingest_profile`` (``--size 30000
--batch 1000`` by default). It fills a fresh store with the seeded chat
corpus and embedding-like vectors (:mod:`.vectordata`, as ``bench ingest``
does), profiles every ``remember_many`` call plus the first recall after the
load (which waits for whatever vector-index work the writes left behind),
and prints the split by the parts the bulk path is made of:

- *postings*: the BM25 index maintenance (``LexicalIndex.add`` and below);
- *hnsw*: adding to the usearch graph (building, extending, replaying) and
  writing or loading its file;
- *drafts*: validating drafts and the given vectors;
- *inserts*: the memory, tag and vector rows;
- *other*: the rest (SQL outside those, the commit path, the recall itself).

A part's time is the cumulative time of its entry functions, chosen so none
calls another's.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

from embedmind.model import Draft
from embedmind.store import Store
from embedmind_bench import scaling
from embedmind_bench.corpus import iter_documents
from embedmind_bench.vectordata import mixed_vectors

PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "postings": (("lexical/index.py", "add"),),
    "hnsw": (
        ("usearch/index.py", "add"),
        ("hnsw.py", "_write_file"),
        ("hnsw.py", "_restore"),
        ("hnsw.py", "_serialise"),
    ),
    "drafts": (
        ("drafts.py", "prepare"),
        ("drafts.py", "coerce_draft"),
        ("adapt.py", "normalized"),
        ("batch_drafts.py", "unit_rows"),
    ),
    "inserts": (
        ("records.py", "insert_many"),
        ("vector_rows.py", "add"),
        ("vector_rows.py", "add_many"),
    ),
}
"""Each part's entry functions: ``(file name suffix, function name)``."""


def _cumulative(stats: pstats.Stats, entries: tuple[tuple[str, str], ...]) -> float:
    total = 0.0
    raw = stats.stats  # type: ignore[attr-defined]  # pstats' documented-by-use table
    for (filename, _, name), (_, _, _, cumulative, _) in raw.items():
        if any(filename.endswith(f) and name == fn for f, fn in entries):
            total += cumulative
    return total


def profile(size: int, batch: int, workdir: Path, top: int) -> dict[str, float]:
    """Fill a fresh store under cProfile and return seconds per part (and ``total``)."""
    options = scaling.Options(queries=2)
    inputs = scaling.shared(options, None)
    docs = list(iter_documents(size, inputs.spec))
    vectors = mixed_vectors(inputs.base, size, seed=options.seed)
    drafts = [Draft(text, id=f"d{i}", vector=vectors[i]) for i, text in enumerate(docs)]
    store = Store.open(workdir / "profile.mind", embedder=inputs.embedder, synchronous="NORMAL")
    profiler = cProfile.Profile()
    started = time.perf_counter()
    try:
        profiler.enable()
        for start in range(0, size, batch):
            store.remember_many(drafts[start : start + batch], batch_size=batch)
        store.recall(inputs.queries[0], k=10, vector=inputs.query_vectors[0])
        profiler.disable()
    finally:
        store.close()
    wall = time.perf_counter() - started
    stats = pstats.Stats(profiler)
    split = {part: _cumulative(stats, entries) for part, entries in PARTS.items()}
    total = stats.total_tt  # type: ignore[attr-defined]
    split["other"] = max(total - sum(split.values()), 0.0)
    split["total"] = total
    split["wall"] = wall
    if top:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
        print(out.getvalue())
    return split


def main(argv: list[str] | None = None) -> None:
    """Parse the options, profile, print the split."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--top", type=int, default=0, help="also print the top N functions")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="embedmind-profile-") as tmp:
        split = profile(args.size, args.batch, Path(tmp), args.top)
    total = split["total"]
    print(f"remember_many of {args.size:,} in batches of {args.batch:,}, then one recall")
    rate = args.size / split["wall"]
    print(f"wall {split['wall']:.1f} s ({rate:,.0f} docs/s), profiled {total:.1f} s")
    for part in (*PARTS, "other"):
        print(f"  {part:9s} {split[part]:7.2f} s  {100 * split[part] / total:5.1f} %")


if __name__ == "__main__":
    main()
