"""The CLI's store checks on a PostgreSQL URL (issue 52).

``doctor --verify`` asks the store's backend whether the store is there, as
``stats`` does (it checked for a file and said a store on the server did
not exist); its scan reads SQLite's file, so on a URL it says it cannot scan
that store (exit 2) instead of failing on SQLite's SQL. ``stats`` reports the
store's size on the server, not 0 bytes.
"""

from __future__ import annotations

import json

import psycopg
import pytest

import embedmind
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.cli.main import EXIT_INVALID, EXIT_NOT_FOUND, EXIT_OK, main

# The oracle: the schema's tables (with their indexes and TOAST) and sequences,
# read through pg_tables and pg_sequences.
SIZE = """
SELECT (SELECT coalesce(sum(pg_total_relation_size(format('%%I.%%I', schemaname, tablename))), 0)
        FROM pg_tables WHERE schemaname = %(s)s)
     + (SELECT coalesce(sum(pg_relation_size(format('%%I.%%I', schemaname, sequencename))), 0)
        FROM pg_sequences WHERE schemaname = %(s)s)
"""


@pytest.fixture
def url(pg_server: ThrowawayServer, pg_dsn: str, request: pytest.FixtureRequest) -> str:
    """A store location of its own for each test (the database is the module's)."""
    dbname = str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    return f"{pg_server.url(dbname)}?schema={request.node.name[5:30]}"


def _size(pg_dsn: str, url: str) -> int:
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute(SIZE, {"s": url.rpartition("schema=")[2]}).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def written(url: str) -> str:
    with embedmind.Store.open(url, embedder="hashing") as store:
        store.remember_many([f"memory {i} about tea" for i in range(50)])
    return url


def test_doctor_verify_finds_the_store_on_a_url(
    written: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", written, "--json", "doctor", "--verify"]) == EXIT_INVALID
    report = json.loads(capsys.readouterr().out)
    assert "does not exist" not in report["error"], report["error"]
    assert "verify checks SQLite stores" in report["error"] and report["ok"] is False


def test_stats_reports_the_size_on_the_server(
    written: str, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = written
    assert main(["--store", url, "--json", "stats"]) == EXIT_OK
    stats = json.loads(capsys.readouterr().out)
    assert stats["live"] == 50 and stats["file_bytes"] == _size(pg_dsn, url) > 0
    assert main(["--store", url, "stats"]) == EXIT_OK
    assert f"{stats['file_bytes']:,} bytes" in capsys.readouterr().out


def test_doctor_verify_on_an_unwritten_schema_is_not_found_and_creates_nothing(
    pg_server: ThrowawayServer, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dbname = str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    missing = f"{pg_server.url(dbname)}?schema=never_verified"
    assert main(["--store", missing, "doctor", "--verify"]) == EXIT_NOT_FOUND
    assert "does not exist" in capsys.readouterr().out
    with psycopg.connect(pg_dsn) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'never_verified'")
        assert found.fetchone() is None
