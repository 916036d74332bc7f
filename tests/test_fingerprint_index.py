"""Migrations 9 and 11: an exact-twin lookup is one seek of a fingerprint prefix index."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from query_plans import plan, traced
from schema_files import file_at_version, indexes

import embedmind
from embedmind import drafts
from embedmind.backend import memory_rows
from embedmind.backend.sqlite import migrations


def _fill(store: embedmind.Store, n: int) -> None:
    store.remember_many(
        [embedmind.Draft(f"fact number {i}", namespace="n", tier="semantic") for i in range(n)]
    )


@pytest.mark.parametrize("content", ["fact number 77", "a fact never stored"])
def test_a_twin_lookup_seeks_the_fingerprint_index_not_the_namespace(content: str) -> None:
    # Without the named index SQLite walked memories_by_namespace in time
    # order: a lookup with no twin read every memory of the namespace.
    with embedmind.Store.open(":memory:", embedder=None) as store:
        _fill(store, 200)
        with store._db.read() as conn:
            statements = traced(conn, lambda: store.find_by_fingerprint("n", "semantic", content))
            wanted = drafts.fingerprint(content)
            lookups = [(sql, b) for sql, b in statements if wanted in (b or ())]
            assert len(lookups) == 1, statements
            sql, bindings = lookups[0]
            steps = plan(conn, sql, bindings)
        assert "USING INDEX memories_by_fingerprint (<expr>=? AND namespace=?)" in steps[0], steps
        assert not any("memories_by_namespace" in step for step in steps), steps


def test_fingerprints_that_share_the_indexed_prefix_are_told_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = drafts.fingerprint

    def colliding(content: str) -> str:
        return "0" * migrations.FINGERPRINT_PREFIX + real(content)[migrations.FINGERPRINT_PREFIX :]

    monkeypatch.setattr(drafts, "fingerprint", colliding)
    monkeypatch.setattr(memory_rows, "fingerprint", colliding)
    with embedmind.Store.open(":memory:", embedder=None) as store:
        first = store.remember("Alice prefers green tea", namespace="n", tier="semantic")
        second = store.remember("Bob prefers black coffee", namespace="n", tier="semantic")
        prefix = migrations.FINGERPRINT_PREFIX
        assert first.fingerprint[:prefix] == second.fingerprint[:prefix]
        assert store.find_by_fingerprint("n", "semantic", "BOB prefers black  coffee").id == (
            second.id
        )
        assert store.find_by_fingerprint("n", "semantic", "alice prefers green tea").id == first.id
        assert store.find_by_fingerprint("n", "semantic", "Carol prefers water") is None
        again = store.remember("Bob prefers black coffee", namespace="n", dedup="exact")
        assert again.id == second.id


@pytest.mark.parametrize("version", [8, 10])
def test_opening_an_older_file_replaces_the_index(tmp_path: Path, version: int) -> None:
    with embedmind.Store.open(
        file_at_version(tmp_path / "old.mind", version), embedder=None
    ) as store:
        assert store.stats().schema_version == migrations.LATEST
        kept = store.remember("Alice prefers green tea", namespace="n")
        assert store.find_by_fingerprint("n", kept.tier, "alice prefers GREEN tea").id == kept.id
        assert migrations.FINGERPRINT_KEY in indexes(store)["memories_by_fingerprint"]


def test_migration_11_rebuilds_the_index_smaller_over_the_stored_memories(tmp_path: Path) -> None:
    path = tmp_path / "v10.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        _fill(store, 2_000)

    def index_bytes() -> int:
        conn = apsw.Connection(str(path))
        try:
            return int(
                conn.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name = 'memories_by_fingerprint'"
                ).fetchone()[0]
            )
        finally:
            conn.close()

    conn = apsw.Connection(str(path))  # back to the index migration 9 made, at version 10
    migrations.m0009_fingerprint_prefix(conn)
    conn.execute("PRAGMA user_version = 10")
    conn.close()
    before = index_bytes()
    with embedmind.Store.open(path, embedder=None) as store:
        assert store.stats().schema_version == migrations.LATEST
        for i in (0, 777, 1_999):
            found = store.find_by_fingerprint("n", "semantic", f"FACT number {i}")
            assert found is not None and found.content == f"fact number {i}"
    assert index_bytes() < 0.8 * before
