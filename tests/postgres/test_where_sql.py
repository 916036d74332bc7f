"""The jsonb ``where`` compiler against the plain-Python oracle (tests/oracles.py).

The same strategies as the SQLite backend's oracle test: random metadata
(numbers at 1 vs 1.0, 2**53 + 1, int64 ends; odd strings; lists; objects) and
random nested filters using every operator. The rows a filter admits must be
exactly the oracle's, and FilterTypeError raised exactly when the oracle says
a stored value is incomparable.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))

from oracles import where_listing
from test_filters_oracle import filters, metadatas

from embedmind.backend.postgres import records, schema
from embedmind.backend.postgres.selection_sql import compile_selection
from embedmind.backend.postgres.where_sql import as_type_error
from embedmind.errors import FilterTypeError
from embedmind.query.selection import Selection


@pytest.fixture(scope="module")
def conn(pg_dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        schema.migrate(c, "wh")
        yield c


def _listing(conn: psycopg.Connection, where: dict[str, Any]) -> set[str]:
    condition, params = compile_selection(Selection.of(now=10, where=where))
    query = sql.SQL("SELECT m.id FROM memories m WHERE {}").format(condition)
    try:
        return {row[0] for row in conn.execute(query, params)}
    except psycopg.errors.DataException as exc:
        error = as_type_error(exc)
        if error is None:
            raise
        raise error from exc


def _load(conn: psycopg.Connection, metadata: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    conn.execute("TRUNCATE memories RESTART IDENTITY CASCADE")
    rows = [
        records.NewRow(id=f"m{i}", namespace="p", content="x", created_at=1, fingerprint="f",
                       metadata=md)
        for i, md in enumerate(metadata)
    ]  # fmt: skip
    with conn.transaction():
        records.insert(conn, rows)
    return {r.id: r.metadata for r in rows}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_jsonb_compiler_agrees_with_the_oracle(
    conn: psycopg.Connection, data: st.DataObject
) -> None:
    dirty = data.draw(st.booleans())
    memories = _load(conn, data.draw(st.lists(metadatas(dirty), min_size=1, max_size=6)))
    where = data.draw(filters())
    expected = where_listing(where, memories)
    if expected is None:
        with pytest.raises(FilterTypeError):
            _listing(conn, where)
    else:
        assert _listing(conn, where) == expected, (where, memories)


def test_edge_numbers(conn: psycopg.Connection) -> None:
    memories = _load(
        conn, [{"n": 1}, {"n": 1.0}, {"n": 2**53 + 1}, {"n": float(2**53)}, {"n": True}]
    )
    assert _listing(conn, {"n": 1}) == {"m0", "m1"}
    assert _listing(conn, {"n": 2**53 + 1}) == {"m2"}
    assert _listing(conn, {"n": {"$in": [2**53]}}) == {"m3"}
    assert _listing(conn, {"n": True}) == {"m4"}
    with pytest.raises(FilterTypeError):
        _listing(conn, {"n": {"$gt": 0}})  # m4 stores a bool
    assert memories


def test_a_key_is_never_sql(conn: psycopg.Connection) -> None:
    _load(conn, [{"a'; DROP TABLE memories; --": 1}])
    assert _listing(conn, {"a'; DROP TABLE memories; --": 1}) == {"m0"}
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
