"""``embedmind bench locomo``: LoCoMo retrieval through the public API, per category.

The protocol is the data's README (:mod:`.locomo_data`): one memory per
dialog turn, each conversation its own namespace, questions outside category
5 with valid evidence. The turns are embedded once with the store's own
embedder and written with ``remember_many`` (vectors given, so the embedding
and the writes are timed apart); every question is then asked through
``Store.recall`` in ``text``, ``vector`` and ``hybrid`` mode (query embedding
included), beside the fusion recall used before (:data:`BEFORE`, depth ``2k``
and RRF 60, rebuilt from the same store's text and vector lists), beside a
second store holding the same turns with session context on
(:mod:`.locomo_context`: ``text+context``, ``hybrid+context``, and the
query-side options ``hybrid+context+widen`` and ``hybrid+context+latest``), and
round-robin with three anchors over the same turns and vectors:
bm25s, exact cosine, and their RRF (:mod:`.locomo_anchors`). Figures:
recall@5/10 and hit@5/10 overall and per category, p50/p95 per method; for
each embedmind method the calibration of its top-10 scores (expected
calibration error and a score-bin table), and for every method recall@10 and
hit@10 per conversation with their spread (:mod:`.locomo_calibration`).

Expected duration on 2 cores: 1-3 minutes (2,760 turns to embed).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embedmind.fusion import RRF_K, rrf
from embedmind.store import Store
from embedmind_bench import locomo_anchors as anchors
from embedmind_bench import locomo_calibration as calibration
from embedmind_bench import metrics
from embedmind_bench.locomo_context import text_only_ingest
from embedmind_bench.locomo_data import (
    CATEGORIES,
    KS,
    Dataset,
    Question,
    data_path,
    load,
    score,
)
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.timing import Searcher, round_robin
from embedmind_bench.vectordata import Embedder

BEFORE = "hybrid-before"
"""The fusion recall used before it stopped depending on ``k``: each channel's
first ``2k`` candidates, RRF constant 60. Rebuilt here from the text and
vector modes' lists (two recalls, so its latency is not comparable)."""


MODES = ("text", "vector", "hybrid")
# (embedmind mode, anchor it is held against)
PAIRS = (
    ("text", "bm25s"),
    ("vector", "exact"),
    ("hybrid", "rrf"),
    ("hybrid", "text"),
    ("hybrid", "vector"),
    ("hybrid", BEFORE),
    ("hybrid+context", "hybrid"),
    ("hybrid+context", BEFORE),
    ("hybrid+context+widen", "hybrid+context"),
    ("hybrid+context+latest", "hybrid+context"),
)
BINNED = ("hybrid+context",)
"""The methods whose calibration table is printed: a new store's default recall."""
QUERY_SIDE = {"widen": {"widen": True}, "latest": {"latest": True}}
"""The episodic seed's query-side options, asked of the context store as extra rows
(``recall(widen=True)``, ``recall(latest=True)``; :mod:`.locomo_query_side` has
them per category with standard errors and leave-one-conversation-out)."""


@dataclass
class Options:
    """How to run the LoCoMo benchmark.

    Attributes:
        data: The data file (default: :func:`.locomo_data.data_path`).
        questions: Ask only the first this many questions (all when ``None``).
        variant: MiniLM graph variant (``int8`` or ``fp32``).
        anchors: Also run bm25s, exact cosine and their RRF.
        workdir: Where the store goes (a temporary directory when ``None``).
    """

    data: Path | None = None
    questions: int | None = None
    variant: str = "int8"
    anchors: bool = True
    workdir: Path | None = None


