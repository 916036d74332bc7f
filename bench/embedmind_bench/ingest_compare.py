"""Bulk ingest beside its floors and a baseline tree, side by side in one run.

Run it as ``python -m embedmind_bench.ingest_compare --sizes 10k,100k
--baseline /path/to/other/checkout``. Per size, in this order, each store
fresh and each engine in its own child process (so neither warms the other's
caches):

- *vectors given*: ``remember_many`` of the seeded chat corpus with
  embedding-like vectors (:mod:`.vectordata`) in calls of 10,000, then the
  first recall (hybrid, which waits for whatever vector-index work the writes
  left behind), then 20 warm recalls (their p50); by this tree, then by the
  baseline tree (imported from its directory, ahead of any editable install);
- *raw usearch*: ``Index.add`` of the same vectors with the store's index
  settings (cos, f16, M 16, ef_add 128) on every core, with usearch's
  default thread count and with the store's (more threads than cores): the
  faster is the floor;
- *text only* (``embedder=None``): the same texts, by both trees;
- *tantivy*: building a tantivy index of the same texts (when installed).

Ratios: end-to-end seconds (ingest plus first recall) over the raw usearch
build, text-only seconds over tantivy's, and this tree over the baseline.
Each child also reports its store's size on disk after closing and its peak
RSS, beside the RSS it held before opening the store (the corpus and the
vectors it loaded).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from embedmind_bench import scaling
from embedmind_bench.corpus import iter_documents
from embedmind_bench.sizes import parse_sizes, size_label
from embedmind_bench.vectordata import mixed_vectors

BENCH_ROOT = Path(__file__).resolve().parents[1]
"""The directory holding this ``embedmind_bench``, for the children's imports."""

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
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.model import Draft
from embedmind.store import Store

mode, size, seed, vec_path, query_path, store_path = sys.argv[1:7]
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
for start in range(0, size, 10_000):
    end = min(start + 10_000, size)
    drafts = [Draft(texts[i], id=f"d{i}", vector=None if vectors is None else vectors[i])
              for i in range(start, end)]
    began = time.perf_counter()
    store.remember_many(drafts, batch_size=10_000)
    seconds += time.perf_counter() - began

def ask(i):
    kwargs = {"vector": qvecs[i % len(qvecs)]} if dims else {}
    return store.recall(queries[i % len(queries)], k=10, **kwargs)

began = time.perf_counter()
ask(0)
first = time.perf_counter() - began
warm = []
for i in range(1, 21):
    began = time.perf_counter()
    ask(i)
    warm.append(time.perf_counter() - began)
began = time.perf_counter()
store.close()
closing = time.perf_counter() - began
print(json.dumps({"ingest_s": seconds, "first_recall_s": first,
                  "warm_p50_s": statistics.median(warm), "close_s": closing,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "inputs_rss_mb": inputs_rss_mb,
                  "embedmind": embedmind.__file__}))
"""


def _child(
    tree: Path, mode: str, size: int, seed: int, files: dict[str, Path], workdir: Path
) -> Any:
    store = workdir / f"{tree.name}-{mode}-{size}.mind"
    args = [mode, str(size), str(seed), str(files["vectors"]), str(files["queries"]), str(store)]
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
    from embedmind.backend.sqlite.hnsw import ADD_THREADS

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


def run(sizes: list[int], baseline: Path | None, workdir: Path) -> dict[str, Any]:
    """Measure every size; return the figures and ratios (see the module docstring)."""
    here = Path(__file__).resolve().parents[2]
    options = scaling.Options(sizes=sizes, queries=21)
    inputs = scaling.shared(options, None)
    files = {"vectors": workdir / "vectors.npy", "queries": workdir / "queries.json"}
    np.save(files["vectors"], mixed_vectors(inputs.base, max(sizes), seed=options.seed))
    np.save(workdir / "vectors-q.npy", inputs.query_vectors)
    files["queries"].write_text(json.dumps(inputs.queries))
    trees = {"this": here} | ({"baseline": baseline} if baseline else {})
    out: dict[str, Any] = {}
    for size in sizes:
        vectors = np.load(files["vectors"])[:size]
        texts = list(iter_documents(size, inputs.spec))
        row: dict[str, Any] = {}
        for mode in ("vectors", "text"):
            for name, tree in trees.items():
                row[f"{name}.{mode}"] = _child(tree, mode, size, options.seed, files, workdir)
            if mode == "vectors":
                row.update(_raw_floor(vectors))
            else:
                row["tantivy_s"] = _tantivy(texts, workdir)
        ratios = {
            "vectors: this end-to-end / raw usearch": row["this.vectors"]["end_to_end_s"]
            / row["raw_usearch_s"],
            "first recall / warm p50 (vectors)": row["this.vectors"]["first_recall_s"]
            / row["this.vectors"]["warm_p50_s"],
        }
        if row["tantivy_s"]:
            ratios["text: this ingest / tantivy build"] = (
                row["this.text"]["ingest_s"] / row["tantivy_s"]
            )
        if baseline:
            for mode in ("vectors", "text"):
                ratios[f"{mode}: baseline end-to-end / this"] = (
                    row[f"baseline.{mode}"]["end_to_end_s"] / row[f"this.{mode}"]["end_to_end_s"]
                )
            ratios["vectors: baseline end-to-end / raw usearch"] = (
                row["baseline.vectors"]["end_to_end_s"] / row["raw_usearch_s"]
            )
        row["ratios"] = ratios
        out[size_label(size)] = row
        print(json.dumps({size_label(size): row}, indent=1), flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    """Parse the options and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout's root")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="embedmind-compare-") as tmp:
        figures = run(parse_sizes(args.sizes), args.baseline, Path(tmp))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
