"""The HNSW indexes' build settings, for new stores and for stores made before migration 6.

``m = 16`` (pgvector's default) left recall@10 at 0.969 of exact on the peers
corpus at 100k whatever the search depth (0.979 at pgvector's ceiling); ``m = 32``
gives 0.995 (``schema.HNSW_M``). A 20k synthetic corpus cheap enough for every
``make test`` reaches 1.000 with either setting, so the settings themselves are
checked here, and the upgrade path of an existing store: migration 6 records the
new settings without rebuilding, the old graph keeps answering (and taking
inserts) consistently, and a ``REINDEX`` builds it with the new settings.
"""

from __future__ import annotations

from collections.abc import Iterator

import bucketed_vectors
import numpy as np
import psycopg
import pytest
from psycopg import sql

from embedmind.backend.postgres import schema
from embedmind.backend.postgres.vector_channel import Space, vector_literal, vector_top

DIMS = 16
K = 10


def _options(conn: psycopg.Connection, schema_name: str) -> dict[str, dict[str, str]]:
    """Each HNSW index of ``schema_name``: its recorded settings (``reloptions``)."""
    rows = conn.execute(
        "SELECT c.relname, c.reloptions FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname LIKE '%%hnsw' ORDER BY c.relname",
        (schema_name,),
    ).fetchall()
    return {name: dict(o.split("=", 1) for o in options or []) for name, options in rows}


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIMS))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _recall(conn: psycopg.Connection, vectors: np.ndarray, queries: np.ndarray) -> float:
    """The channel's unfiltered recall@10 (the HNSW path) against brute force."""
    found = []
    for q in queries:
        with conn.transaction():
            hits, plan = vector_top(conn, Space("memory_vectors", DIMS), q, sql.SQL("true"), [], K)
        assert plan.path == "hnsw"
        exact = set((np.argsort(-(vectors @ q), kind="stable")[:K] + 1).tolist())
        found.append(len({h.key for h in hits} & exact) / K)
    return float(np.mean(found))


@pytest.fixture
def conn(pg_dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        yield c


def test_a_new_store_builds_its_indexes_with_the_settings(conn: psycopg.Connection) -> None:
    schema.migrate(conn, "fresh")
    with conn.transaction():
        schema.record_dimensions(conn, DIMS)
    wanted = {"m": str(schema.HNSW_M), "ef_construction": str(schema.HNSW_EF_CONSTRUCTION)}
    assert schema.HNSW_M >= 32  # 16 misses at 100k: the module's docstring has the figures
    assert _options(conn, "fresh") == {"fragments_hnsw": wanted, "memory_vectors_hnsw": wanted}


def test_migration_6_on_a_store_without_a_dimension_only_records_itself(
    conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as old:
        old.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:5])
        old.setattr(schema, "LATEST", 5)
        assert schema.migrate(conn, "undimensioned") == 5
    assert schema.migrate(conn, "undimensioned") == schema.LATEST
    assert _options(conn, "undimensioned") == {}  # no index until the model is recorded


def test_a_store_made_before_migration_6_is_upgraded_and_rebuilt(
    conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(6)
    vectors, queries = _unit(rng, 3_000), _unit(rng, 20)
    # The previous build: five migrations, its indexes made with m = 16.
    with monkeypatch.context() as old:
        old.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:5])
        old.setattr(schema, "LATEST", 5)
        old.setattr(schema, "HNSW_M", 16)
        bucketed_vectors.load(conn, "legacy", vectors[:2_000], np.zeros(2_000, np.int64))
        assert schema.schema_version(conn, "legacy") == 5
        assert _options(conn, "legacy")["memory_vectors_hnsw"]["m"] == "16"

    assert schema.migrate(conn, "legacy") == schema.LATEST
    versions = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
    assert (6, "m0006_hnsw_links") in versions.fetchall()
    wanted = {"m": str(schema.HNSW_M), "ef_construction": str(schema.HNSW_EF_CONSTRUCTION)}
    assert _options(conn, "legacy") == {"fragments_hnsw": wanted, "memory_vectors_hnsw": wanted}

    # Not rebuilt: the graph built with m = 16 takes more vectors (pgvector links them
    # with the m of its meta page) and answers against brute force over all of them.
    with conn.transaction(), conn.cursor() as cur:
        for i in range(2_000, 3_000):
            cur.execute(
                "INSERT INTO memories (id, namespace, content, tier, level, created_at, "
                "updated_at, valid_from, fingerprint) "
                "VALUES (%s, 'ns', 'm', 'semantic', 'explicit', %s, %s, %s, %s)",
                (f"m{i}", i, i, i, f"f{i}"),
            )
        with cur.copy('COPY memory_vectors (key, start, "end", embedding) FROM STDIN') as copy:
            for i in range(2_000, 3_000):
                copy.write_row((i + 1, 0, 1, vector_literal(vectors[i])))
    conn.execute("ANALYZE")
    keys = conn.execute("SELECT min(key), max(key) FROM memories").fetchone()
    assert keys == (1, 3_000)
    assert _recall(conn, vectors, queries) >= 0.99

    # The operator's rebuild (docs/how-to/postgres.md) takes the recorded settings.
    conn.execute("REINDEX INDEX CONCURRENTLY memory_vectors_hnsw")
    assert _options(conn, "legacy")["memory_vectors_hnsw"] == wanted
    assert _recall(conn, vectors, queries) >= 0.99
