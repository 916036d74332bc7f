"""``embedmind bench ingest``: ingest throughput at each size, and how it grows.

Per size, in a fresh store (:mod:`.scaling`):

- *vectors given*: ``remember_many`` of every memory with an embedding-like
  vector, in transactions of 10,000 (documents/s, with and without the
  first recall's index catch-up);
- *with embedding*: ``embed_sample`` more corpus texts (2,000 by default)
  written without vectors, so the store embeds them, into the full store;
  beside it the raw embedder's rate on the same texts, timed just before.
  Their ratio is the store's overhead over embedding, the figure that
  matters since embedding dominates (target >= 0.85).

Growth: the ratio of per-document cost between consecutive sizes and its
exponent (0 = constant per document, i.e. linear total cost).

Expected duration on 2 cores: 10k in about 1 minute; 10k,100k,1M in 20-40
minutes (the 1M fill dominates: 1,000-1,500 memories/s with the index at
50k on a busy machine, slowly falling as the graph grows).
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from embedmind.store import Store
from embedmind_bench import metrics, scaling
from embedmind_bench.corpus import iter_documents
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label
from embedmind_bench.vectordata import Embedder

Options = scaling.Options


def _with_embedding(store: Store, size: int, sample: int, inputs: scaling.Shared) -> dict[str, Any]:
    """Time the raw embedder, then the store embedding the same new texts itself."""
    texts = list(iter_documents(size + sample, inputs.spec))[size:]
    inputs.embedder.embed_documents(texts[:32])  # warm the worker threads first
    started = time.perf_counter()
    inputs.embedder.embed_documents(texts)
    raw = sample / (time.perf_counter() - started)
    started = time.perf_counter()
    store.remember_many(texts, batch_size=256)
    stored = sample / (time.perf_counter() - started)
    return {
        "sample": sample,
        "raw_embedder_texts_per_s": raw,
        "store_texts_per_s": stored,
        "store/raw": stored / raw,
    }


def _size(
    size: int, options: Options, inputs: scaling.Shared, workdir: Path, progress: ProgressFactory
) -> dict[str, Any]:
    """Fill a store of ``size`` memories and measure both kinds of ingest."""
    path = workdir / f"ingest-{size}.mind"
    store, given = scaling.fill(path, size, inputs, options.seed, progress)
    try:
        embedded = (
            _with_embedding(store, size, options.embed_sample, inputs)
            if options.embed_sample
            else None
        )
    finally:
        store.close()
    figures = {
        "size": size,
        "vectors_given": given,
        "with_embedding": embedded,
        "disk_bytes": scaling.disk_bytes(path),
    }
    for leftover in workdir.glob(f"{path.name}*"):
        leftover.unlink()
    return figures


def _growth(figures: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per-document write cost growth between consecutive sizes."""
    out = {}
    for small, large in itertools.pairwise(figures.values()):
        key = f"{size_label(small['size'])}->{size_label(large['size'])}"
        out[key] = metrics.growth(
            (small["size"], 1 / small["vectors_given"]["docs_per_s_incl_index"]),
            (large["size"], 1 / large["vectors_given"]["docs_per_s_incl_index"]),
        )
    return out


def _tables(figures: dict[str, Any], growth: dict[str, Any]) -> list[Table]:
    """The per-size ingest table and the growth table."""
    table = Table(
        "ingest, fresh store per size",
        [
            "size",
            "docs/s (vectors given)",
            "index catch-up s",
            "docs/s incl. index",
            "texts/s embedding",
            "raw embedder texts/s",
            "store/raw",
            "disk MB",
        ],
    )
    for label, f in figures.items():
        given, emb = f["vectors_given"], f["with_embedding"] or {}
        table.add(
            label,
            fmt(given["docs_per_s"], ",.0f"),
            fmt(given["index_catchup_s"], ".2f"),
            fmt(given["docs_per_s_incl_index"], ",.0f"),
            fmt(emb.get("store_texts_per_s"), ",.0f"),
            fmt(emb.get("raw_embedder_texts_per_s"), ",.0f"),
            fmt(emb.get("store/raw"), ".2f"),
            fmt(f["disk_bytes"] / 1e6, ".1f"),
        )
    table.notes.append("target: store/raw >= 0.85 (embedding dominates ingest)")
    tables = [table]
    if growth:
        grown = Table(
            "ingest cost growth (seconds per document, incl. index)",
            ["sizes", "cost ratio", "exponent"],
        )
        for key, g in growth.items():
            grown.add(key, fmt(g["ratio"], ".2f"), fmt(g["exponent"], ".2f"))
        grown.notes.append("exponent 0: constant cost per document (total cost linear in size)")
        tables.append(grown)
    return tables


def run(
    options: Options, *, embedder: Embedder | None = None, progress: ProgressFactory = silent
) -> Outcome:
    """Measure ingest throughput at every size, vectors given and with embedding.

    Args:
        options: Sizes, seed, embedding sample.
        embedder: The embedder (default: a new ``MiniLMEmbedder``).
        progress: Progress bar factory.

    Returns:
        Figures per size, growth between sizes, ratios and tables.
    """
    inputs = scaling.shared(options, embedder)
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp:
        for size in options.sizes:
            outcome.figures[size_label(size)] = _size(size, options, inputs, Path(tmp), progress)
    growth = _growth(outcome.figures)
    for label, f in outcome.figures.items():
        emb = f["with_embedding"] or {}
        outcome.ratios[f"{label}.with_embedding.store/raw_embedder"] = emb.get("store/raw")
    for key, g in growth.items():
        outcome.ratios[f"growth.{key}.seconds_per_doc"] = g["ratio"]
    outcome.tables = _tables(outcome.figures, growth)
    outcome.figures = {"sizes": outcome.figures, "growth": growth}
    return outcome
