"""``embedmind bench ingest-compare``: bulk ingest beside its floors, and a baseline tree.

Per size, in this order, each store fresh and each engine in its own child
process (so neither warms the other's caches):

- *vectors given*: ``remember_many`` of the seeded chat corpus with
  embedding-like vectors (:mod:`.vectordata`) in calls of 10,000, then the
  first recall (hybrid, which waits for whatever vector-index work the writes
  left behind), then 20 warm recalls (their p50); by this tree, then, with
  ``--baseline``, by another checkout (imported from its directory, ahead of
  any editable install);
- *raw usearch*: ``Index.add`` of the same vectors with the store's index
  settings (cos, f16, M 16, ef_add 128) on every core, with usearch's
  default thread count and with the store's (more threads than cores): the
  faster is the floor;
- *text only* (``embedder=None``): the same texts, by both trees;
- *tantivy*: building a tantivy index of the same texts (when installed);
- *default batches*: the same texts, text only, in one ``remember_many``
  call at its default batch size, as an application calls it (by both
  trees: the loads above pass batches of 10,000).

Ratios: end-to-end seconds (ingest plus first recall) over the raw usearch
build (target <= 1.5), text-only seconds over tantivy's (target <= 10), the
first recall over the warm p50 (target <= 2), the default batches' load
over the batches of 10,000, and the baseline over this tree. Each child
also reports its store's size on disk after closing and its peak RSS,
beside the RSS it held before opening the store (the corpus and the vectors
it loaded), and what the first recall and the warm ones read from the disk
rather than the page cache (``ru_inblock``). A first recall that read from
the disk paid for pages the kernel dropped during the load: on a machine
that pages out file pages untouched for a minute (as a DAMON ``pageout``
scheme does), some of the pages a long load wrote first are gone by its end.

Expected duration on 2 cores: 100k in about 1.5 minutes before the
default-batch load was added, plus the baseline's loads with ``--baseline``
(100k with a baseline and the default-batch loads: 5.8 minutes on a slow
day); 1M in 14 minutes on a quiet machine before the default-batch load
(29 on an earlier, slower tree), mostly the vectors-given load and two raw
builds of a million vectors.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import embedmind
from embedmind.backend.sqlite.hnsw import ADD_THREADS
from embedmind.errors import InvalidInputError
from embedmind_bench import scaling
from embedmind_bench.corpus import CorpusSpec, iter_documents
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label
from embedmind_bench.vectordata import mixed_vectors

BENCH_ROOT = Path(__file__).resolve().parents[1]
"""The directory holding this ``embedmind_bench``, for the children's imports."""
THIS_TREE = Path(embedmind.__file__).resolve().parents[1]
"""The directory holding the ``embedmind`` this process imports: the tree under test."""
MODES = ("vectors", "text", "default")
"""The loads each tree runs per size (see the module docstring), in run order."""
WARM = 20
"""Warm recalls after the first (the child asks question ``i % queries`` for the i-th)."""


@dataclass
class Options:
    """How to run the comparison.

    Attributes:
        sizes: Store sizes, in run order (each a fresh store per engine).
        queries: Distinct questions of the first and warm recalls.
        seed: Seed of the corpus and of the embedding-like vectors.
        baseline: Root of another checkout to run beside this tree (optional).
        workdir: Where stores and inputs go (a temporary directory when ``None``).
    """

    sizes: list[int] = field(default_factory=lambda: [100_000])
    queries: int = WARM + 1
    seed: int = CorpusSpec().seed
    baseline: Path | None = None
    workdir: Path | None = None


PRELUDE = r"""
import sys
# The tree under test comes first, ahead of an editable install's import hook
# (which would otherwise resolve embedmind to the installed checkout).
sys.meta_path[:] = [
    f for f in sys.meta_path if "editable" not in str(getattr(f, "__module__", "")).lower()
]
sys.path.insert(0, sys.argv.pop(1))
# This run's own embedmind_bench (the corpus), wherever it is installed; after the tree.
sys.path.append(sys.argv.pop(1))
"""

