"""The pgvector channel against brute force: no under-return, recall@10 >= 0.99 of exact."""

from __future__ import annotations

from collections.abc import Iterator

import bucketed_vectors
import numpy as np
import psycopg
import pytest
from psycopg import sql

from embedmind.backend.postgres.vector_channel import Space, vector_top

N = 4_000
DIMS = 32
BUCKETS = 100_000
SELECTIVITIES = (0.5, 0.03, 0.003, 0.0003)
QUERIES = 20
K = 10
CHUNKED = 200
"""Memories with a second vector (a second chunk): memory search counts them once."""


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(17)
    vectors = rng.standard_normal((N, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    extra = rng.standard_normal((CHUNKED, DIMS)).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    queries = rng.standard_normal((QUERIES, DIMS)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return {
        "vectors": vectors,
        "extra": extra,
        "extra_keys": rng.choice(N, CHUNKED, replace=False),
        "bucket": rng.integers(0, BUCKETS, N),
        "queries": queries,
    }


@pytest.fixture(scope="module")
def conn(pg_dsn: str, data: dict[str, np.ndarray]) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        bucketed_vectors.load(
            c, "vec", data["vectors"], data["bucket"], (data["extra_keys"], data["extra"])
        )
        yield c


def _condition(threshold: int) -> tuple[sql.Composable, list[int]]:
    return sql.SQL("(m.metadata->>'bucket')::int < %s"), [threshold]


def _exact_top(data: dict[str, np.ndarray], q: np.ndarray, admitted: np.ndarray) -> list[int]:
    """Brute force: each memory's best chunk, the k best admitted memories (keys)."""
    best = data["vectors"] @ q
    extra = data["extra"] @ q
    np.maximum.at(best, data["extra_keys"], extra)
    keys = np.flatnonzero(admitted)
    order = keys[np.argsort(-best[keys], kind="stable")]
    return [int(i) + 1 for i in order[:K]]


@pytest.mark.parametrize("exact_below", [2_000, 20], ids=["default-threshold", "index-first"])
@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_filtered_top_k_never_under_returns_and_keeps_recall(
    conn: psycopg.Connection, data: dict[str, np.ndarray], selectivity: float, exact_below: int
) -> None:
    threshold = int(selectivity * BUCKETS)
    admitted = data["bucket"] < threshold
    matching = int(admitted.sum())
    condition, params = _condition(threshold)
    recalls, paths = [], set()
    for q in data["queries"]:
        with conn.transaction():
            hits, plan = vector_top(
                conn,
                Space("memory_vectors", DIMS),
                q,
                condition,
                params,
                K,
                exact_below=exact_below,
            )
        paths.add(plan.path)
        keys = [h.key for h in hits]
        assert len(keys) == len(set(keys)), "a memory counted twice (cap=1)"
        assert len(hits) == min(K, matching), (plan, len(hits), matching)
        assert all(data["bucket"][key - 1] < threshold for key in keys)
        assert [h.cosine for h in hits] == sorted((h.cosine for h in hits), reverse=True)
        exact = _exact_top(data, q, admitted)
        if exact:
            recalls.append(len(set(keys) & set(exact)) / len(exact))
    assert not recalls or np.mean(recalls) >= 0.99, (paths, np.mean(recalls))
    if exact_below == 20 and matching > 100:
        assert "exact" not in paths, paths  # the index answered (or fell back when short)


def test_a_wrong_estimate_falls_back_to_the_exact_scan(
    conn: psycopg.Connection, data: dict[str, np.ndarray]
) -> None:
    # A filter the planner cannot estimate (it guesses a third of the rows) that
    # admits three memories: the index runs dry, the exact scan answers.
    threshold = int(np.sort(data["bucket"])[2]) + 1
    condition, params = _condition(threshold)
    with conn.transaction():
        hits, plan = vector_top(
            conn,
            Space("memory_vectors", DIMS),
            data["queries"][0],
            condition,
            params,
            K,
            exact_below=0,
        )
    assert len(hits) == int((data["bucket"] < threshold).sum()) == 3
    assert plan.path == "hnsw+exact"


def test_uncapped_search_returns_chunks(
    conn: psycopg.Connection, data: dict[str, np.ndarray]
) -> None:
    condition, params = sql.SQL("TRUE"), []
    q = data["extra"][0]
    with conn.transaction():
        hits, _ = vector_top(conn, Space("memory_vectors", DIMS), q, condition, params, 3, cap=None)
    assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)
    assert hits[0].key == int(data["extra_keys"][0]) + 1
