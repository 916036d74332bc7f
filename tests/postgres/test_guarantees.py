"""Claims of the per-backend guarantees page (docs/explanation/backends.md) no other test makes.

* The PostgreSQL backend declares what it cannot promise: no secure delete (old
  row versions, WAL archives, replicas, backups), no file, several processes.
* ``redact`` rewrites every row and index the store owns: the old words are in
  none of its tables once it returns, and recall no longer finds them. It
  returns normally: the server's WAL, archives and backups are its operators'
  (declared by ``secure_delete=False``), and an error no retry could clear
  would only teach callers to ignore it.
* ``vacuum`` then a checkpoint leave no byte of a redacted, deleted, forgotten
  or overwritten value (an entity name an upsert took off its only memory too)
  in any data file of the database (heaps, indexes, TOAST, ``pg_statistic``):
  checked by scanning the server's files, WAL excluded (its old segments keep
  the bytes until recycled and overwritten: the operator's,
  ``docs/explanation/guarantees.md``).
* A write returned by ``Store.open(url)`` in one store is found by id, text and
  vector through another store opened on the same URL at its next call.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import embedmind
from embedmind.backend.postgres import schema
from embedmind.backend.postgres.backend import CAPABILITIES
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.policies import FragmentPolicy

# One word per place a removed value can live; lower case, as the analyser indexes them.
REDACTED = "qzxredactedvbn"  # content: heap, postings, a neighbour's context postings, fragments
TOASTED = "qzxtoastedvbn"  # content stored out of line (TOAST): hex does not compress
REPLACED = "qzxreplacedvbn"  # metadata and tags an upsert overwrote (jsonb, GIN)
DELETED = "qzxdeletedvbn"  # every field of a deleted memory, entity names included
FORGOTTEN = "qzxforgottenvbn"  # every field of a forgotten memory vacuum drops
REAUTHORED = "qzxreauthoredvbn"  # an entity name only the memory an upsert rewrote carried


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


def _data_files(server: ThrowawayServer, dsn: str) -> list[Path]:
    """The server's files but ``pg_wal`` and the other databases' (never rewritten by a vacuum)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        own = server.data_dir / "base" / str(row.fetchone()[0])  # type: ignore[index]
    tops = [p for p in server.data_dir.iterdir() if p.name not in ("pg_wal", "base")] + [own]
    files = [f for top in tops if top.is_dir() for f in top.rglob("*")]
    return [f for f in (*tops, *files) if f.is_file()]


def _found(server: ThrowawayServer, dsn: str, words: list[str]) -> dict[str, list[str]]:
    """``{word: [files holding it]}`` once the server has written every page out."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    found: dict[str, list[str]] = {}
    for path in _data_files(server, dsn):
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # unlinked by the server meanwhile
            continue
        for word in words:
            if word.encode() in data:
                found.setdefault(word, []).append(str(path.relative_to(server.data_dir)))
    return found


def test_vacuum_leaves_no_byte_of_a_removed_word_in_the_data_files(
    url: str, pg_server: ThrowawayServer, pg_dsn: str
) -> None:
    """Every file of the data directory but ``pg_wal`` (and other databases') is scanned.

    The WAL is left out on purpose: its segments keep the old bytes until the
    server recycles and overwrites or deletes them, which the operator controls.
    """
    words = [REDACTED, TOASTED, REPLACED, DELETED, FORGOTTEN, REAUTHORED]
    fragments = FragmentPolicy(chunker="words", window=4)
    with embedmind.Store.open(
        url, embedder=HashingEmbedder(32), fragment_policy=fragments
    ) as store:
        store.remember_many([f"weather report number {i}" for i in range(20)])
        store.remember(f"my card number is {REDACTED} ok", id="card", session_id="s")
        store.remember("noted, I will keep it safe", session_id="s")  # indexed with its context
        big = f"{secrets.token_hex(1500)} {TOASTED} {secrets.token_hex(1500)}"
        store.remember(big, id="big")
        store.remember("a note", id="upsert", metadata={"k": REPLACED}, tags=[REPLACED])
        store.remember("a person met us", id="reauthored", entities=[REAUTHORED])
        for memory_id, word in (("deleted", DELETED), ("forgotten", FORGOTTEN)):
            store.remember(
                f"about {word}", id=memory_id, namespace=word, session_id=word, agent=word,
                metadata={word: word}, tags=[word], entities=[word],
            )  # fmt: skip
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")  # statistics sample the values (pg_statistic)
        assert set(_found(pg_server, pg_dsn, words)) == set(words)  # the scan sees them all
        store.redact("card", "my card number is [redacted]")
        store.redact("big", "[redacted]")
        store.remember("a note", id="upsert")
        store.remember("someone met us", id="reauthored")  # its entity goes with the upsert
        store.delete("deleted")
        store.forget("forgotten")
        store.vacuum()
        assert store.get("card").content == "my card number is [redacted]"  # type: ignore[union-attr]
        assert store.recall("weather report", mode="text").hits
    assert _found(pg_server, pg_dsn, words) == {}