def _ingest(
    store: Store, data: Dataset, embedder: Embedder, given: np.ndarray | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Embed every turn (unless ``given``), then write them with their vectors."""
    started = time.perf_counter()
    vectors = (
        given
        if given is not None
        else np.asarray(embedder.embed_documents([d.content for d in data.drafts]), np.float32)
    )
    embed_s = time.perf_counter() - started
    drafts = [dataclasses.replace(d, vector=v) for d, v in zip(data.drafts, vectors, strict=True)]
    started = time.perf_counter()
    store.remember_many(drafts, batch_size=512)
    write_s = time.perf_counter() - started
    turns = len(drafts)
    return vectors, {
        "turns": turns,
        "embed_s": embed_s,
        "write_s": write_s,
        "embed_turns_per_s": turns / embed_s,
        "write_turns_per_s": turns / write_s,
        "turns_per_s_with_embedding": turns / (embed_s + write_s),
    }


def _searchers(
    store: Store,
    data: Dataset,
    questions: list[Question],
    vectors: np.ndarray,
    embedder: Embedder,
    options: Options,
    skipped: dict[str, str],
    context: Store | None = None,
    scores: dict[str, dict[int, list[float]]] | None = None,
) -> dict[str, Searcher]:
    """One searcher per method: embedmind's three modes, then the anchors.

    An embedmind searcher also keeps each question's hit scores in
    ``scores[method][question index]`` (for the calibration figures).
    """
    kept = scores if scores is not None else {}

    def mode_searcher(name: str, mode: str, asked: Store = store, **options: Any) -> Searcher:
        seen = kept.setdefault(name, {})

        def search(i: int) -> list[Any]:
            q = questions[i]
            result = asked.recall(q.text, k=max(KS), namespace=q.namespace, mode=mode, **options)
            seen[i] = [hit.score for hit in result]
            return result.ids

        return search

    found: dict[str, Searcher] = {mode: mode_searcher(mode, mode) for mode in MODES}
    found[BEFORE] = _before_searcher(store, questions)
    if context is not None:
        for mode in ("text", "hybrid"):
            found[f"{mode}+context"] = mode_searcher(f"{mode}+context", mode, context)
        for name, extra in QUERY_SIDE.items():
            method = f"hybrid+context+{name}"
            found[method] = mode_searcher(method, "hybrid", context, **extra)
    if not options.anchors:
        return found
    qvecs = {q.text: np.asarray(embedder.embed_query(q.text), np.float32) for q in questions}
    exact = anchors.exact_retriever(data, vectors, qvecs)
    bm25s, reason = anchors.bm25s_retriever(data)
    found["exact"] = lambda i: exact(questions[i])
    if bm25s is None:
        skipped["bm25s"] = skipped["rrf"] = reason
        return found
    found["bm25s"] = lambda i: bm25s(questions[i])
    deep_bm25s, _ = anchors.bm25s_retriever(data, depth=50)
    assert deep_bm25s is not None  # bm25s imported above
    fused = anchors.rrf(deep_bm25s, anchors.exact_retriever(data, vectors, qvecs, depth=50))
    found["rrf"] = lambda i: fused(questions[i])
    return found


def _before_searcher(store: Store, questions: list[Question]) -> Searcher:
    def search(i: int) -> list[Any]:
        q, k = questions[i], max(KS)
        lists = [
            [(key, 1.0 / rank) for rank, key in enumerate(ids, start=1)]
            for ids in (
                store.recall(q.text, k=2 * k, namespace=q.namespace, mode=mode).ids
                for mode in ("text", "vector")
            )
        ]
        return [key for key, _ in rrf(lists, RRF_K)[:k]]

    return search


def _tables(methods: dict[str, Any], questions: int, ingest: dict[str, Any]) -> list[Table]:
    """The per-category quality table and the latency table."""
    columns = [f"{m}@{k}" for m in ("recall", "hit") for k in KS]
    quality = Table(
        f"LoCoMo dev, {questions} questions, per category", ["method", "category", "n", *columns]
    )
    latency = Table(
        "LoCoMo query latency (embedmind modes embed the query; anchors get its vector)",
        ["method", "p50 ms", "p95 ms"],
    )
    for name, figures in methods.items():
        for group in ("overall", *CATEGORIES.values()):
            row = figures["scores"].get(group)
            if row:
                quality.add(
                    name, group, str(int(row["questions"])), *(fmt(row[c], ".3f") for c in columns)
                )
        latency.add(
            name, fmt(figures["latency"]["p50_ms"], ".2f"), fmt(figures["latency"]["p95_ms"], ".2f")
        )
    latency.notes.append(
        f"ingest: {ingest['turns']} turns, embedder {ingest['embed_turns_per_s']:,.0f} turns/s, "
        f"writes {ingest['write_turns_per_s']:,.0f} turns/s, "
        f"{ingest['turns_per_s_with_embedding']:,.0f} turns/s with embedding"
    )
    text_only = ingest.get("text_only")
    if text_only:
        latency.notes.append(
            f"text-only ingest (lexical indexing): {text_only['without_context_s']:.3f} s "
            f"without session context, {text_only['with_context_s']:.3f} s with "
            f"({text_only['ratio']:.2f}x)"
        )
    return [quality, latency]


def _ratios(methods: dict[str, Any]) -> dict[str, float | None]:
    """Embedmind's modes against the anchors and each other, on recall@10 and hit@10."""
    out: dict[str, float | None] = {}
    for ours, theirs in PAIRS:
        for figure in ("recall@10", "hit@10"):
            a = methods.get(ours, {}).get("scores", {}).get("overall", {}).get(figure)
            b = methods.get(theirs, {}).get("scores", {}).get("overall", {}).get(figure)
            out[f"{figure}.{ours}/{theirs}"] = metrics.ratio(a, b)
    p50 = {name: m["latency"]["p50_ms"] for name, m in methods.items()}
    out["p50.hybrid/text"] = metrics.ratio(p50.get("hybrid"), p50.get("text"))
    out["p50.hybrid+context/hybrid"] = metrics.ratio(p50.get("hybrid+context"), p50.get("hybrid"))
    for name in QUERY_SIDE:
        out[f"p50.hybrid+context+{name}/hybrid+context"] = metrics.ratio(
            p50.get(f"hybrid+context+{name}"), p50.get("hybrid+context")
        )
    return out


def run(
    options: Options, *, embedder: Embedder | None = None, progress: ProgressFactory = silent
) -> Outcome:
    """Run LoCoMo through the public API in every mode, beside the anchors.

    Args:
        options: Data file, question cap, variant, anchors.
        embedder: The embedder (default: a new ``MiniLMEmbedder`` of ``options.variant``).
        progress: Progress bar factory.

    Returns:
        Scores per method and category, latencies, ratios and tables; status
        ``skipped`` (no exception) when the data file is missing.
    """
    path = data_path(options.data)
    if not path.exists():
        reason = f"LoCoMo data not found at {path} (pass --data or set $EMBEDMIND_LOCOMO)"
        return Outcome(status="skipped", skipped={"locomo": reason})
    data = load(path)
    questions = data.questions[: options.questions] if options.questions else data.questions
    if embedder is None:
        from embedmind.embedders.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder(variant=options.variant)
    outcome = Outcome(packages=("bm25s", "PyStemmer"))
    with (
        tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp,
        # The baseline is today's lexical channel (no context); ``ctx`` is a new
        # store's default (context on).
        Store.open(
            Path(tmp) / "locomo.mind", embedder=embedder, synchronous="NORMAL",
            session_context=False,
        ) as store,
        Store.open(
            Path(tmp) / "context.mind", embedder=embedder, synchronous="NORMAL",
            session_context=True,
        ) as ctx,
    ):  # fmt: skip
        vectors, ingest = _ingest(store, data, embedder)
        ingest["with_context"] = _ingest(ctx, data, embedder, vectors)[1]
        scores: dict[str, dict[int, list[float]]] = {}
        searchers = _searchers(
            store, data, questions, vectors, embedder, options, outcome.skipped, ctx, scores
        )
        bar = progress("LoCoMo questions", len(questions))
        runs = round_robin(searchers, len(questions), warmup=5, bar=bar)
        bar.close()
        ingest["text_only"] = text_only_ingest(data, Path(tmp))
    methods: dict[str, Any] = {}
    for name, found in runs.items():
        if found.error:
            outcome.skipped[name] = f"failed: {found.error}"
            continue
        ranked = list(zip(questions, found.results, strict=True))
        methods[name] = {
            "scores": score(ranked),
            "latency": metrics.latency(found.seconds),
            "folds": calibration.folds(ranked),
        }
        if name in scores:
            kept = [scores[name][i] for i in range(len(questions))]
            answers = zip(questions, found.results, kept, strict=True)
            methods[name]["calibration"] = calibration.calibration(answers)
    outcome.figures = {
        "dataset": {
            "path": str(path),
            "turns": len(data.drafts),
            "questions": len(questions),
            "skipped_questions": data.skipped,
        },
        "ingest": ingest,
        "methods": methods,
    }
    outcome.ratios = _ratios(methods)
    outcome.tables = [
        *_tables(methods, len(questions), ingest),
        *calibration.tables(methods, BINNED),
    ]
    return outcome
