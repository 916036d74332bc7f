"""``embedmind bench vector``: the vector channel beside raw usearch, hnswlib, faiss, numpy.

At each size, every engine indexes the same embedding-like vectors
(:mod:`.vectordata`; the store also gets the matching corpus texts, since a
memory always has content) and answers the same real question embeddings,
round-robin. Figures: build vectors/s, query p50/p95, and recall@10 against
numpy's exact top-10. The store's row times a whole recall; a second
round-robin times its vector channel alone (the recall's ``vector`` phase)
beside raw usearch again. The engines are built in turn, then each one's
files are read once before the first timed query. Every HNSW searches with
the engine's own breadth at that size
(``embedmind.backend.sqlite.hnsw.default_ef``). Below 20k vectors the store
scans exactly instead of walking its graph (``EXACT_BELOW``), so at 10k its
recall is 1.0 by design.

Expected duration on 2 cores: 10k in under a minute, 100k in 4-8 minutes,
1M in 25-40 minutes (three raw graph builds at 4-7k vectors/s, and the
store's own ingest, which indexes text and vectors, at 0.5-1.5k/s).
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedmind.backend.sqlite.hnsw import default_ef
from embedmind_bench import metrics
from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.folders import read_files
from embedmind_bench.optional import load
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label
from embedmind_bench.timing import round_robin
from embedmind_bench.vector_engines import ENGINES, REQUIRES, EmbedmindVector, VectorEngine
from embedmind_bench.vectordata import (
    Embedder,
    Matrix,
    base_vectors,
    exact_top_k,
    mixed_vectors,
    query_vectors,
)

K = 10
ANCHORS = ("usearch", "hnswlib", "faiss", "numpy")


@dataclass
class Options:
    """How to run the vector benchmark.

    Attributes:
        sizes: Vector counts, in run order.
        queries: Questions per size.
        seed: Seed of the corpus and of the embedding-like vectors.
        engines: Engines to run (keys of ``vector_engines.ENGINES``).
        warmup: Untimed leading queries per engine.
        workdir: Where index files go (a temporary directory when ``None``).
    """

    sizes: list[int] = field(default_factory=lambda: [10_000])
    queries: int = 200
    seed: int = CorpusSpec().seed
    engines: Sequence[str] = tuple(ENGINES)
    warmup: int = 10
    workdir: Path | None = None


def _build(
    name: str, vectors: Matrix, texts: list[str], home: Path, ef: int, context: dict[str, Any]
) -> tuple[VectorEngine | None, dict[str, Any]]:
    """Build engine ``name``; a missing or failing peer becomes a skipped/failed figure."""
    module, _ = REQUIRES.get(name, ("", ""))
    if module:
        found, reason = load(module)
        if found is None:
            return None, {"status": "skipped", "reason": reason}
    home.mkdir(parents=True, exist_ok=True)
    bar = context["progress"](f"build {name}", len(vectors))
    engine: VectorEngine | None = None
    try:
        engine = ENGINES[name](home, ef, context["embedder"])
        start = time.perf_counter()
        engine.build(vectors, texts, bar.update)
        seconds = time.perf_counter() - start
    except Exception as exc:  # one broken engine must not sink the others
        if engine is not None:
            engine.close()
        return None, {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    finally:
        bar.close()
    figures = {"status": "ok", "reason": "", "settings": engine.settings, "build_s": seconds}
    builds = getattr(engine, "builds_index", True)
    figures["build_vectors_per_s"] = len(vectors) / seconds if seconds and builds else None
    return engine, figures


def _search(engine: VectorEngine, queries: Matrix, i: int) -> list[int]:
    """Ask ``engine`` query ``i``."""
    return engine.search(queries[i], K)


def _size(
    options: Options, size: int, base: Matrix, qv: Matrix, context: dict[str, Any]
) -> dict[str, Any]:
    """Measure every engine at one size; return that size's figures."""
    spec = CorpusSpec(seed=options.seed)
    vectors = mixed_vectors(base, size, seed=options.seed)
    texts = list(iter_documents(size, spec))
    truth = [set(keys) for keys in exact_top_k(vectors, qv, K)]
    ef = default_ef(size)
    workdir = context["workdir"] / f"vector-{size}"
    engines: dict[str, VectorEngine] = {}
    figures: dict[str, dict[str, Any]] = {}
    try:
        for name in options.engines:
            engine, figures[name] = _build(name, vectors, texts, workdir / name, ef, context)
            if engine is not None:
                engines[name] = engine
        for name in engines:  # built in turn: each answers from a warm cache
            read_files(workdir / name)
        bar = context["progress"](f"queries {size_label(size)}", len(qv))
        runs = round_robin(
            {name: functools.partial(_search, e, qv) for name, e in engines.items()},
            len(qv),
            warmup=options.warmup,
            bar=bar,
        )
        bar.close()
        channel = _channel(engines, qv, options)
    finally:
        for engine in engines.values():
            engine.close()
        shutil.rmtree(workdir, ignore_errors=True)
    for name, run in runs.items():
        if run.error:
            figures[name].update(status="failed", reason=run.error)
            continue
        found = [
            len(set(keys[:K]) & want) / K for keys, want in zip(run.results, truth, strict=True)
        ]
        figures[name].update(metrics.latency(run.seconds), recall_at_10=float(np.mean(found)))
    return {
        "size": size, "ef_search": ef, "queries": len(qv), "engines": figures, "channel": channel,
    }  # fmt: skip


