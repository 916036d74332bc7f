"""The how-to's migration through the CLI: a SQLite file exported, imported into PostgreSQL.

``embedmind --store FILE export F`` then ``embedmind --store postgresql://... import F``
carries every memory over, and every reading command (recall, get, stats) then works
on the URL: the CLI checks a server location by asking its backend, not the file system.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

import embedmind
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.cli.main import main


@pytest.fixture
def url(pg_server: ThrowawayServer, pg_dsn: str) -> str:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    return pg_server.url(str(dbname)) + "?schema=migrated"


def test_a_sqlite_store_moves_to_postgresql_through_export_and_import(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "a.mind"
    with embedmind.Store.open(source, embedder=None) as store:
        tea = store.remember("Alice prefers green tea", namespace="user/alice", tags=["pref"])
        old = store.remember("Bob lives in Lisbon", namespace="user/bob", entities=["Bob"])
        store.remember("Bob lives in Porto", namespace="user/bob", supersedes=[old.id])
        expected = sorted(
            (m.id, m.content, m.superseded_by)
            for m in store.iter(namespace="user/*", include_superseded=True)
        )
    dump = tmp_path / "dump.jsonl"
    assert main(["--store", str(source), "export", str(dump)]) == 0
    assert main(["--store", url, "import", str(dump)]) == 0
    capsys.readouterr()

    assert main(["--store", url, "recall", "green tea", "--namespace", "user/alice"]) == 0
    assert tea.id in capsys.readouterr().out
    assert main(["--store", url, "get", tea.id]) == 0
    assert "Alice prefers green tea" in capsys.readouterr().out
    with embedmind.Store.open(url, embedder=None) as moved:
        got = sorted(
            (m.id, m.content, m.superseded_by)
            for m in moved.iter(namespace="user/*", include_superseded=True)
        )
    assert got == expected


def test_a_url_no_backend_serves_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", "nosuch://host/db", "recall", "tea"]) != 0
    assert "no storage backend opens nosuch://" in capsys.readouterr().err


def test_a_reading_command_on_a_schema_never_written_creates_nothing(
    pg_server: ThrowawayServer, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dbname = str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    missing = pg_server.url(dbname) + "?schema=never_written"
    assert main(["--store", missing, "recall", "tea"]) != 0
    assert "does not exist" in capsys.readouterr().err
    with psycopg.connect(pg_dsn) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = 'never_written'"
        ).fetchone()
    assert found is None, "a reading command created the schema"
