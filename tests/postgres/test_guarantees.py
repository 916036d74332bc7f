"""Claims of the per-backend guarantees page (docs/explanation/backends.md) no other test makes.

* The PostgreSQL backend declares what it cannot promise: no secure delete (old
  row versions, WAL archives, replicas, backups), no file, several processes.
* ``redact`` rewrites every row and index the store owns: the old words are in
  none of its tables once it returns, and recall no longer finds them. It
  returns normally: the server's WAL, archives and backups are its operators'
  (declared by ``secure_delete=False``), and an error no retry could clear
  would only teach callers to ignore it.
* A write returned by ``Store.open(url)`` in one store is found by id, text and
  vector through another store opened on the same URL at its next call.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

import embedmind
from embedmind.backend.postgres import schema
from embedmind.backend.postgres.backend import CAPABILITIES
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.embedders.hashing import HashingEmbedder


@pytest.fixture
def url(pg_server: ThrowawayServer, pg_dsn: str, request: pytest.FixtureRequest) -> str:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    return pg_server.url(str(dbname)) + f"?schema=g_{request.node.name[5:30].lower()}"


@pytest.fixture
def store(url: str) -> Iterator[embedmind.Store]:
    with embedmind.Store.open(url, embedder=HashingEmbedder(32)) as s:
        yield s


def test_the_backend_declares_what_postgresql_cannot_promise() -> None:
    assert CAPABILITIES.secure_delete is False
    assert CAPABILITIES.file_backed is False and CAPABILITIES.wal_checkpoint is False
    assert CAPABILITIES.multi_process is True and CAPABILITIES.vacuum is True


def test_redact_rewrites_every_table_of_the_store(
    store: embedmind.Store, pg_dsn: str, url: str
) -> None:
    memory = store.remember("my card number is zyxwvut", session_id="s1")
    store.remember("an unrelated note", session_id="s1")
    redacted = store.redact(memory.id, "my card number is [redacted]")
    assert redacted.content == "my card number is [redacted]"
    assert store.get(memory.id).content == redacted.content  # type: ignore[union-attr]
    assert not store.recall("zyxwvut", mode="text").hits
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        schema.use_schema(conn, url.rsplit("schema=", 1)[1])
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )]  # fmt: skip
        assert "memories" in tables and "lex_postings" in tables
        for table in tables:
            [count] = conn.execute(
                f"SELECT count(*) FROM {table} t WHERE t::text ILIKE '%zyxwvut%'"
            ).fetchone() or [0]
            assert count == 0, f"the redacted word is still in {table}"


def test_a_write_through_one_store_is_read_by_another_at_its_next_call(
    store: embedmind.Store, url: str
) -> None:
    with embedmind.Store.open(url, embedder=HashingEmbedder(32)) as other:
        assert not other.recall("qwertyish", mode="text").hits
        memory = store.remember("a qwertyish note")
        assert other.get(memory.id) is not None
        assert [h.memory.id for h in other.recall("qwertyish", mode="text")] == [memory.id]
        assert memory.id in [h.memory.id for h in other.recall("a qwertyish note", mode="vector")]
