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
                sessions.indexed_neighbours(conn, [(low, high), (high, high)])
                sessions.indexed_between(conn, low, high)

            statements = traced(conn, lookups)
            assert len(statements) == 2
            for sql, bindings in statements:
                steps = plan(conn, sql, bindings)
                seeks = [step for step in steps if step.startswith("SEARCH m ")]
                assert seeks and len(seeks) == len([s for s in steps if "m USING" in s]), steps
                for step in seeks:  # a range seek, not a session scan
                    assert "memories_by_session" in step and "created_at" in step, steps
                assert not any("TEMP B-TREE" in step for step in steps), steps
                assert not any(step.startswith("SCAN m") for step in steps), steps


def test_the_batched_neighbours_are_the_ones_a_walk_of_the_dialog_finds() -> None:
    # Oracle: each dialog's indexed memories in (created_at, key) order, walked in Python.
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many(
            [
                embedmind.Draft(
                    f"turn {i}", namespace=f"n{i % 2}", session_id=f"s{i % 3}",
                    created_at=T0 + dt.timedelta(minutes=i // 4),  # ties: the key decides
                )
                for i in range(60)
            ]
        )  # fmt: skip
        with store._db.read() as conn:
            rows = conn.execute(
                "SELECT namespace, session_id, created_at, key FROM memories ORDER BY key"
            ).fetchall()
            places = [Place(*row) for row in rows]
            spans = [(a, b) for a in places for b in places if a.dialog == b.dialog and a <= b]
            spans += [(Place("n0", "none", 0, 1), Place("n0", "none", 0, 1))]  # no such dialog
            found = sessions.indexed_neighbours(conn, spans)
        for (low, high), (before, after) in zip(spans, found, strict=True):
            dialog = sorted(p for p in places if p.dialog == low.dialog)
            earlier = [p.key for p in dialog if p < low]
            later = [p.key for p in dialog if p > high]
            assert (before, after) == (
                earlier[-1] if earlier else None,
                later[0] if later else None,
            )


def test_opening_a_version_4_file_adds_the_index(tmp_path: Path) -> None:
    with embedmind.Store.open(file_at_version(tmp_path / "old.mind", 4), embedder=None) as store:
        assert store.stats().schema_version == migrations.LATEST
        assert "memories_by_session" in indexes(store)