def _channel(
    engines: dict[str, VectorEngine], qv: Matrix, options: Options
) -> dict[str, Any] | None:
    """The store's vector channel alone beside raw usearch, in a second round-robin.

    The main table times whole recalls, which also check the request and load
    the memories; this times the recall's ``vector`` phase (the channel:
    graph search, key mapping, filter, exact rescoring) against the same
    raw search, query for query, and reports every phase's p50 beside the
    whole call's, to show where the rest of a recall goes. ``None`` without
    both engines.
    """
    ours, raw = engines.get("embedmind"), engines.get("usearch")
    if not isinstance(ours, EmbedmindVector) or raw is None:
        return None
    runs = round_robin(
        {
            "usearch": functools.partial(_search, raw, qv),
            "channel": lambda i: [ours.phases(qv[i], K)],
        },
        len(qv),
        warmup=options.warmup,
    )
    if runs["usearch"].error or runs["channel"].error:
        return None
    phases = [result[0] for result in runs["channel"].results]
    laps = [p["vector"] for p in phases]
    channel_p50 = metrics.percentile_ms(laps, 50)
    raw_p50 = metrics.percentile_ms(runs["usearch"].seconds, 50)
    names = sorted({name for p in phases for name in p})
    return {
        "channel_p50_ms": channel_p50,
        "channel_p95_ms": metrics.percentile_ms(laps, 95),
        "usearch_p50_ms": raw_p50,
        "channel/usearch": metrics.ratio(channel_p50, raw_p50),
        # Where the rest of a recall goes: each phase's p50, and the whole call's.
        "recall_p50_ms": metrics.percentile_ms(runs["channel"].seconds, 50),
        "phases_p50_ms": {
            n: metrics.percentile_ms([p.get(n, 0.0) for p in phases], 50) for n in names
        },
    }


def _ratios(label: str, figures: dict[str, Any]) -> dict[str, float | None]:
    """The embedmind-vs-anchor ratios of one size: p50, recall@10, the channel alone."""
    engines = figures["engines"]
    ours = engines.get("embedmind", {})
    out: dict[str, float | None] = {}
    if figures.get("channel"):
        out[f"{label}.channel_p50.embedmind/usearch"] = figures["channel"]["channel/usearch"]
    for anchor in ANCHORS:
        theirs = engines.get(anchor, {})
        out[f"{label}.p50.embedmind/{anchor}"] = metrics.ratio(
            ours.get("p50_ms"), theirs.get("p50_ms")
        )
        out[f"{label}.recall@10.embedmind/{anchor}"] = metrics.ratio(
            ours.get("recall_at_10"), theirs.get("recall_at_10")
        )
    return out


def _table(figures: dict[str, Any]) -> Table:
    """One size's side-by-side table."""
    size, engines = figures["size"], figures["engines"]
    title = (
        f"vector channel, {size:,} embedding-like vectors, 384 dims, "
        f"{figures['queries']} queries, ef {figures['ef_search']}"
    )
    table = Table(
        title,
        ["engine", "build vec/s", "p50 ms", "p95 ms", "recall@10", "p50 / usearch", "p50 / numpy"],
    )
    raw, exact = engines.get("usearch", {}), engines.get("numpy", {})
    for name, row in engines.items():
        if row["status"] != "ok":
            table.skip(name, row["reason"], status=row["status"])
            continue
        table.add(
            name,
            fmt(row.get("build_vectors_per_s"), ",.0f"),
            fmt(row.get("p50_ms"), ".3f"),
            fmt(row.get("p95_ms"), ".3f"),
            fmt(row.get("recall_at_10"), ".3f"),
            fmt(metrics.ratio(row.get("p50_ms"), raw.get("p50_ms")), ".2f"),
            fmt(metrics.ratio(row.get("p50_ms"), exact.get("p50_ms")), ".2f"),
        )
    if size < 20_000:
        table.notes.append(
            "note: below 20k vectors the store scans exactly (EXACT_BELOW): recall 1.0 by design"
        )
    channel = figures.get("channel")
    if channel:
        ours, raw = channel["channel_p50_ms"], channel["usearch_p50_ms"]
        phases = ", ".join(f"{n} {fmt(v, '.3f')}" for n, v in channel["phases_p50_ms"].items())
        table.notes.append(
            f"embedmind's vector channel alone (the recall's 'vector' phase), a second "
            f"round-robin: p50 {fmt(ours, '.3f')} ms, raw usearch {fmt(raw, '.3f')} ms "
            f"= {fmt(channel['channel/usearch'], '.2f')}x; the whole recall "
            f"{fmt(channel['recall_p50_ms'], '.3f')} ms, its phases' p50 (ms): {phases}"
        )
    table.notes.append("targets: embedmind p50 <= 2x raw usearch, recall@10 >= 0.97")
    return table


def run(
    options: Options, *, embedder: Embedder | None = None, progress: ProgressFactory = silent
) -> Outcome:
    """Run the vector benchmark at every size in ``options``.

    Args:
        options: Sizes, queries, seed, engines.
        embedder: The embedder (default: a new ``MiniLMEmbedder``).
        progress: Progress bar factory.

    Returns:
        Figures per size and engine, ratios against each anchor, one table per size.
    """
    if embedder is None:
        from embedmind.embedders.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    spec = CorpusSpec(seed=options.seed)
    base = base_vectors(embedder, spec)
    qv = query_vectors(embedder, make_queries(options.queries, spec))
    outcome = Outcome(packages=("hnswlib", "faiss-cpu"))
    with tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp:
        context = {"embedder": embedder, "progress": progress, "workdir": Path(tmp)}
        for size in options.sizes:
            label = size_label(size)
            figures = _size(options, size, base, qv, context)
            outcome.figures[label] = figures
            outcome.ratios.update(_ratios(label, figures))
            outcome.tables.append(_table(figures))
            for name, row in figures["engines"].items():
                if row["status"] != "ok":
                    outcome.skipped[f"{label}.{name}"] = f"{row['status']}: {row['reason']}"
    return outcome
