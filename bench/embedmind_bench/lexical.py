"""``embedmind bench lexical``: the BM25 channel beside SQLite FTS5, tantivy and bm25s.

Every engine indexes the same seeded chat corpus and answers the same
questions round-robin (:mod:`.lexical_runner`). Figures per engine: build
documents/s, query p50/p95, on-disk size, and the mean overlap of its top 10
with every other engine's (BM25 variants differ in stemming, stop words and
idf smoothing, so overlap is a sanity check, not a gate). Ratios: p50 of each
engine over tantivy's and FTS5's.

Expected duration at 1M on 2 cores: about 10 minutes (FTS5 answers an OR
query in 0.4-0.7 s at that size and every query runs twice, warm-up included).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.lexical_engines import DEFAULT_ENGINES, ENGINES
from embedmind_bench.lexical_runner import (
    EngineResult,
    K,
    SizeResult,
    remove_indexes,
    run_size,
)
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label

BASELINES = ("tantivy", "fts5", "bm25s")
__all__ = ["ENGINES", "Options", "overlap", "ratio", "run"]


@dataclass
class Options:
    """How to run the lexical benchmark.

    Attributes:
        sizes: Document counts, in run order.
        queries: Questions per size.
        seed: Seed of the corpus.
        engines: Engines to run (keys of ``lexical_engines.ENGINES``).
        warmup: Untimed passes over all queries before the timed pass.
        workdir: Where index files go (a temporary directory when ``None``).
    """

    sizes: list[int] = field(default_factory=lambda: [10_000])
    queries: int = 200
    seed: int = CorpusSpec().seed
    engines: Sequence[str] = DEFAULT_ENGINES
    warmup: int = 1
    workdir: Path | None = None


def ratio(result: SizeResult, name: str, baseline: str) -> float | None:
    """Return ``p50(name) / p50(baseline)``, or ``None`` if either did not run.

    Args:
        result: One size's results.
        name: The engine in the numerator.
        baseline: The engine in the denominator.

    Returns:
        The ratio of median latencies.
    """
    a, b = result.engines.get(name), result.engines.get(baseline)
    if a is None or b is None or a.status != "ok" or b.status != "ok":
        return None
    return a.p50_ms / b.p50_ms


def overlap(result: SizeResult, name: str, baseline: str) -> float | None:
    """Return the mean of ``|top-K(name) ∩ top-K(baseline)| / K`` over queries.

    Args:
        result: One size's results.
        name: One engine.
        baseline: The other engine.

    Returns:
        The mean overlap in ``[0, 1]``, or ``None`` if either did not run.
    """
    a, b = result.engines.get(name), result.engines.get(baseline)
    if a is None or b is None or a.status != "ok" or b.status != "ok":
        return None
    pairs = list(zip(a.top_keys, b.top_keys, strict=False))
    if not pairs:
        return None
    return sum(len(set(x) & set(y)) for x, y in pairs) / (K * len(pairs))


def _engine_figures(result: SizeResult, engine: EngineResult) -> dict[str, Any]:
    """Every figure of one engine at one size, JSON-ready."""
    ok = engine.status == "ok"
    return {
        "status": engine.status,
        "reason": engine.reason,
        "settings": engine.settings,
        "build_s": engine.build_seconds,
        "build_docs_per_s": result.size / engine.build_seconds if engine.build_seconds else None,
        "index_bytes": engine.index_bytes,
        "p50_ms": engine.p50_ms if ok else None,
        "p95_ms": engine.p95_ms if ok else None,
        "disk_read_kb_per_query": _disk_per_query(engine) if ok else None,
        "overlap": {o: overlap(result, engine.name, o) for o in result.engines if o != engine.name},
    }


def _disk_per_query(engine: EngineResult) -> float | None:
    """What a timed query of ``engine`` read from the disk, on average (KB)."""
    return engine.disk_read_kb / len(engine.latencies_ns) if engine.latencies_ns else None


def _table(result: SizeResult) -> Table:
    """One size's side-by-side table."""
    header = ["engine", "build docs/s", "p50 ms", "p95 ms", "p50/tantivy", "p50/FTS5"]
    header += ["top10∩tantivy", "top10∩FTS5", "top10∩bm25s", "index MB", "disk reads KB/query"]
    table = Table(f"lexical, n = {result.size:,}, {result.queries} queries, top-{K}", header)
    for engine in result.engines.values():
        if engine.status != "ok":
            table.skip(engine.name, engine.reason, status=engine.status)
            continue
        rate = result.size / engine.build_seconds if engine.build_seconds else None
        table.add(
            engine.name,
            fmt(rate, ",.0f"),
            fmt(engine.p50_ms, ".3f"),
            fmt(engine.p95_ms, ".3f"),
            fmt(ratio(result, engine.name, "tantivy"), ".2f"),
            fmt(ratio(result, engine.name, "fts5"), ".4f"),
            *(fmt(overlap(result, engine.name, b), ".2f") for b in BASELINES),
            fmt(engine.index_bytes / 1e6, ".1f") if engine.index_bytes else "mem",
            fmt(_disk_per_query(engine), ".1f"),
        )
    table.notes.append("target: embedmind p50 / tantivy p50 <= 3 at 1M")
    table.notes += _lexical_notes(result)
    return table


