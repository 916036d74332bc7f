"""Tables and ratios of ``embedmind bench peers --backend postgres`` (:mod:`.peers_postgres`).

Ratios put embedmind on PostgreSQL first: ``p50`` below 1 means it answers
faster, ``ingest`` and ``recall@10`` above 1 mean it ingests faster or finds
more. Under-returns are counts, not ratios: they are in the figures and the
filtered table.
"""

from __future__ import annotations

from typing import Any

from embedmind_bench import metrics
from embedmind_bench.report import Table, fmt

OURS = "embedmind-postgres"
PEERS = ("langgraph", "pgvector", "embedmind-sqlite")


def filtered_table(figures: dict[str, Any]) -> Table:
    """Render one size's filtered vector queries: latency, recall, under-returns per method.

    Args:
        figures: One size's figures of the PostgreSQL peers outcome.

    Returns:
        The table.
    """
    title = (
        f"filtered vector queries, {figures['size']:,} docs, {figures['queries']} queries per "
        "selectivity, an equality filter on a metadata field"
    )
    header = ["method", "admitted/query", "p50 ms", "p95 ms", "recall@10", "returned"]
    table = Table(title, [*header, "under-returns"])
    for method, found in figures.get("filtered", {}).items():
        table.add(
            method,
            fmt(found["admitted_per_query"], ",.0f"),
            fmt(found["p50_ms"], ".2f"),
            fmt(found["p95_ms"], ".2f"),
            fmt(found["recall_at_10_vs_exact"], ".3f"),
            fmt(found["mean_returned"], ".1f"),
            f"{found['under_returns']} of {found['eligible']}",
        )
    for name, build in figures["engines"].items():
        if build["status"] != "ok":
            table.skip(name, build["reason"], status=build["status"])
    table.notes.append(
        "recall@10 against the exact cosine top 10 of the admitted documents; returned: mean "
        "results per query (k = 10); under-returns: queries that got fewer than 10 results "
        "while at least 10 documents matched the filter, of the queries where 10 did"
    )
    return table


def _method(figures: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(figures.get("methods", {}).get(name) or {})


def _locomo_ratios(figures: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for peer in PEERS:
        for mode in ("vector", "hybrid", "text"):
            a, b = _method(figures, f"{OURS} ({mode})"), _method(figures, f"{peer} ({mode})")
            if not b and peer != "embedmind-sqlite":
                b = _method(figures, f"{peer} (vector)")  # the peers have only vector search
            if not a or not b:
                continue
            key = f"{OURS} ({mode})/{peer}"
            for figure in ("recall@10", "hit@10"):
                out[f"locomo.{figure}.{key}"] = metrics.ratio(
                    a["scores"]["overall"][figure], b["scores"]["overall"][figure]
                )
            out[f"locomo.p50.{key}"] = metrics.ratio(a["latency"]["p50_ms"], b["latency"]["p50_ms"])
    return out


def _size_ratios(label: str, figures: dict[str, Any]) -> dict[str, float | None]:
    methods, filtered, engines = figures["methods"], figures.get("filtered", {}), figures["engines"]
    out: dict[str, float | None] = {}
    for peer in PEERS:
        ours, theirs = engines.get(OURS, {}), engines.get(peer, {})
        out[f"{label}.ingest.{OURS}/{peer}"] = metrics.ratio(
            ours.get("ingest_docs_per_s"), theirs.get("ingest_docs_per_s")
        )
        a, b = methods.get(f"{OURS} (vector)", {}), methods.get(f"{peer} (vector)", {})
        out[f"{label}.p50.{OURS} (vector)/{peer} (vector)"] = metrics.ratio(
            a.get("p50_ms"), b.get("p50_ms")
        )
        out[f"{label}.recall@10.{OURS} (vector)/{peer} (vector)"] = metrics.ratio(
            a.get("recall_at_10_vs_exact"), b.get("recall_at_10_vs_exact")
        )
        for selectivity in ("1%", "0.1%"):
            a = filtered.get(f"{OURS} (filtered {selectivity})", {})
            b = filtered.get(f"{peer} (filtered {selectivity})", {})
            key = f"{OURS} (filtered {selectivity})/{peer}"
            out[f"{label}.p50.{key}"] = metrics.ratio(a.get("p50_ms"), b.get("p50_ms"))
            out[f"{label}.recall@10.{key}"] = metrics.ratio(
                a.get("recall_at_10_vs_exact"), b.get("recall_at_10_vs_exact")
            )
    return out


def ratios(figures: dict[str, Any]) -> dict[str, float | None]:
    """Return every ratio of a PostgreSQL peers run.

    Args:
        figures: The outcome's figures (``server``, ``locomo`` and one entry per size).

    Returns:
        Flat ``name -> ratio``.
    """
    out: dict[str, float | None] = {}
    for label, found in figures.items():
        if label == "locomo":
            out.update(_locomo_ratios(found))
        elif isinstance(found, dict) and "methods" in found:
            out.update(_size_ratios(label, found))
    return out
