"""``embedmind bench ingest``: ingest throughput at each size, and how it grows.

Per size, in a fresh store (:mod:`.scaling`):

- *vectors given*: ``remember_many`` of every memory with an embedding-like
  vector, in transactions of 10,000 (documents/s, with and without the
  first recall's index catch-up);
- *with embedding*: ``embed_sample`` more corpus texts (2,000 by default)
  written without vectors, so the store embeds them, into the full store;
  beside it the raw embedder's rate on the same texts. Their ratio
  is the store's overhead over embedding, the figure that matters since
  embedding dominates (target >= 0.9). On a shared machine one pair of
  timings a few seconds long moved this ratio from 0.73 to 0.98 between two
  rounds of one process, so it is measured in ``embed_rounds`` rounds (3),
  each on new texts, raw first in even rounds and the store first in odd
  ones; the figure is the median round's ratio, every round is reported,
  and the store grows by ``embed_rounds * embed_sample`` memories meanwhile;
- *first recall*: the first hybrid recall after the load (it waits for
  whatever index work the writes left behind) over the p50 of
  :data:`WARM_RECALLS` recalls after it (target <= 2);
- *contention* (:mod:`.ingest_contention`): a fresh store bulk-loaded at the
  default batch size while a second writer calls ``remember`` every 50 ms
  and a reader recalls: p50/p99/max of each (target: writer p99 <= 500 ms).

Growth: the ratio of per-document cost between consecutive sizes and its
exponent (0 = constant per document, i.e. linear total cost).

Expected duration on 2 cores: 10k in about 1 minute; 10k,100k,1M in 20-40
minutes (the 1M fill dominates: 1,000-1,500 memories/s with the index at
50k on a busy machine, slowly falling as the graph grows).
"""

from __future__ import annotations

import functools
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from embedmind.store import Store
from embedmind_bench import ingest_contention, metrics, scaling
from embedmind_bench.corpus import iter_documents
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label
from embedmind_bench.vectordata import Embedder

Options = scaling.Options
WARM_RECALLS = 20


def _with_embedding(
    store: Store, size: int, options: Options, inputs: scaling.Shared
) -> dict[str, Any]:
    """Time the raw embedder and the store embedding new texts itself, in alternated rounds."""
    sample, rounds = options.embed_sample, options.embed_rounds
    texts = list(iter_documents(size + sample * rounds, inputs.spec))[size:]
    inputs.embedder.embed_documents(texts[:32])  # warm the worker threads first
    seconds: dict[str, list[float]] = {"raw": [], "store": []}
    for r in range(rounds):
        batch = texts[r * sample : (r + 1) * sample]  # the same texts for both, new each round
        work: dict[str, Callable[[], object]] = {
            "raw": functools.partial(inputs.embedder.embed_documents, batch),
            "store": functools.partial(store.remember_many, batch, batch_size=256),
        }
        for side in ("raw", "store") if r % 2 == 0 else ("store", "raw"):
            started = time.perf_counter()
            work[side]()
            seconds[side].append(time.perf_counter() - started)
    raw_s, store_s = seconds["raw"], seconds["store"]
    ratios = [r / s for r, s in zip(raw_s, store_s, strict=True)]
    return {
        "sample": sample,
        "rounds": rounds,
        "raw_embedder_texts_per_s": sample / statistics.median(raw_s),
        "store_texts_per_s": sample / statistics.median(store_s),
        "store/raw": statistics.median(ratios),
        "store/raw_per_round": ratios,
    }


