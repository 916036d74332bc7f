"""The metadata index (backend/sqlite/metadata_index.py) and the filtered vector path it drives.

- Filtered vector recall through the index returns exactly the oracle's
  memories, and raises FilterTypeError exactly when the oracle does, for
  random metadata and random nested filters (every operator).
- A selective filter's work does not grow with the store: the SQLite VM steps
  of a filtered vector recall admitting 12 memories are the same at 1.2k and 4.8k.
- The triggers keep the table equal to the rows' metadata through upserts,
  forgets, vacuum and damaged JSON; migration 8 indexes an older store's rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import where_listing
from security.test_filters_oracle import filters, memory_sets

from embedmind import Draft, Store
from embedmind.backend.sqlite import metadata_index, migrations
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.errors import FilterTypeError

DIMS = 16


def _vector(i: int) -> list[float]:
    v = np.random.default_rng(i).normal(size=DIMS)
    return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]


def _fields(conn: apsw.Connection) -> set[tuple[Any, ...]]:
    return set(conn.execute(f"SELECT name, type, value, key FROM {metadata_index.TABLE}"))


def _expected_fields(conn: apsw.Connection) -> set[tuple[Any, ...]]:
    """What the table should hold: every live or forgotten row's entries, read from its JSON."""
    out: set[tuple[Any, ...]] = set()
    for key, raw in conn.execute("SELECT key, metadata FROM memories"):
        try:
            metadata = json.loads(raw)
        except ValueError:
            continue
        for name, value in metadata.items():
            out.add((name, *_typed(value), key))
            if isinstance(value, list):
                for item in value:
                    if not isinstance(item, list | dict):
                        kind, stored = _typed(item)
                        out.add((name, "[" + kind, stored, key))
    return out


def _typed(value: Any) -> tuple[str, Any]:
    if value is None:
        return "null", ""
    if value is True:
        return "true", 1
    if value is False:
        return "false", 0
    if isinstance(value, int):
        return "integer", value
    if isinstance(value, float):
        return "real", value
    if isinstance(value, str):
        return "text", value
    return ("array" if isinstance(value, list) else "object"), ""


@pytest.fixture
def vector_store() -> Iterator[Store]:
    with Store.open(":memory:", embedder=HashingEmbedder(dims=DIMS)) as store:
        yield store


# -- the property -------------------------------------------------------------------------


# A third of the profile's examples (each builds a store with an index): 33 in CI.
@settings(
    max_examples=max(10, settings.default.max_examples // 3),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(items=memory_sets(), wheres=st.lists(filters(), min_size=1, max_size=4))
def test_filtered_vector_recall_matches_the_oracle(
    items: list[tuple[dict[str, Any], str, bool]], wheres: list[dict[str, Any]]
) -> None:
    with Store.open(":memory:", embedder=HashingEmbedder(dims=DIMS)) as store:
        store.remember_many(
            Draft("apple", id=f"m{i}", metadata=md, vector=_vector(i))
            for i, (md, _, _) in enumerate(items)
        )
        for i, (_, _, forgotten) in enumerate(items):
            if forgotten:
                store.forget(f"m{i}")
        live = {f"m{i}": md for i, (md, _, forgotten) in enumerate(items) if not forgotten}
        for where in wheres:
            expected = where_listing(where, live)
            try:
                got = set(
                    store.recall("", mode="vector", k=50, where=where, vector=_vector(99)).ids
                )
            except FilterTypeError:
                got = None
            assert got == expected, where


TYPED = {
    "absent": {}, "none": {"a": None}, "true": {"a": True}, "one": {"a": 1},
    "onef": {"a": 1.0}, "str1": {"a": "1"}, "list": {"a": [1, "x", None]}, "dict": {"a": {"b": 1}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"a": 1}, {"one", "onef"}),
        ({"a": 1.0}, {"one", "onef"}),
        ({"a": {"$in": [1.0, "1"]}}, {"one", "onef", "str1"}),
        ({"a": True}, {"true"}),
        ({"a": None}, {"none"}),
        ({"a": {"$exists": True}}, set(TYPED) - {"absent"}),
        ({"$or": [{"a": "1"}, {"a": {"$match": "1"}}]}, {"str1"}),
        ({"a": {"$gt": 0}}, None),  # a bool, a list, a string: FilterTypeError
        ({"$not": {"a": {"$contains": 1}}}, None),
    ],
)
def test_typed_equalities_through_the_index(
    vector_store: Store, where: dict[str, Any], expected: set[str] | None
) -> None:
    vector_store.remember_many(
        Draft("apple", id=name, metadata=md, vector=_vector(i))
        for i, (name, md) in enumerate(TYPED.items())
    )
    if expected is None:
        with pytest.raises(FilterTypeError):
            vector_store.recall("", mode="vector", k=20, where=where, vector=_vector(9))
        return
    got = vector_store.recall("", mode="vector", k=20, where=where, vector=_vector(9))
    assert set(got.ids) == expected


