"""``embedmind bench peers``: embedmind end to end beside Chroma and LanceDB.

Same embedder (embedmind's MiniLM), same documents, same queries, and the
same vectors, computed once and handed to every engine (so ingest figures
exclude embedding; the embedder's own rate is reported beside them):

- LoCoMo dev (:mod:`.locomo_data`, the data's protocol): every turn, in
  dialog order, each conversation its own scope (namespace / metadata
  filter), each turn with its session (embedmind's ``session_id``, session
  context on; the peers keep it as metadata). Recall@5/10 and hit@5/10
  overall and per category with their standard errors
  (:mod:`.peers_scoring`), p50/p95 per engine and mode.
- The synthetic chat corpus at each ``--size``: ingest documents/s, index
  build time, query p50/p95, recall@10 of the vector modes against exact
  cosine, size on disk, and the peak resident memory each engine's build
  added to the process (:mod:`.resident`).

Every engine's files are read once after the builds, before the first timed
query, so none answers from pages the OS dropped while the others were built.

Vectors of the synthetic corpus are real MiniLM embeddings of the first
``embed_limit`` documents (10k by default) and embedding-like mixes of them
beyond (:mod:`.vectordata`): embedding a million texts would take the
whole hour by itself. LanceDB gets an ``IVF_HNSW_SQ`` index from 100k rows.

Expected durations on 2 cores: 10k in 2-6 minutes (LoCoMo included),
100k in 10-20 minutes, 1M in 35-55 minutes on a quiet machine: ingest
dominates (Chroma about 1,600 documents/s at 10k and 900 at 50k, falling
as it grows; embedmind 1,000-1,500/s with its index, vectors given). Use
``--no-locomo`` for the large sizes: LoCoMo does not depend on the size.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedmind_bench import locomo_data, metrics, peers_scoring
from embedmind_bench.corpus import CorpusSpec, iter_documents, make_queries
from embedmind_bench.folders import disk_bytes, read_files
from embedmind_bench.optional import load
from embedmind_bench.peer_engines import ENGINES, REQUIRES, PeerEngine, Session
from embedmind_bench.peers_report import locomo_table, ratios, synthetic_table
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome
from embedmind_bench.resident import PeakWatch
from embedmind_bench.sizes import size_label
from embedmind_bench.timing import round_robin
from embedmind_bench.vectordata import (
    BASE_TEXTS,
    Embedder,
    Matrix,
    corpus_vectors,
    exact_top_k,
    query_vectors,
)

K = 10


@dataclass
class Options:
    """How to run the peers benchmark.

    Attributes:
        sizes: Synthetic corpus sizes, in run order.
        queries: Synthetic questions per size.
        seed: Seed of the corpus and of the embedding-like vectors.
        engines: Engines to run (keys of ``peer_engines.ENGINES``).
        locomo: Also run LoCoMo through every engine.
        data: The LoCoMo file (default: :func:`.locomo_data.data_path`).
        embed_limit: Documents embedded for real; embedding-like vectors beyond.
        vector_index_from: Rows from which LanceDB gets an ANN index.
        warmup: Untimed leading queries per engine and mode.
        workdir: Where the engines' files go (a temporary directory when ``None``).
        backend: ``"sqlite"`` (embedmind beside Chroma and LanceDB) or
            ``"postgres"`` (embedmind on PostgreSQL beside LangGraph's
            ``PostgresStore`` and ``PGVectorStore``: :mod:`.peers_postgres`).
        dsn: With ``"postgres"``: the server to use (a role that may create
            databases); ``None`` starts a throwaway one.
    """

    sizes: list[int] = field(default_factory=lambda: [10_000])
    queries: int = 200
    seed: int = CorpusSpec().seed
    engines: Sequence[str] = ()
    """Empty: every engine of the backend."""
    locomo: bool = True
    data: Path | None = None
    embed_limit: int = 10_000
    vector_index_from: int = 100_000
    warmup: int = 10
    workdir: Path | None = None
    backend: str = "sqlite"
    dsn: str | None = None


def engine_names(backend: str | None) -> tuple[str, ...]:
    """The engines ``--engines`` may name for ``backend``."""
    if backend == "postgres":
        from embedmind_bench.pg_peer_engines import ENGINES as ON_POSTGRES

        return ON_POSTGRES
    return tuple(ENGINES)


@dataclass
class Corpus:
    """Documents as every engine receives them, and the queries to ask."""

    ids: list[str]
    texts: list[str]
    vectors: Matrix
    scopes: list[str]
    queries: list[str]
    query_vectors: Matrix
    query_scopes: list[str | None]
    sessions: list[Session] | None = None
    """Each document's ``(session_id, created_at)`` (LoCoMo's protocol), given to every engine."""


def _build(
    name: str, corpus: Corpus, root: Path, context: dict[str, Any]
) -> tuple[PeerEngine | None, dict[str, Any]]:
    """Create engine ``name`` and give it the corpus; a missing peer is skipped."""
    module, _ = REQUIRES.get(name, ("", ""))
    if module and load(module)[0] is None:
        return None, {"status": "skipped", "reason": load(module)[1]}
    root.mkdir(parents=True)
    bar = context["progress"](f"ingest {name}", len(corpus.ids))
    engine: PeerEngine | None = None
    # The engines built before this one stay open (the queries run round-robin
    # over all of them), so its own need is the peak's growth over this start.
    watch = PeakWatch()
    try:
        engine = ENGINES[name](root, context["embedder"], vector_index_from=context["index_from"])
        started = time.perf_counter()
        engine.add(
            corpus.ids, corpus.texts, corpus.vectors, corpus.scopes, bar.update, corpus.sessions
        )
        added = time.perf_counter()
        engine.finish()
        finished = time.perf_counter()
    except Exception as exc:  # a broken peer is reported, never fatal
        if engine is not None:
            engine.close()
        return None, {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    finally:
        bar.close()
    n = len(corpus.ids)
    return engine, {
        "status": "ok",
        "reason": "",
        "settings": engine.settings,
        "ingest_s": added - started,
        "index_s": finished - added,
        "ingest_docs_per_s": n / (added - started),
        "ingest_docs_per_s_incl_index": n / (finished - started),
        **watch.figures(),
    }


def _measure(
    corpus: Corpus, options: Options, context: dict[str, Any], label: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build every engine on ``corpus`` and ask every query in every mode, round-robin."""
    engines: dict[str, PeerEngine] = {}
    builds: dict[str, dict[str, Any]] = {}
    workdir = context["workdir"] / label
    for name in options.engines or tuple(ENGINES):
        engine, builds[name] = _build(name, corpus, workdir / name, context)
        if engine is not None:
            engines[name] = engine
    for name in engines:  # built in turn: each answers from a warm cache
        read_files(workdir / name)
    searchers = {}
    for name, engine in engines.items():
        for mode, search in engine.modes().items():
            searchers[f"{name} ({mode})"] = lambda i, s=search: s(
                corpus.queries[i], corpus.query_vectors[i], corpus.query_scopes[i], K
            )
    bar = context["progress"](f"queries {label}", len(corpus.queries))
    runs = round_robin(searchers, len(corpus.queries), warmup=options.warmup, bar=bar)
    bar.close()
    for name, engine in engines.items():
        engine.close()
        builds[name]["disk_bytes"] = disk_bytes(workdir / name)
    shutil.rmtree(workdir, ignore_errors=True)
    return builds, runs


