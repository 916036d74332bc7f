"""What PostgreSQL's schema refuses of a damaged row, and a store that holds one from before.

The reads' own check runs on both backends (``test_conformance_damaged_rows.py``).
Here: migration 7's CHECKs refuse a confidence outside [0, 1] (NaN, the
infinities) written by hand, as ``tier`` and ``level`` were always refused;
a store that already held one opens (the checks are ``NOT VALID``), a read
names the memory and the field, and ``delete`` repairs it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import psycopg
import pytest

import embedmind
from embedmind import DamagedRecordError
from embedmind.backend.postgres import schema
from embedmind.backend.postgres.testing import ThrowawayServer


@pytest.fixture
def url(pg_server: ThrowawayServer, pg_dsn: str, request: pytest.FixtureRequest) -> str:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    return pg_server.url(str(dbname)) + f"?schema=d_{request.node.name[5:30].lower()}"


@pytest.fixture
def conn(pg_dsn: str, url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        yield c


def _use(conn: psycopg.Connection, url: str) -> None:
    schema.use_schema(conn, url.rsplit("schema=", 1)[1])


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("confidence", math.nan),
        ("confidence", math.inf),
        ("confidence", -math.inf),
        ("confidence", 1.5),
        ("confidence", -0.25),
        ("prior_confidence", math.nan),
        ("prior_confidence", 2.0),
        ("tier", "sematic"),
        ("level", "guessed"),
    ],
)
def test_the_schema_refuses_what_the_engine_never_writes(
    url: str, conn: psycopg.Connection, column: str, value: object
) -> None:
    with embedmind.Store.open(url, embedder=None) as store:
        store.remember("Bob keeps the spare key under the blue flowerpot", id="m")
    _use(conn, url)
    with pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(f"UPDATE memories SET {column} = %s WHERE id = 'm'", (value,))
    with embedmind.Store.open(url, embedder=None) as store:
        assert store.get("m").confidence == 1.0  # type: ignore[union-attr]


def test_a_nan_stored_before_migration_7_is_named_by_reads_and_deleted(
    url: str, conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as old:  # the previous build: six migrations, no CHECK
        old.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:6])
        old.setattr(schema, "LATEST", 6)
        with embedmind.Store.open(url, embedder=None) as store:
            store.remember("Bob keeps the spare key under the blue flowerpot", id="nan")
            store.remember("Carol waters the garden every Sunday morning", id="good")
        _use(conn, url)
        conn.execute("UPDATE memories SET confidence = 'NaN' WHERE id = 'nan'")
    with embedmind.Store.open(url, embedder=None) as store:  # migrates to 7: still opens
        assert store.schema_version == schema.LATEST
        with pytest.raises(DamagedRecordError, match=r"'nan'.*confidence nan") as caught:
            store.get("nan")
        assert caught.value.ids == ("nan",)
        with pytest.raises(DamagedRecordError, match="confidence"):
            store.recall("spare key flowerpot", mode="text")
        assert store.get("good").confidence == 1.0  # type: ignore[union-attr]
        store.delete("nan")
        assert store.get("nan") is None
        assert [m.id for m in store.iter()] == ["good"]
