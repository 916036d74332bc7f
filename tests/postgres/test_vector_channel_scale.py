"""The pgvector channel on a store where a fixed HNSW search depth misses (issue 17).

Embedding-like vectors — each a noisy mix of two of a few base vectors, so they
crowd into tight clusters as paraphrases do — are where pgvector's HNSW graph
needs a deeper search as the store grows, and where a filtered graph walk loses
the admitted top ``k`` once the filter keeps a few percent of the rows. Both are
checked against brute force at every selectivity, unfiltered included: recall@10
at least 0.99 of exact, and never fewer than ``min(k, admitted)`` hits.
"""

from __future__ import annotations

from collections.abc import Iterator

import bucketed_vectors
import numpy as np
import psycopg
import pytest
from psycopg import sql

from embedmind.backend.postgres.vector_channel import (
    Space,
    ef_search,
    exact_bound,
    vector_top,
)

N = 20_000
DIMS = 64
BASES = 256
BUCKETS = 100_000
QUERIES = 30
K = 10
SELECTIVITIES = (1.0, 0.4, 0.25, 0.15, 0.1, 0.05, 0.01, 0.002)
"""Unfiltered, broad (the index answers), a few percent (a filtered graph walk loses
the admitted top k there: the exact scan must answer), and below 1 %."""


def _mix(base: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors, each mostly one base vector, partly another, plus a little noise."""
    a = base[rng.integers(0, len(base), n)]
    b = base[rng.integers(0, len(base), n)]
    weight = rng.uniform(0.55, 0.95, size=(n, 1))
    mixed = weight * a + (1 - weight) * b + 0.01 * rng.standard_normal(a.shape)
    return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1717)
    base = rng.standard_normal((BASES, DIMS))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    return {
        "vectors": _mix(base, N, rng),
        "queries": _mix(base, QUERIES, rng),
        "bucket": rng.integers(0, BUCKETS, N),
    }


@pytest.fixture(scope="module")
def conn(pg_dsn: str, data: dict[str, np.ndarray]) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        bucketed_vectors.load(c, "scale", data["vectors"], data["bucket"])
        yield c


@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_recall_against_brute_force_at_every_selectivity(
    conn: psycopg.Connection, data: dict[str, np.ndarray], selectivity: float
) -> None:
    threshold = int(selectivity * BUCKETS)
    admitted = data["bucket"] < threshold
    keys = np.flatnonzero(admitted)
    condition = sql.SQL("(m.metadata->>'bucket')::int < %s")
    recalls, paths = [], set()
    for q in data["queries"]:
        with conn.transaction():
            hits, plan = vector_top(
                conn, Space("memory_vectors", DIMS), q, condition, [threshold], K
            )
        paths.add(plan.path)
        assert len(hits) == min(K, len(keys)), (plan, len(hits))  # never an under-return
        assert all(admitted[h.key - 1] for h in hits)
        exact = keys[np.argsort(-(data["vectors"][keys] @ q), kind="stable")[:K]] + 1
        recalls.append(len({h.key for h in hits} & set(exact.tolist())) / K)
    assert np.mean(recalls) >= 0.99, (selectivity, paths, np.mean(recalls), min(recalls))


def test_the_search_deepens_as_the_store_grows(conn: psycopg.Connection) -> None:
    # pgvector's default ef_search (40), or a fixed 200, misses at 100k (recall 0.82 / 0.89
    # on embedding-like vectors); the depth follows the square root of the indexed rows.
    assert ef_search(K, 10_000) == 200
    assert ef_search(K, 100_000) == 632
    assert ef_search(K, 10_000_000) == 1_000  # pgvector's ceiling
    assert ef_search(100, 1_000) == 400  # never below a few times k
    q = np.ones(DIMS, dtype=np.float32) / np.sqrt(DIMS)
    with conn.transaction():
        _, plan = vector_top(conn, Space("memory_vectors", DIMS), q, sql.SQL("true"), [], K)
    assert plan.path == "hnsw"
    assert plan.ef_search == ef_search(K, N)


def test_the_exact_scan_answers_a_few_percent(conn: psycopg.Connection) -> None:
    # 4 * k * sqrt(20,000) = 5,656 admitted rows at most, above the fixed 2,000.
    assert exact_bound(K, N) == 5_656
    assert exact_bound(K, 100) == 2_000
