"""Turn benchmark results into tables, ratios and JSON, and describe the machine.

Nothing here prints: functions return strings and dictionaries, and the
calling script decides where they go.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

from embedmind.benchmarks.lexical import EngineResult, K, SizeResult

BASELINES = ("tantivy", "fts5")
# bm25s shares embedmind's stemmer and stop words, the closest BM25 to compare with.
OVERLAP_BASELINES = ("tantivy", "fts5", "bm25s")
_PACKAGES = ("apsw", "numpy", "tantivy", "bm25s", "PyStemmer", "tqdm", "embedmind")


def _version(package: str) -> str | None:
    """Return the installed version of ``package``, or ``None``."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _blas_info() -> dict[str, Any]:
    """Describe numpy's BLAS: threadpoolctl's live view if installed, else build info."""
    info: dict[str, Any] = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
        info["threadpoolctl"] = threadpoolctl.threadpool_info()
    except ImportError:
        numpy = importlib.import_module("numpy")
        config = numpy.show_config(mode="dicts")
        info["numpy_build"] = config.get("Build Dependencies", {})
        info["simd"] = config.get("SIMD Extensions", {})
    return info


def machine_info() -> dict[str, Any]:
    """Describe the machine, interpreter and every compared package's version.

    Returns:
        A JSON-ready dictionary.
    """
    apsw = importlib.import_module("apsw")
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        # Other jobs on a shared machine skew absolute times; record how busy it was.
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "python": sys.version,
        "sqlite": apsw.sqlite_lib_version(),
        "versions": {name: _version(name) for name in _PACKAGES},
        "blas": _blas_info(),
    }


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

    BM25 variants differ (stemmers, stop words, idf smoothing), so this is a
    sanity check that engines find the same kind of documents, not a gate.

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


def _fmt(value: float | None, spec: str) -> str:
    """Format a figure, or ``-`` when it is missing."""
    if value is None or math.isnan(value):
        return "-"
    return format(value, spec)


def _row(result: SizeResult, engine: EngineResult) -> list[str]:
    """Return one table row for ``engine``."""
    if engine.status != "ok":
        return [engine.name, f"{engine.status}: {engine.reason}"[:70]]
    rate = result.size / engine.build_seconds if engine.build_seconds else None
    return [
        engine.name,
        _fmt(rate, ",.0f"),
        _fmt(engine.p50_ms, ".3f"),
        _fmt(engine.p95_ms, ".3f"),
        _fmt(ratio(result, engine.name, "tantivy"), ".2f"),
        _fmt(ratio(result, engine.name, "fts5"), ".4f"),
        _fmt(overlap(result, engine.name, "tantivy"), ".2f"),
        _fmt(overlap(result, engine.name, "fts5"), ".2f"),
        _fmt(overlap(result, engine.name, "bm25s"), ".2f"),
        _fmt(engine.index_bytes / 1e6, ".1f") if engine.index_bytes else "mem",
    ]


def format_table(result: SizeResult) -> str:
    """Render one size's results as an aligned text table.

    Args:
        result: One size's results.

    Returns:
        A multi-line string; skipped or failed engines say why.
    """
    header = ["engine", "build docs/s", "p50 ms", "p95 ms", "p50/tantivy", "p50/FTS5"]
    header += ["top10∩tantivy", "top10∩FTS5", "top10∩bm25s", "index MB"]
    rows = [header] + [_row(result, e) for e in result.engines.values()]
    full = [row for row in rows if len(row) == len(header)]
    widths = [max(len(row[i]) for row in full) for i in range(len(header))]
    lines = [f"n = {result.size:,}, {result.queries} queries, top-{K}"]
    for row in rows:
        if len(row) != len(header):  # a skipped or failed engine: name and reason
            lines.append(f"{row[0].ljust(widths[0])} | {row[1]}")
            continue
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def size_label(size: int) -> str:
    """Return ``"1M"`` for 1,000,000, ``"100k"`` for 100,000, else the number."""
    if size % 1_000_000 == 0:
        return f"{size // 1_000_000}M"
    if size % 1_000 == 0:
        return f"{size // 1_000}k"
    return str(size)


def engine_json(result: SizeResult, engine: EngineResult) -> dict[str, Any]:
    """Return every figure of one engine at one size, JSON-ready."""
    data: dict[str, Any] = {
        "status": engine.status,
        "reason": engine.reason,
        "settings": engine.settings,
        "build_seconds": engine.build_seconds,
        "build_docs_per_s": result.size / engine.build_seconds if engine.build_seconds else None,
        "index_bytes": engine.index_bytes,
        "p50_ms": None if engine.status != "ok" else engine.p50_ms,
        "p95_ms": None if engine.status != "ok" else engine.p95_ms,
        "latencies_ms": [ns / 1e6 for ns in engine.latencies_ns],
    }
    for base in BASELINES:
        data[f"p50_ratio_vs_{base}"] = ratio(result, engine.name, base)
    data["overlap"] = {
        other: overlap(result, engine.name, other)
        for other in result.engines
        if other != engine.name
    }
    return data


def results_json(results: list[SizeResult], config: dict[str, Any]) -> dict[str, Any]:
    """Assemble the whole run: machine, configuration and every size's figures.

    Args:
        results: One entry per corpus size, in run order.
        config: The run's settings (sizes, queries, seed, ...).

    Returns:
        A JSON-ready dictionary.
    """
    sizes = {
        size_label(r.size): {
            "size": r.size,
            "queries": r.queries,
            "engines": {name: engine_json(r, e) for name, e in r.engines.items()},
        }
        for r in results
    }
    return {"benchmark": "lexical", "machine": machine_info(), "config": config, "sizes": sizes}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` as indented JSON (NaN becomes ``null``)."""
    text = json.dumps(data, indent=2, default=str)
    path.write_text(text.replace("NaN", "null") + "\n", encoding="utf-8")