def _size(
    size: int, options: Options, inputs: scaling.Shared, workdir: Path, progress: ProgressFactory
) -> dict[str, Any]:
    """Fill a store of ``size`` memories and measure both kinds of ingest."""
    path = workdir / f"ingest-{size}.mind"
    store, given = scaling.fill(path, size, inputs, options.seed, progress)
    try:
        given |= _warm_recall(store, inputs, given["index_catchup_s"])
        embedded = (
            _with_embedding(store, size, options, inputs)
            if options.embed_sample > 0 and options.embed_rounds > 0
            else None
        )
    finally:
        store.close()
    disk = scaling.disk_bytes(path)
    for leftover in workdir.glob(f"{path.name}*"):
        leftover.unlink()
    contended = workdir / f"contention-{size}.mind"
    contention = ingest_contention.measure(contended, size, inputs, options.seed)
    for leftover in workdir.glob(f"{contended.name}*"):
        leftover.unlink()
    return {
        "size": size,
        "vectors_given": given,
        "with_embedding": embedded,
        "contention": contention,
        "disk_bytes": disk,
    }


def _warm_recall(store: Store, inputs: scaling.Shared, first: float) -> dict[str, Any]:
    """The p50 of warm hybrid recalls after the first, and the first's ratio to it."""
    seconds = []
    for i in range(1, WARM_RECALLS + 1):
        q = i % len(inputs.queries)
        began = time.perf_counter()
        store.recall(inputs.queries[q], k=10, vector=inputs.query_vectors[q])
        seconds.append(time.perf_counter() - began)
    warm = metrics.percentile_ms(seconds, 50)
    return {
        "warm_recall_p50_ms": warm,
        "first_recall/warm_p50": metrics.ratio(first * 1e3, warm),
    }


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
            "store/raw (median)",
            "store/raw per round",
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
            " ".join(fmt(r, ".2f") for r in emb.get("store/raw_per_round", ())) or "-",
            fmt(f["disk_bytes"] / 1e6, ".1f"),
        )
    table.notes.append(
        "target: store/raw >= 0.9 (embedding dominates ingest); texts/s are the median "
        "round's, store/raw the median of the rounds' ratios (raw and store alternated)"
    )
    tables = [table, _recall_table(figures), _contention_table(figures)]
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


def _recall_table(figures: dict[str, Any]) -> Table:
    table = Table(
        "first recall after remember_many",
        ["size", "first recall ms", "warm p50 ms", "first / warm p50",
         "first recall's disk reads KB"],
    )  # fmt: skip
    for label, f in figures.items():
        given = f["vectors_given"]
        table.add(
            label,
            fmt(given["index_catchup_s"] * 1e3, ".1f"),
            fmt(given.get("warm_recall_p50_ms"), ".1f"),
            fmt(given.get("first_recall/warm_p50"), ".2f"),
            fmt(given.get("index_catchup_read_kb"), ",.0f"),
        )
    table.notes.append("target: first / warm p50 <= 2")
    return table


def _contention_table(figures: dict[str, Any]) -> Table:
    table = Table(
        "a second writer and a reader during remember_many (default batch size)",
        ["size", "bulk docs/s", "who", "p50 ms", "p99 ms", "max ms (worst stall)", "calls"],
    )
    for label, f in figures.items():
        c = f["contention"]
        for who in ("writer", "reader"):
            s = c[who]
            table.add(
                label,
                fmt(c["bulk_docs_per_s"], ",.0f"),
                who,
                fmt(s["p50_ms"], ".1f"),
                fmt(s["p99_ms"], ".1f"),
                fmt(s["max_ms"], ".1f"),
                str(s["samples"]),
            )
    table.notes.append(
        f"writer: remember every {ingest_contention.WRITER_EVERY * 1e3:.0f} ms; "
        f"target p99 <= {ingest_contention.WAIT_TARGET_MS:.0f} ms; reader: hybrid recall"
    )
    return table


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
        outcome.ratios[f"{label}.first_recall/warm_p50"] = f["vectors_given"].get(
            "first_recall/warm_p50"
        )
        outcome.ratios[f"{label}.contention.writer_p99_ms"] = f["contention"]["writer"]["p99_ms"]
    for key, g in growth.items():
        outcome.ratios[f"growth.{key}.seconds_per_doc"] = g["ratio"]
    outcome.tables = _tables(outcome.figures, growth)
    outcome.figures = {"sizes": outcome.figures, "growth": growth}
    return outcome