def _lexical_notes(result: SizeResult) -> list[str]:
    """The BM25 tables of embedmind beside tantivy's index, and its blocks scored per query."""
    ours, tantivy = result.engines.get("embedmind"), result.engines.get("tantivy")
    if ours is None or ours.status != "ok":
        return []
    notes = []
    lexical = ours.settings.get("lexical_index_bytes")
    if lexical:
        vs = ""
        if tantivy is not None and tantivy.status == "ok" and tantivy.index_bytes:
            vs = f" = {lexical / tantivy.index_bytes:.2f}x tantivy's index"
        notes.append(f"embedmind lexical tables: {lexical / 1e6:.1f} MB{vs} (file: records too)")
    blocks = ours.settings.get("blocks_per_query")
    if blocks:
        notes.append(
            f"embedmind blocks per query: {blocks['scored']:.1f} scored, "
            f"{blocks['skipped']:.1f} skipped by block-max ({blocks['queries']} queries)"
        )
    return notes


def _record(outcome: Outcome, result: SizeResult) -> None:
    """Add one size's figures, ratios, table and skipped engines to ``outcome``."""
    label = size_label(result.size)
    outcome.figures[label] = {
        "size": result.size,
        "queries": result.queries,
        "engines": {n: _engine_figures(result, e) for n, e in result.engines.items()},
    }
    for name in result.engines:
        for base in BASELINES:
            if name != base:
                outcome.ratios[f"{label}.p50.{name}/{base}"] = ratio(result, name, base)
        if result.engines[name].status != "ok":
            outcome.skipped[f"{label}.{name}"] = (
                f"{result.engines[name].status}: {result.engines[name].reason}"
            )
    outcome.tables.append(_table(result))


def run(options: Options, *, progress: ProgressFactory = silent) -> Outcome:
    """Run the lexical benchmark at every size in ``options``.

    Args:
        options: Sizes, queries, seed, engines.
        progress: Progress bar factory.

    Returns:
        Figures per size and engine, p50 ratios, one table per size.
    """
    spec = CorpusSpec(seed=options.seed)
    queries = make_queries(options.queries, spec)
    outcome = Outcome(packages=("tantivy", "bm25s", "PyStemmer"))
    with tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp:
        for size in options.sizes:
            started = time.perf_counter()
            docs = list(iter_documents(size, spec))
            corpus_s = time.perf_counter() - started
            size_dir = Path(tmp) / f"lexical-{size}"
            result = run_size(
                docs,
                queries,
                options.engines,
                workdir=size_dir,
                warmup=options.warmup,
                progress=progress,
            )
            remove_indexes(size_dir)
            _record(outcome, result)
            outcome.figures[size_label(size)]["corpus_s"] = corpus_s
    return outcome