def _absent(outcome: Outcome, label: str, builds: dict[str, Any]) -> None:
    """Record the engines that were skipped or failed in ``outcome.skipped``."""
    for name, build in builds.items():
        if build["status"] != "ok":
            outcome.skipped[f"{label}.{name}"] = f"{build['status']}: {build['reason']}"


def locomo_corpus(data: locomo_data.Dataset, embedder: Embedder) -> Corpus:
    """LoCoMo as every engine receives it: the turns in dialog order, each with its session.

    Args:
        data: The loaded data set (:func:`.locomo_data.load`).
        embedder: Embeds the turns and the questions, once for all engines.

    Returns:
        The corpus; ``sessions[i]`` is turn ``i``'s ``(session_id, created_at)``.

    Raises:
        ValueError: When a turn has no session or time (the protocol gives every
            turn both; a shorter list would shift every later turn's session).
    """
    sessions: list[Session] = []
    for draft in data.drafts:
        if not draft.session_id or draft.created_at is None:
            raise ValueError(f"LoCoMo turn {draft.id} has no session or time; reload the data")
        sessions.append((draft.session_id, draft.created_at))
    texts = [d.content for d in data.drafts]
    asked = [q.text for q in data.questions]
    return Corpus(
        [d.id or "" for d in data.drafts],
        texts,
        np.asarray(embedder.embed_documents(texts), np.float32),
        [d.namespace for d in data.drafts],
        asked,
        query_vectors(embedder, asked),
        [q.namespace for q in data.questions],
        sessions,
    )


