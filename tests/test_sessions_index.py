"""Migration 5: session context's neighbour lookups seek ``memories_by_session``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from query_plans import plan, traced
from schema_files import file_at_version, indexes

import embedmind
from embedmind.backend.sqlite import migrations
from embedmind.backend.sqlite import session_rows as sessions
from embedmind.backend.sqlite.session_rows import Place

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def test_each_neighbour_lookup_is_one_seek_of_the_session_index() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many(
            [
                embedmind.Draft(
                    f"turn {i}", namespace=f"n{i % 2}", session_id=f"s{i % 3}", agent=f"a{i % 4}",
                    created_at=T0 + dt.timedelta(minutes=i),
                )
                for i in range(60)
            ]
        )  # fmt: skip
        with store._db.read() as conn:
            (key, at), (high_key, high_at) = conn.execute(
                "SELECT key, created_at FROM memories WHERE namespace = 'n0' AND session_id = 's0' "
                "ORDER BY created_at LIMIT 2 OFFSET 3"
            ).fetchall()
            low, high = Place("n0", "s0", at, key), Place("n0", "s0", high_at + 9, high_key)

            def lookups() -> None:
                sessions.indexed_before(conn, low)
                sessions.indexed_after(conn, low)
                sessions.indexed_between(conn, low, high)

            statements = traced(conn, lookups)
            assert len(statements) == 3
            for sql, bindings in statements:
                steps = plan(conn, sql, bindings)
                assert "memories_by_session" in steps[0], steps
                assert "created_at" in steps[0], steps  # a range seek, not a session scan
                assert not any("TEMP B-TREE" in step for step in steps), steps


def test_opening_a_version_4_file_adds_the_index(tmp_path: Path) -> None:
    with embedmind.Store.open(file_at_version(tmp_path / "old.mind", 4), embedder=None) as store:
        assert store.stats().schema_version == migrations.LATEST
        assert "memories_by_session" in indexes(store)
