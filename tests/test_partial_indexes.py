"""Migration 10: a session filter seeks the session index; ``superseded_by IS NULL`` seeks none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from query_plans import plan, traced
from schema_files import file_at_version, indexes

import embedmind
from embedmind.backend.sqlite import migrations
from embedmind.embedders.hashing import HashingEmbedder

DIMS = 16


def _plans(store: embedmind.Store, run: Any) -> list[tuple[str, list[str]]]:
    """Each SELECT ``run()`` executes on the store's read connection, with SQLite's plan."""
    with store._db.read() as conn:
        return [
            (sql, plan(conn, sql, bindings))
            for sql, bindings in traced(conn, run)
            if sql.lstrip().upper().startswith("SELECT")
        ]


def _store() -> embedmind.Store:
    store = embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS))
    store.remember_many(
        [
            embedmind.Draft(
                f"note {i} on parks and budgets", session_id="chat" if i % 40 == 0 else None
            )
            for i in range(600)
        ]
    )
    return store


def test_a_session_filter_without_a_namespace_seeks_the_session_index() -> None:
    # Before, SQLite read every live memory through memories_by_superseder
    # (superseded_by IS NULL) to score the session's vectors exactly.
    with _store() as store:
        query = np.ones(DIMS, dtype=np.float32)
        hits: list[Any] = []

        def recall() -> None:
            hits.extend(store.recall("", mode="vector", vector=query, session_id="chat", k=5).hits)

        plans = _plans(store, recall)
        assert [h.memory.session_id for h in hits] == ["chat"] * 5
    scored = [steps for sql, steps in plans if "JOIN vectors v" in sql and "session_id = ?" in sql]
    assert scored, [sql for sql, _ in plans]
    for steps in scored:
        assert "SEARCH m USING INDEX memories_by_session (session_id=?)" in steps, steps
    assert not [s for _, s in plans if any("memories_by_superseder" in step for step in s)]


def test_the_supersession_lookup_still_seeks_the_superseder_index() -> None:
    with _store() as store:
        old = store.remember("Alice lives in Paris")
        new = store.remember("Alice lives in Berlin", supersedes=[old.id])
        lineages: list[Any] = []
        plans = _plans(store, lambda: lineages.append(store.lineage(new.id)))
        assert [m.id for m in lineages[0].older] == [old.id]
    lookups = [steps for sql, steps in plans if "superseded_by = ?" in sql]
    assert lookups, [sql for sql, _ in plans]
    for steps in lookups:
        assert any("USING INDEX memories_by_superseder (superseded_by=?)" in s for s in steps), (
            steps
        )


def test_opening_a_version_9_file_makes_the_superseder_index_partial(tmp_path: Path) -> None:
    with embedmind.Store.open(file_at_version(tmp_path / "old.mind", 9), embedder=None) as store:
        assert store.stats().schema_version == migrations.LATEST
        sql = indexes(store)
    assert "WHERE superseded_by IS NOT NULL" in sql["memories_by_superseder"]
    assert "(session_id, namespace, created_at, key)" in sql["memories_by_session"]
    assert "WHERE session_id IS NOT NULL" in sql["memories_by_session"]