CHILD = r"""
import json, resource, statistics, sys, time
import numpy as np
import embedmind
from embedmind_bench.corpus import CorpusSpec, iter_documents
from embedmind_bench.machine import disk_read_kb
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.model import Draft
from embedmind.store import Store

mode, size, seed, vec_path, query_path, store_path, warm_n = sys.argv[1:8]
size, seed = int(size), int(seed)
texts = list(iter_documents(size, CorpusSpec(seed=seed)))
vectors = np.load(vec_path)[:size] if mode == "vectors" else None
queries = json.load(open(query_path))
qvecs = np.load(vec_path.replace(".npy", "-q.npy"))
dims = 0 if vectors is None else vectors.shape[1]
inputs_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the store
store = Store.open(store_path, embedder=HashingEmbedder(dims) if dims else None,
                   synchronous="NORMAL")
seconds = 0.0
calls = [(0, size, None)] if mode == "default" else [
    (start, min(start + 10_000, size), 10_000) for start in range(0, size, 10_000)]
for start, end, batch_size in calls:
    drafts = [Draft(texts[i], id=f"d{i}", vector=None if vectors is None else vectors[i])
              for i in range(start, end)]
    began = time.perf_counter()
    if batch_size is None:  # the default, as an application calls it (an older tree
        store.remember_many(drafts)  # refuses batch_size=None: not passed at all)
    else:
        store.remember_many(drafts, batch_size=batch_size)
    seconds += time.perf_counter() - began

def ask(i):
    kwargs = {"vector": qvecs[i % len(qvecs)]} if dims else {}
    return store.recall(queries[i % len(queries)], k=10, **kwargs)

before = disk_read_kb()
began = time.perf_counter()
ask(0)
first = time.perf_counter() - began
first_read_kb = disk_read_kb() - before
warm = []
for i in range(1, int(warm_n) + 1):
    began = time.perf_counter()
    ask(i)
    warm.append(time.perf_counter() - began)
warm_read_kb = disk_read_kb() - before - first_read_kb
began = time.perf_counter()
store.close()
closing = time.perf_counter() - began
print(json.dumps({"ingest_s": seconds, "first_recall_s": first,
                  "warm_p50_s": statistics.median(warm), "close_s": closing,
                  "first_recall_read_kb": first_read_kb, "warm_recalls_read_kb": warm_read_kb,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "inputs_rss_mb": inputs_rss_mb,
                  "embedmind": embedmind.__file__}))
"""


