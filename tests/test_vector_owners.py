"""The in-memory vec_key -> memory key map of the vector channel (vector_owners)."""

from __future__ import annotations

import apsw
import numpy as np
import pytest

from embedmind.backend.sqlite.vector_owners import UNKNOWN, OwnerMap


@pytest.fixture
def conn() -> apsw.Connection:
    db = apsw.Connection(":memory:")
    db.execute(
        "CREATE TABLE vectors (vec_key INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER NOT NULL)"
    )
    return db


def _owners(owner_map: OwnerMap, conn: apsw.Connection, *vec_keys: int) -> list[int]:
    return owner_map.owners(conn, np.array(vec_keys, np.int64)).tolist()  # type: ignore[no-any-return]


def test_unknown_vec_keys_are_looked_up_and_learned(conn: apsw.Connection) -> None:
    conn.execute("INSERT INTO vectors (key) VALUES (7), (7), (9)")
    owner_map = OwnerMap()
    assert _owners(owner_map, conn, 3, 1, 40) == [9, 7, UNKNOWN]  # 40: no such row
    assert len(owner_map) == 2
    conn.execute("DELETE FROM vectors")
    # Learned committed truth is answered from memory (a vec_key is never re-owned).
    assert _owners(owner_map, conn, 1, 3) == [7, 9]


def test_nothing_is_learned_inside_a_write_transaction(conn: apsw.Connection) -> None:
    # A rolled-back transaction's vec_keys are handed out again by SQLite: an
    # owner learned from its rows would name the wrong memory afterwards.
    owner_map = OwnerMap()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO vectors (key) VALUES (7)")
    assert _owners(owner_map, conn, 1) == [7]  # seen, uncommitted
    owner_map.learn(conn, [1], [7])
    conn.execute("ROLLBACK")
    conn.execute("INSERT INTO vectors (key) VALUES (9)")  # reuses vec_key 1
    assert _owners(owner_map, conn, 1) == [9]


def test_learning_grows_the_map_past_its_size(conn: apsw.Connection) -> None:
    owner_map = OwnerMap()
    owner_map.learn(conn, [2], [5])
    owner_map.learn(conn, np.array([1_000, 3]), np.array([6, 8]))
    assert _owners(owner_map, conn, 2, 1_000, 3) == [5, 6, 8]
    assert len(owner_map) == 3