def _locomo(options: Options, context: dict[str, Any], outcome: Outcome) -> None:
    """Run LoCoMo through every engine, each conversation its own scope."""
    path = locomo_data.data_path(options.data)
    if not path.exists():
        outcome.skipped["locomo"] = f"LoCoMo data not found at {path}"
        return
    data = locomo_data.load(path)
    questions = data.questions
    corpus = locomo_corpus(data, context["embedder"])
    builds, runs = _measure(corpus, options, context, "locomo")
    _absent(outcome, "locomo", builds)
    methods = {}
    for method, run in runs.items():
        if run.error:
            outcome.skipped[f"locomo.{method}"] = f"failed: {run.error}"
            continue
        scores = peers_scoring.score(zip(questions, run.results, strict=True))
        methods[method] = {"scores": scores, "latency": metrics.latency(run.seconds)}
    outcome.figures["locomo"] = {
        "path": str(path),
        "questions": len(questions),
        "turns": len(corpus.ids),
        "sessions": len({s for s, _ in corpus.sessions or []}),
        "engines": builds,
        "methods": methods,
    }
    outcome.tables.append(locomo_table(outcome.figures["locomo"]))


def _synthetic(size: int, options: Options, context: dict[str, Any], outcome: Outcome) -> None:
    """Run the synthetic corpus of ``size`` documents through every engine."""
    spec = CorpusSpec(seed=options.seed)
    texts = list(iter_documents(size, spec))
    real: Matrix = context["real"][:size]
    vectors = corpus_vectors(real, context["base"], size, seed=options.seed)
    queries = make_queries(options.queries, spec)
    qv = context["query_vectors"][: len(queries)]
    corpus = Corpus(
        [f"d{i}" for i in range(size)],
        texts,
        vectors,
        ["default"] * size,
        queries,
        qv,
        [None] * len(queries),
    )
    truth = [set(f"d{i}" for i in keys) for keys in exact_top_k(vectors, qv, K)]
    label = size_label(size)
    builds, runs = _measure(corpus, options, context, label)
    _absent(outcome, label, builds)
    methods = {}
    for method, run in runs.items():
        if run.error:
            outcome.skipped[f"{label}.{method}"] = f"failed: {run.error}"
            continue
        figures: dict[str, Any] = metrics.latency(run.seconds)
        if method.endswith("(vector)"):
            hits = [
                len(set(found[:K]) & want) / K
                for found, want in zip(run.results, truth, strict=True)
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
    }
    outcome.tables.append(synthetic_table(outcome.figures[label]))


def run(
    options: Options, *, embedder: Embedder | None = None, progress: ProgressFactory = silent
) -> Outcome:
    """Run LoCoMo and the synthetic corpus through embedmind and its peers.

    With ``options.backend == "postgres"`` the peers are PostgreSQL's
    (:func:`.peers_postgres.run_all`); otherwise Chroma and LanceDB.

    Args:
        options: Sizes, queries, seed, engines, LoCoMo.
        embedder: The embedder (default: a new ``MiniLMEmbedder``).
        progress: Progress bar factory.

    Returns:
        Figures per engine and mode, ratios against each peer, tables.
    """
    if embedder is None:
        from embedmind.embedders.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    spec = CorpusSpec(seed=options.seed)
    outcome = Outcome(packages=("chromadb", "lancedb", "pyarrow"))
    postgres = options.backend == "postgres"
    for name in () if postgres else options.engines or tuple(ENGINES):
        module, _ = REQUIRES.get(name, ("", ""))
        if module and load(module)[0] is None:
            outcome.skipped[name] = load(module)[1]
    head = min(max(options.sizes), options.embed_limit)
    started = time.perf_counter()
    real = np.asarray(embedder.embed_documents(list(iter_documents(head, spec))), np.float32)
    embed_rate = head / (time.perf_counter() - started)
    base = (
        real[:BASE_TEXTS]
        if len(real) >= BASE_TEXTS
        else np.asarray(
            embedder.embed_documents(list(iter_documents(BASE_TEXTS, spec))), np.float32
        )
    )
    qv = query_vectors(embedder, make_queries(options.queries, spec))
    with tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp:
        context = {
            "embedder": embedder,
            "progress": progress,
            "workdir": Path(tmp),
            "real": real,
            "base": base,
            "query_vectors": qv,
            "embed_rate": embed_rate,
            "index_from": options.vector_index_from,
        }
        if postgres:
            from embedmind_bench import peers_postgres

            peers_postgres.run_all(options, context, outcome)
            return outcome
        if options.locomo:
            _locomo(options, context, outcome)
        for size in options.sizes:
            _synthetic(size, options, context, outcome)
    outcome.ratios = ratios(outcome.figures)
    return outcome
