"""Tables and ratios of the peers benchmark (:mod:`.peers`).

Ratios put embedmind first: ``p50.embedmind (hybrid)/lancedb (hybrid)`` below
1 means embedmind answers faster; ``ingest.embedmind/chroma`` above 1 means
it ingests faster; ``recall@10...`` above 1 means it finds more.
"""

from __future__ import annotations

from typing import Any

from embedmind_bench import metrics
from embedmind_bench.locomo_data import CATEGORIES
from embedmind_bench.report import Table, fmt

# (embedmind method, peer method): the pairs compared like for like.
PAIRS = (
    ("embedmind (hybrid)", "lancedb (hybrid)"),
    ("embedmind (text)", "lancedb (fts)"),
    ("embedmind (vector)", "lancedb (vector)"),
    ("embedmind (vector)", "chroma (vector)"),
    ("embedmind (hybrid)", "chroma (vector)"),
)


def _engine(method: str) -> str:
    """``"lancedb (hybrid)"`` -> ``"lancedb"``."""
    return method.split(" (")[0]


def _absent(table: Table, engines: dict[str, Any]) -> None:
    """Add a row for each engine that did not run."""
    for name, build in engines.items():
        if build["status"] != "ok":
            table.skip(name, build["reason"], status=build["status"])


def locomo_table(figures: dict[str, Any]) -> Table:
    """Render LoCoMo through every engine: per method and category, with standard errors.

    Args:
        figures: The ``locomo`` figures of the peers outcome.

    Returns:
        The table.
    """
    title = (
        f"LoCoMo dev through each engine, {figures['questions']} questions over "
        f"{figures.get('turns', '?')} turns, same documents and MiniLM vectors"
    )
    header = ["method", "category", "n", "recall@5", "recall@10", "±", "hit@5", "hit@10", "±"]
    table = Table(title, [*header, "p50 ms", "p95 ms"])
    for method, found in figures["methods"].items():
        for group in ("overall", *CATEGORIES.values()):
            row = found["scores"].get(group)
            if not row:
                continue
            latency = found["latency"] if group == "overall" else {}
            table.add(
                method,
                group,
                str(int(row["questions"])),
                fmt(row["recall@5"], ".3f"),
                fmt(row["recall@10"], ".3f"),
                fmt(row.get("recall@10_se"), ".3f"),
                fmt(row["hit@5"], ".3f"),
                fmt(row["hit@10"], ".3f"),
                fmt(row.get("hit@10_se"), ".3f"),
                fmt(latency.get("p50_ms"), ".2f") if latency else "",
                fmt(latency.get("p95_ms"), ".2f") if latency else "",
            )
    _absent(table, figures["engines"])
    table.notes.append(
        "± is the standard error of the mean over the group's questions; every engine gets "
        "the turns in dialog order with their session (embedmind as session_id, session "
        "context on; Chroma and LanceDB as metadata their search does not use); query "
        "vectors are given, so latency excludes embedding the question"
    )
    return table


def synthetic_table(figures: dict[str, Any]) -> Table:
    """Render one synthetic size: ingest, index, latency, recall, disk per method.

    Args:
        figures: One size's figures of the peers outcome.

    Returns:
        The table.
    """
    title = (
        f"synthetic chat corpus, {figures['size']:,} docs ({figures['real_vectors']:,} real "
        f"embeddings), {figures['queries']} queries, vectors given to every engine"
    )
    header = [
        "method", "ingest docs/s", "index s", "p50 ms", "p95 ms", "recall@10", "disk MB",
        "build peak RSS +MB",
    ]  # fmt: skip
    table = Table(title, header)
    for method, found in figures["methods"].items():
        build = figures["engines"][_engine(method)]
        table.add(
            method,
            fmt(build["ingest_docs_per_s"], ",.0f"),
            fmt(build["index_s"], ".1f"),
            fmt(found["p50_ms"], ".2f"),
            fmt(found["p95_ms"], ".2f"),
            fmt(found.get("recall_at_10_vs_exact"), ".3f"),
            fmt(build["disk_bytes"] / 1e6, ".1f"),
            fmt(build.get("peak_rss_growth_mb"), ",.0f"),
        )
    _absent(table, figures["engines"])
    table.notes.append(
        f"embedder (the same for all): {figures['embedder_texts_per_s']:,.0f} texts/s; "
        "recall@10 of vector modes against exact cosine; build peak RSS: the most "
        "resident memory the engine's ingest and index build added to the process"
    )
    return table


def _locomo_ratios(figures: dict[str, Any]) -> dict[str, float | None]:
    """LoCoMo recall@10, hit@10 and p50 of each embedmind mode over its peer."""
    methods = figures["methods"]
    out: dict[str, float | None] = {}
    for ours, theirs in PAIRS:
        a, b = methods.get(ours), methods.get(theirs)
        for figure in ("recall@10", "hit@10"):
            x = a["scores"]["overall"][figure] if a else None
            y = b["scores"]["overall"][figure] if b else None
            out[f"locomo.{figure}.{ours}/{theirs}"] = metrics.ratio(x, y)
        x = a["latency"]["p50_ms"] if a else None
        y = b["latency"]["p50_ms"] if b else None
        out[f"locomo.p50.{ours}/{theirs}"] = metrics.ratio(x, y)
    return out


def _size_ratios(label: str, figures: dict[str, Any]) -> dict[str, float | None]:
    """One size's p50, recall, ingest and disk ratios of embedmind over each peer."""
    methods, engines = figures["methods"], figures["engines"]
    out: dict[str, float | None] = {}
    for ours, theirs in PAIRS:
        a, b = methods.get(ours, {}), methods.get(theirs, {})
        out[f"{label}.p50.{ours}/{theirs}"] = metrics.ratio(a.get("p50_ms"), b.get("p50_ms"))
    for peer in ("chroma", "lancedb"):
        ours, theirs = engines.get("embedmind", {}), engines.get(peer, {})
        for figure, key in (
            ("ingest", "ingest_docs_per_s"),
            ("disk", "disk_bytes"),
            ("build_peak_rss", "peak_rss_growth_mb"),
        ):
            out[f"{label}.{figure}.embedmind/{peer}"] = metrics.ratio(
                ours.get(key), theirs.get(key)
            )
        out[f"{label}.recall@10.embedmind (vector)/{peer} (vector)"] = metrics.ratio(
            methods.get("embedmind (vector)", {}).get("recall_at_10_vs_exact"),
            methods.get(f"{peer} (vector)", {}).get("recall_at_10_vs_exact"),
        )
    return out


def ratios(figures: dict[str, Any]) -> dict[str, float | None]:
    """Return every ratio of a peers run.

    Args:
        figures: The outcome's figures (``locomo`` and one entry per size).

    Returns:
        Flat ``name -> ratio``.
    """
    out: dict[str, float | None] = {}
    for label, found in figures.items():
        out.update(_locomo_ratios(found) if label == "locomo" else _size_ratios(label, found))
    return out
