"""The vector channel's in-memory owner map and its admission of candidates (vector_search)."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest
from call_sizes import call_sizes
from hypothesis import example, given
from hypothesis import strategies as st
from query_plans import plan, traced

import embedmind
from embedmind.backend.sqlite import vector_owners, vector_rows
from embedmind.backend.sqlite.vector_owners import UNKNOWN, OwnerMap
from embedmind.backend.sqlite.vector_search import (
    RESCORE_MARGIN,
    Found,
    admitted_prefix,
    select,
)
from embedmind.embedders.hashing import HashingEmbedder


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
        st.tuples(st.integers(0, 6), st.sampled_from([0.5, 0.25, 0.2495, -0.5])),
        max_size=60,
    ),
    st.sets(st.integers(1, 6)),
    st.integers(1, 15),
    st.sampled_from([1, 2, None]),
    st.sampled_from([0, 1, 3, 15]),
    st.booleans(),
)
@example([(5, 0.25)] * 7, {5}, 1, None, 1, False)  # the rest ties: rescoring reads all
@example([(1, 0.5)] + [(0, 0.5)] * 6 + [(2, 0.25), (3, 0.25)], {1, 2, 3}, 3, 1, 0, False)
@example([(1, 0.5), (2, 0.25)] * 6, {1, 2}, 2, None, 0, False)  # unfiltered: one step
# Past the first step only the two candidates near the k-th are read, not a next step of 20.
@example([(1, 0.25)] * 5 + [(2, 0.2495)] * 2 + [(3, -0.5)] * 20, {1, 2, 3}, 1, None, 1, False)
# Only the first hit is made exact: the margin counts from it, not from the k-th.
@example(
    [(1, 0.5)] + [(1, 0.25)] * 4 + [(2, 0.2495)] * 2 + [(3, -0.5)] * 20,
    {1, 2, 3},
    2,
    None,
    1,
    False,
)
def test_the_admitted_prefix_settles_what_checking_every_candidate_would(
    hits: list[tuple[int, float]],
    admitted: set[int],
    k: int,
    cap: int | None,
    exact: int,
    spare: bool,
) -> None:
    # Oracle: check every candidate, then select. The prefix must give the
    # same top k and hold every admitted candidate rescoring could promote.
    db = apsw.Connection(":memory:")
    db.execute("CREATE TABLE memories (key INTEGER PRIMARY KEY, ok INTEGER NOT NULL)")
    db.executemany("INSERT INTO memories VALUES (?, ?)", [(o, o in admitted) for o in range(1, 7)])
    vecs = np.arange(1, len(hits) + 1, dtype=np.int64)[::-1].copy()  # graph order != key order
    owners = np.array([o for o, _ in hits], np.int64)
    sims = np.array([s for _, s in hits], np.float32)
    order = np.lexsort((vecs, -sims))
    ranked = (vecs[order], owners[order], sims[order])
    result: list[tuple[list[Found], int, float]] = []
    statements = traced(
        db,
        lambda: result.append(
            admitted_prefix(db, ranked, ("m.ok = 1", []), k, cap, exact=exact, spare=spare)
        ),
    )
    found, wanted, share = result[0]
    every = [h for h in zip(*(a.tolist() for a in ranked), strict=True) if h[1] in admitted]
    assert found == every[: len(found)]
    if hits and len(every) == len(hits):
        assert wanted == k and share == 1.0
        if cap is None:
            # All pass: the first step settles the top k; past it only the
            # candidates rescoring could lift past the exact-th are read.
            first = min(len(hits), k + max(4, k // 4))
            if first >= k and exact:
                floor = every[min(k, exact) - 1][2] - RESCORE_MARGIN
                first += sum(1 for h in every[first:] if h[2] >= floor)
            assert len(found) == first
            # Each statement is a round of random reads: all passing, one does.
            assert len(statements) == 1
    elif hits and int(ranked[1][0]) not in admitted:  # the best one fails: every prefix fails
        assert wanted == (2 * k if spare else k)  # the graph's margin, once one fails
    assert select(found, wanted, cap) == select(every, wanted, cap)
    top = select(every, min(wanted, exact), cap)
    if exact and top:  # rescoring reads these: none may be left unchecked
        near = [h for h in every if h[2] >= top[-1][2] - RESCORE_MARGIN]
        assert found[: len(near)] == near


def test_a_graph_loaded_from_its_file_knows_every_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loaded from its file, the graph knew no owner: each search looked up its
    # 80 candidates one random read at a time, search after search until most
    # vectors had been met.
    path = tmp_path / "s.mind"
    words = [f"memory {i} about topic {i % 7}" for i in range(300)]
    with embedmind.Store.open(path, embedder=HashingEmbedder(16)) as store:
        store.remember_many(words)
        before = store.recall("memory about topic 3", mode="vector", k=5).ids
    looked_up = call_sizes(monkeypatch, vector_owners, "_look_up")
    with embedmind.Store.open(path, embedder=HashingEmbedder(16)) as store:
        after = store.recall("memory about topic 3", mode="vector", k=5).ids
        index = store._vectors
        assert index is not None and index.rebuilt == 0, "the saved file was loaded"
        assert len(index.owners) == 300
    assert after == before
    assert looked_up == []


@pytest.mark.parametrize("space", [vector_rows.MEMORY, vector_rows.FRAGMENTS])
def test_learning_every_owner_reads_the_key_index_not_the_vectors(
    tmp_path: Path, space: vector_rows.Space
) -> None:
    # The table's rows carry the vectors (1.6 GB at 1M); its index on key
    # holds every (key, vec_key) pair in 14 MB.
    with embedmind.Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(16)) as store:
        store.remember("one memory")
    conn = apsw.Connection(str(tmp_path / "s.mind"))
    statements = traced(conn, lambda: OwnerMap().learn_all(conn, space))
    plans = [step for sql, bindings in statements for step in plan(conn, sql, bindings)]
    assert [p for p in plans if p.startswith("SCAN")] == [
        f"SCAN {space.table} USING COVERING INDEX {space.table}_by_memory"
    ]