def _child(
    tree: Path, mode: str, size: int, seed: int, files: dict[str, Path], workdir: Path
) -> Any:
    store = workdir / f"{tree.name}-{mode}-{size}.mind"
    args = [mode, str(size), str(seed), str(files["vectors"]), str(files["queries"]), str(store),
            str(WARM)]  # fmt: skip
    done = subprocess.run(  # noqa: S603 - this interpreter, our own script
        [sys.executable, "-c", PRELUDE + CHILD, str(tree), str(BENCH_ROOT), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    disk = scaling.disk_bytes(store)  # after the child closed it
    for leftover in workdir.glob(f"{store.name}*"):
        leftover.unlink()
    if done.returncode:
        raise RuntimeError(f"{tree} {mode} {size}: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["disk_mb"] = disk / 1e6
    figures["end_to_end_s"] = figures["ingest_s"] + figures["first_recall_s"]
    figures["docs_per_s_end_to_end"] = size / figures["end_to_end_s"]
    return figures


def _raw_usearch(vectors: np.ndarray, threads: int) -> float:
    from usearch.index import Index

    index = Index(ndim=vectors.shape[1], metric="cos", dtype="f16", connectivity=16,
                  expansion_add=128)  # fmt: skip
    began = time.perf_counter()
    index.add(np.arange(len(vectors), dtype=np.uint64), vectors, threads=threads)
    return time.perf_counter() - began


def _raw_floor(vectors: np.ndarray) -> dict[str, float]:
    """The raw build with usearch's default (a thread per core) and with the store's thread count.

    The store adds on more threads than cores (``hnsw.ADD_THREADS``); either
    count has been the faster in some run, so the floor is the faster of the two.
    """
    per_core = _raw_usearch(vectors, threads=0)
    store_threads = _raw_usearch(vectors, threads=ADD_THREADS)
    return {
        "raw_usearch_per_core_s": per_core,
        f"raw_usearch_{ADD_THREADS}_threads_s": store_threads,
        "raw_usearch_s": min(per_core, store_threads),
    }


def _tantivy(texts: list[str], workdir: Path) -> float | None:
    try:
        from embedmind_bench.lexical_engines import TantivyEngine
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        try:
            engine = TantivyEngine(Path(tmp))
        except ImportError:
            return None
        began = time.perf_counter()
        engine.build(texts, lambda *_: None)
        seconds = time.perf_counter() - began
        engine.close()
    return seconds


def _check(options: Options) -> None:
    """Refuse a ``--baseline`` that is not a checkout before the run, not after the first size."""
    base = options.baseline
    if base is not None and not (base / "embedmind" / "__init__.py").is_file():
        raise InvalidInputError(
            "--baseline", f"{str(base)!r} holds no embedmind package; give another checkout's root"
        )


def _size(
    size: int, trees: dict[str, Path], options: Options, inputs: scaling.Shared, workdir: Path,
    files: dict[str, Path], progress: ProgressFactory,
) -> dict[str, Any]:  # fmt: skip
    """One size: every tree's children, the raw usearch floor and tantivy."""
    vectors = np.load(files["vectors"])[:size]
    texts = list(iter_documents(size, inputs.spec))
    bar = progress(f"ingest-compare {size_label(size)}", len(MODES) * len(trees) + 2)
    row: dict[str, Any] = {}
    for mode in MODES:
        for name, tree in trees.items():
            row[f"{name}.{mode}"] = _child(tree, mode, size, options.seed, files, workdir)
            bar.update(1)
        if mode == "vectors":
            row.update(_raw_floor(vectors))
            bar.update(1)
        elif mode == "text":
            row["tantivy_s"] = _tantivy(texts, workdir)
            bar.update(1)
    bar.close()
    return row


def _tree_ratios(row: dict[str, Any], tree: str) -> dict[str, float | None]:
    """One tree's figures over the floors: the raw usearch build, tantivy, its warm p50."""
    vectors, text, tantivy = row[f"{tree}.vectors"], row[f"{tree}.text"], row["tantivy_s"]
    return {
        "vectors.end_to_end/raw_usearch": vectors["end_to_end_s"] / row["raw_usearch_s"],
        "first_recall/warm_p50": vectors["first_recall_s"] / vectors["warm_p50_s"],
        "text.ingest/tantivy": text["ingest_s"] / tantivy if tantivy else None,
        "default.ingest/text.ingest": row[f"{tree}.default"]["ingest_s"] / text["ingest_s"],
    }


def _ratios(row: dict[str, Any]) -> dict[str, float | None]:
    """This tree's ratios, and with a baseline, the baseline's over this tree's and the floor."""
    ratios = _tree_ratios(row, "this")
    if "baseline.vectors" in row:
        for mode in MODES:
            ratios[f"{mode}.end_to_end.baseline/this"] = (
                row[f"baseline.{mode}"]["end_to_end_s"] / row[f"this.{mode}"]["end_to_end_s"]
            )
        ratios["vectors.baseline_end_to_end/raw_usearch"] = _tree_ratios(row, "baseline")[
            "vectors.end_to_end/raw_usearch"
        ]
    return ratios


def _table(figures: dict[str, Any], trees: dict[str, Path]) -> Table:
    table = Table(
        "bulk ingest beside a raw usearch build and tantivy (each engine in its own process)",
        ["size", "tree", "vectors: end to end s", "÷ raw usearch", "first ÷ warm p50",
         "first recall's disk reads KB", "text only s", "÷ tantivy", "default batches s",
         "÷ text only", "disk MB (vectors)", "peak RSS MB (vectors)"],
    )  # fmt: skip
    for label, row in figures.items():
        for name in trees:
            vec, ratios = row[f"{name}.vectors"], _tree_ratios(row, name)
            table.add(
                label,
                name,
                fmt(vec["end_to_end_s"], ".2f"),
                fmt(ratios["vectors.end_to_end/raw_usearch"], ".2f"),
                fmt(ratios["first_recall/warm_p50"], ".2f"),
                fmt(vec["first_recall_read_kb"], ",.0f"),
                fmt(row[f"{name}.text"]["ingest_s"], ".2f"),
                fmt(ratios["text.ingest/tantivy"], ".2f"),
                fmt(row[f"{name}.default"]["ingest_s"], ".2f"),
                fmt(ratios["default.ingest/text.ingest"], ".2f"),
                fmt(vec["disk_mb"], ",.0f"),
                fmt(vec["peak_rss_mb"], ",.0f"),
            )
        table.notes.append(
            f"{label}: raw usearch {row['raw_usearch_s']:.2f} s, the faster of "
            f"{row['raw_usearch_per_core_s']:.2f} s (a thread per core) and "
            f"{row[f'raw_usearch_{ADD_THREADS}_threads_s']:.2f} s ({ADD_THREADS} threads, "
            f"as the store adds); tantivy {fmt(row['tantivy_s'], '.3f')} s"
        )
    table.notes.append(
        "targets: vectors ÷ raw usearch <= 1.5, text ÷ tantivy <= 10, first ÷ warm <= 2"
    )
    return table


def run(options: Options, *, progress: ProgressFactory = silent) -> Outcome:
    """Measure every size (see the module docstring).

    Args:
        options: Sizes, seed, the baseline checkout.
        progress: Progress bar factory.

    Returns:
        Figures per size, ratios and the table.

    Raises:
        InvalidInputError: When ``baseline`` is not a checkout of embedmind.
    """
    _check(options)
    trees = {"this": THIS_TREE} | ({"baseline": options.baseline} if options.baseline else {})
    outcome = Outcome()
    sizes: dict[str, Any] = {}
    inputs = scaling.shared(
        scaling.Options(sizes=options.sizes, queries=options.queries, seed=options.seed), None
    )
    with tempfile.TemporaryDirectory(prefix="embedmind-compare-", dir=options.workdir) as tmp:
        workdir = Path(tmp)
        files = {"vectors": workdir / "vectors.npy", "queries": workdir / "queries.json"}
        np.save(files["vectors"], mixed_vectors(inputs.base, max(options.sizes), seed=options.seed))
        np.save(workdir / "vectors-q.npy", inputs.query_vectors)
        files["queries"].write_text(json.dumps(inputs.queries))
        for size in options.sizes:
            row = _size(size, trees, options, inputs, workdir, files, progress)
            row["ratios"] = _ratios(row)
            sizes[size_label(size)] = row
    for label, row in sizes.items():
        outcome.ratios |= {f"{label}.{name}": value for name, value in row["ratios"].items()}
        if row["tantivy_s"] is None:
            outcome.skipped["tantivy"] = 'not installed: pip install "embedmind-bench[peers]"'
    outcome.figures = {"sizes": sizes, "trees": {name: str(t) for name, t in trees.items()}}
    outcome.tables = [_table(sizes, trees)]
    return outcome
