"""The vector channel's in-memory owner map and its array selection (vector_owners, vector_search)."""

from __future__ import annotations

import apsw
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embedmind.backend.sqlite.vector_owners import UNKNOWN, OwnerMap
from embedmind.backend.sqlite.vector_search import _select_arrays, select


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


@given(
    st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from([0.5, 0.25, 0.125, -0.5, 0.875])),
        max_size=40,
    ),
    st.integers(1, 15),
    st.sampled_from([1, 2, None]),
)
def test_array_selection_equals_the_per_hit_one(
    hits: list[tuple[int, float]], k: int, cap: int | None
) -> None:
    # The per-hit Python it replaced: sort by (-cosine, vec_key), then select.
    vecs = np.arange(1, len(hits) + 1, dtype=np.int64)[::-1].copy()  # graph order != key order
    owners = np.array([o for o, _ in hits], np.int64)
    sims = np.array([s for _, s in hits], np.float32)
    order = np.lexsort((vecs, -sims))
    found = (vecs[order], owners[order], sims[order])
    triples = zip(vecs.tolist(), owners.tolist(), sims.tolist(), strict=True)
    expected = select(sorted(triples, key=lambda h: (-h[2], h[0])), k, cap)
    assert _select_arrays(found, k, cap) == expected