# -- work that does not grow with the store -------------------------------------------------


def _steps(store: Store, run: Callable[[], object]) -> int:
    """SQLite VM steps of every statement ``run()`` executes on the store's connection."""
    events: list[dict[str, Any]] = []
    assert store._db is not None
    with store._db.connections.connection() as conn:
        conn.trace_v2(apsw.SQLITE_TRACE_PROFILE, events.append)
    try:
        run()
    finally:
        with store._db.connections.connection() as conn:
            conn.trace_v2(0, None)
    return sum(e["stmt_status"]["SQLITE_STMTSTATUS_VM_STEP"] for e in events)


def _filtered_steps(size: int) -> int:
    rng = np.random.default_rng(size)
    vectors = rng.normal(size=(size, DIMS)).astype(np.float32)
    with Store.open(":memory:", embedder=HashingEmbedder(dims=DIMS)) as store:
        store.remember_many(
            (
                Draft(f"note {i}", metadata={"user": "ann" if i % (size // 12) == 0 else f"u{i}"},
                      vector=vectors[i])
                for i in range(size)
            ),
            batch_size=1_200,
        )  # fmt: skip
        query = vectors[5].tolist()
        store.recall("", mode="vector", k=10, vector=query)  # the index is built: not counted
        hits = store.recall("", mode="vector", k=10, vector=query, where={"user": "ann"})
        assert len(hits) == 10
        return _steps(
            store,
            lambda: store.recall("", k=10, mode="vector", vector=query, where={"user": "ann"}),
        )


def test_a_selective_filter_reads_what_it_admits_not_the_store() -> None:
    # 12 memories match at both sizes. A filter that reads every row's JSON
    # metadata (the bug) takes about 4x the steps at 4x the store.
    small, large = _filtered_steps(1_200), _filtered_steps(4_800)
    assert large < 1.3 * small, (small, large)


# -- the table follows the rows --------------------------------------------------------------


def test_the_table_follows_writes_upserts_forgets_and_vacuum(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(dims=DIMS)) as store:
        store.remember_many(
            Draft(f"n{i}", id=f"m{i}", metadata={"b": i % 3, "t": ["x", i, None, [1]], "o": {}})
            for i in range(30)
        )
        store.remember("again", id="m4", metadata={"b": "changed", "f": False})  # upsert
        store.remember("plain", id="m31")
        for i in range(0, 30, 7):
            store.forget(f"m{i}")
        assert store._db is not None
        with store._db.read() as conn:
            assert _fields(conn) == _expected_fields(conn)
        assert [m.id for m in store.iter(where={"b": "changed"})] == ["m4"]
        listed = {m.id for m in store.iter(where={"t": {"$contains": "x"}, "b": 1})}
        assert listed == {f"m{i}" for i in range(1, 30, 3) if i % 7 and i != 4}
        store.vacuum()
        with store._db.read() as conn:
            assert _fields(conn) == _expected_fields(conn)
            stale = conn.execute(
                f"SELECT count(*) FROM {metadata_index.TABLE} "
                "WHERE key NOT IN (SELECT key FROM memories)"
            ).fetchone()
            assert stale == (0,)


def test_a_damaged_json_row_is_left_out_and_can_be_rewritten(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.mind", embedder=None) as store:
        store.remember("one", id="a", metadata={"k": 1})
        assert store._db is not None
        with store._db.write() as conn:
            conn.execute("UPDATE memories SET metadata = 'not json' WHERE id = 'a'")
            assert _fields(conn) == set()
        store.remember("one again", id="a", metadata={"k": 2})  # the repair
        assert [m.id for m in store.iter(where={"k": 2})] == ["a"]


def test_opening_a_version_7_store_indexes_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.mind"
    with Store.open(path, embedder=HashingEmbedder(dims=DIMS)) as store:
        store.remember_many(
            Draft(f"n{i}", id=f"m{i}", metadata={"user": f"u{i % 50}"}, vector=_vector(i))
            for i in range(500)
        )
    conn = apsw.Connection(str(path))
    for name in ("after_insert", "after_update", "after_delete"):
        conn.execute(f"DROP TRIGGER memory_fields_{name}")
    conn.execute(f"DROP TABLE {metadata_index.TABLE}")
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    with Store.open(path, embedder=HashingEmbedder(dims=DIMS)) as store:
        assert store.stats().schema_version == migrations.LATEST == 11
        assert store._db is not None
        with store._db.read() as conn2:
            assert _fields(conn2) == _expected_fields(conn2)
        found = store.recall("", mode="vector", k=20, vector=_vector(3), where={"user": "u3"})
        assert sorted(found.ids) == sorted(f"m{i}" for i in range(3, 500, 50))
