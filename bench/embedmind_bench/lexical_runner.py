"""Lexical runner: build every engine on one corpus, time the same queries.

Engines are built one after another, then queried round-robin: for each
query every engine answers in turn (the order rotating per query), so a
burst of load on a shared machine slows all engines alike and the ratios
between them stay meaningful even when absolute times drift.

Example:
    >>> from embedmind_bench.corpus import iter_documents, make_queries
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = run_size(
    ...         list(iter_documents(500)), make_queries(5), ["fts5"],
    ...         workdir=pathlib.Path(tmp),
    ...     )
    >>> result.engines["fts5"].p50_ms > 0
    True
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedmind_bench.folders import disk_bytes
from embedmind_bench.lexical_engines import ENGINES, LexicalEngine, unavailable_reason
from embedmind_bench.machine import disk_read_kb
from embedmind_bench.progress import Progress, ProgressFactory, silent

K = 10


@dataclass
class EngineResult:
    """Figures for one engine at one corpus size.

    Attributes:
        name: Engine name.
        status: ``"ok"``, ``"skipped"`` or ``"failed"``.
        reason: Why it was skipped or failed.
        settings: How the engine was configured.
        build_seconds: Wall time to index the corpus.
        index_bytes: Size of the engine's files on disk (0 when in memory).
        latencies_ns: One timed latency per query.
        top_keys: Each query's top-``K`` document keys.
        disk_read_kb: What its timed queries read from the disk rather than the
            page cache, in all (a warm query reads nothing; on a machine that
            drops pages untouched for a while, a slow engine in the round
            leaves the others' pages that long untouched).
    """

    name: str
    status: str = "ok"
    reason: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    build_seconds: float = 0.0
    index_bytes: int = 0
    latencies_ns: list[int] = field(default_factory=list)
    top_keys: list[list[int]] = field(default_factory=list)
    disk_read_kb: float = 0.0

    @property
    def p50_ms(self) -> float:
        """Median query latency in milliseconds (NaN without timings)."""
        return _percentile_ms(self.latencies_ns, 50)

    @property
    def p95_ms(self) -> float:
        """95th percentile query latency in milliseconds (NaN without timings)."""
        return _percentile_ms(self.latencies_ns, 95)


@dataclass
class SizeResult:
    """Every engine's figures for one corpus size."""

    size: int
    queries: int
    engines: dict[str, EngineResult]


def _percentile_ms(latencies_ns: Sequence[int], q: float) -> float:
    """Return the ``q``-th percentile of nanosecond latencies, in milliseconds."""
    if not latencies_ns:
        return float("nan")
    return float(np.percentile(np.asarray(latencies_ns, dtype=np.float64), q)) / 1e6


def _build(
    name: str, docs: Sequence[str], workdir: Path, progress: ProgressFactory
) -> tuple[LexicalEngine | None, EngineResult]:
    """Create and build engine ``name``; failures become a ``failed`` result."""
    result = EngineResult(name=name)
    reason = unavailable_reason(name)
    if reason is not None:
        return None, EngineResult(name=name, status="skipped", reason=reason)
    home = workdir / name
    home.mkdir(parents=True, exist_ok=True)
    bar = progress(f"build {name}", len(docs))
    engine: LexicalEngine | None = None
    try:
        engine = ENGINES[name](home)
        result.settings = engine.settings
        start = time.perf_counter()
        engine.build(docs, bar.update)
        result.build_seconds = time.perf_counter() - start
    except Exception as exc:  # one broken engine must not sink the others
        if engine is not None:
            engine.close()
        return None, EngineResult(name=name, status="failed", reason=repr(exc))
    finally:
        bar.close()
    # Everything the engine left on disk, write-ahead logs included.
    result.index_bytes = disk_bytes(home)
    return engine, result


def _timed_rounds(
    engines: dict[str, LexicalEngine],
    results: dict[str, EngineResult],
    queries: Sequence[str],
    *,
    record: bool,
    bar: Progress,
) -> None:
    """Run every query on every live engine, rotating the engine order per query."""
    names = list(engines)
    for index, query in enumerate(queries):
        shift = index % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            if results[name].status != "ok":
                continue
            try:
                read_before = disk_read_kb()
                start = time.perf_counter_ns()
                keys = engines[name].search(query, K)
                elapsed = time.perf_counter_ns() - start
                read = disk_read_kb() - read_before
            except Exception as exc:  # keep timing the other engines
                results[name].status, results[name].reason = "failed", repr(exc)
                continue
            if record:
                results[name].latencies_ns.append(elapsed)
                results[name].top_keys.append(keys)
                results[name].disk_read_kb += read
        bar.update(1)


def run_size(
    docs: Sequence[str],
    queries: Sequence[str],
    engine_names: Sequence[str],
    *,
    workdir: Path,
    warmup: int = 1,
    progress: ProgressFactory = silent,
) -> SizeResult:
    """Build each engine on ``docs`` and time ``queries`` on all of them.

    Args:
        docs: The corpus; document ``i`` has key ``i``.
        queries: Question texts, the same for every engine.
        engine_names: Keys of ``ENGINES`` to run, in order.
        workdir: Directory for this size's index files (created if needed).
        warmup: Untimed passes over all queries before the timed pass.
        progress: Makes a progress bar from a description and a total.

    Returns:
        One ``EngineResult`` per requested engine, including skipped ones.
    """
    engines: dict[str, LexicalEngine] = {}
    results: dict[str, EngineResult] = {}
    for name in engine_names:
        engine, results[name] = _build(name, docs, workdir, progress)
        if engine is not None:
            engines[name] = engine
    try:
        for _ in range(warmup):
            bar = progress("warm-up", len(queries))
            _timed_rounds(engines, results, queries, record=False, bar=bar)
            bar.close()
        bar = progress("timed queries", len(queries))
        _timed_rounds(engines, results, queries, record=True, bar=bar)
        bar.close()
    finally:
        for engine in engines.values():
            engine.close()
    return SizeResult(size=len(docs), queries=len(queries), engines=results)


def remove_indexes(workdir: Path) -> None:
    """Delete a size's index directory once its figures are taken."""
    shutil.rmtree(workdir, ignore_errors=True)
