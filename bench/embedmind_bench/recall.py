"""``embedmind bench recall``: recall latency per mode at each size, and how it grows.

Per size, a fresh store (:mod:`.scaling`) answers the same questions,
round-robin, in four ways through ``Store.recall(k=10)``:

- ``text``: BM25 only;
- ``vector``: the HNSW channel, the question's vector given;
- ``hybrid``: both channels fused, the vector given;
- ``hybrid+embed``: hybrid from the text alone, query embedding included
  (what a caller pays end to end).

Growth: the p50 ratio between consecutive sizes per mode, and its exponent
(0 = flat, 0.5 = square root, 1 = linear in the store size).

Expected duration on 2 cores: 10k in about 1 minute; 10k,100k,1M in 20-40
minutes (filling the 1M store dominates: 1,000-1,500 memories/s with the
index at 50k on a busy machine, slowly falling as the graph grows).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from embedmind.store import Store
from embedmind_bench import metrics, scaling
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label
from embedmind_bench.timing import Searcher, round_robin
from embedmind_bench.vectordata import Embedder

Options = scaling.Options
MODES = ("text", "vector", "hybrid", "hybrid+embed")


def _searchers(store: Store, inputs: scaling.Shared) -> dict[str, Searcher]:
    """One searcher per mode, each answering query ``i``."""
    q, qv = inputs.queries, inputs.query_vectors
    return {
        "text": lambda i: store.recall(q[i], k=10, mode="text").ids,
        "vector": lambda i: store.recall(q[i], k=10, mode="vector", vector=qv[i]).ids,
        "hybrid": lambda i: store.recall(q[i], k=10, mode="hybrid", vector=qv[i]).ids,
        "hybrid+embed": lambda i: store.recall(q[i], k=10, mode="hybrid").ids,
    }


def _size(
    size: int, options: Options, inputs: scaling.Shared, workdir: Path, progress: ProgressFactory
) -> dict[str, Any]:
    """Fill a store of ``size`` memories and time every mode."""
    path = workdir / f"recall-{size}.mind"
    store, fill = scaling.fill(path, size, inputs, options.seed, progress)
    try:
        bar = progress(f"queries {size_label(size)}", len(inputs.queries))
        runs = round_robin(
            _searchers(store, inputs), len(inputs.queries), warmup=options.warmup, bar=bar
        )
        bar.close()
    finally:
        store.close()
    for leftover in workdir.glob(f"{path.name}*"):
        leftover.unlink()
    modes = {}
    for mode, found in runs.items():
        modes[mode] = {"error": found.error} if found.error else metrics.latency(found.seconds)
    return {"size": size, "queries": len(inputs.queries), "fill": fill, "modes": modes}


def _growth(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """p50 growth per mode between consecutive sizes."""
    out: dict[str, dict[str, Any]] = {}
    for small, large in itertools.pairwise(figures.values()):
        key = f"{size_label(small['size'])}->{size_label(large['size'])}"
        out[key] = {
            mode: metrics.growth(
                (small["size"], small["modes"][mode].get("p50_ms")),
                (large["size"], large["modes"][mode].get("p50_ms")),
            )
            for mode in MODES
        }
    return out


def _tables(figures: dict[str, Any], growth: dict[str, Any]) -> list[Table]:
    """Latency per size and mode, then the growth table."""
    header = ["size", *(f"{m} p50/p95 ms" for m in MODES), "fill docs/s"]
    table = Table("recall latency, k = 10, fresh store per size", header)
    for label, f in figures.items():
        cells = [
            f"{fmt(f['modes'][m].get('p50_ms'), '.2f')} / {fmt(f['modes'][m].get('p95_ms'), '.2f')}"
            for m in MODES
        ]
        table.add(label, *cells, fmt(f["fill"]["docs_per_s_incl_index"], ",.0f"))
    table.notes.append("target: hybrid+embed p50 <= 10 ms at 100k")
    tables = [table]
    if growth:
        grown = Table("recall p50 growth (ratio, exponent)", ["sizes", *MODES])
        for key, per_mode in growth.items():
            grown.add(
                key,
                *(
                    f"{fmt(g['ratio'], '.2f')}x, {fmt(g['exponent'], '.2f')}"
                    for g in per_mode.values()
                ),
            )
        grown.notes.append("exponent: 0 flat, 0.5 square root, 1 linear in the store size")
        tables.append(grown)
    return tables


def run(
    options: Options, *, embedder: Embedder | None = None, progress: ProgressFactory = silent
) -> Outcome:
    """Measure recall p50/p95 per mode at every size.

    Args:
        options: Sizes, queries, seed.
        embedder: The embedder (default: a new ``MiniLMEmbedder``).
        progress: Progress bar factory.

    Returns:
        Figures per size and mode, growth between sizes, ratios and tables.
    """
    inputs = scaling.shared(options, embedder)
    sizes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp:
        for size in options.sizes:
            sizes[size_label(size)] = _size(size, options, inputs, Path(tmp), progress)
    growth = _growth(sizes)
    outcome = Outcome(figures={"sizes": sizes, "growth": growth}, tables=_tables(sizes, growth))
    for label, f in sizes.items():
        p50 = {m: f["modes"][m].get("p50_ms") for m in MODES}
        outcome.ratios[f"{label}.p50.hybrid/text"] = metrics.ratio(p50["hybrid"], p50["text"])
        outcome.ratios[f"{label}.p50.hybrid/vector"] = metrics.ratio(p50["hybrid"], p50["vector"])
        outcome.ratios[f"{label}.p50.hybrid+embed/hybrid"] = metrics.ratio(
            p50["hybrid+embed"], p50["hybrid"]
        )
    for key, per_mode in growth.items():
        for mode, g in per_mode.items():
            outcome.ratios[f"growth.{key}.p50.{mode}"] = g["ratio"]
    return outcome
