"""A libpq ``key=value`` string opens the PostgreSQL store it names (issue 49 §5).

The form psycopg takes, and the throwaway server's ``dsn()``, once opened a
SQLite file named after it, password included. It now opens the same store as
the URL naming the same database and schema (``schema=`` is the backend's own
keyword, as ``?schema=`` is in a URL), creates no file, and shows no password
(``Store.path``, the CLI). Refusals that need no server are in
``tests/test_store_locations.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

import embedmind
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.cli.main import main

SECRET = "s3cretPW"


def test_a_libpq_string_opens_the_store_its_url_names(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pg_server: ThrowawayServer,
    pg_dsn: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    # The test server trusts every connection: the password is carried, never checked.
    dsn = f"{pg_dsn} password={SECRET} application_name='embedmind test' schema=by_dsn"
    with embedmind.Store.open(dsn, embedder=None) as store:
        tea = store.remember("Alice prefers green tea", id="tea")
        assert SECRET not in store.path and "password=***" in store.path
    url = pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))
    with embedmind.Store.open(f"{url}?schema=by_dsn", embedder=None) as same:
        found = same.get("tea")
        assert found is not None and found.content == tea.content
    capsys.readouterr()
    assert main(["--store", dsn, "stats"]) == 0
    assert main(["--store", dsn, "get", "tea"]) == 0
    out, err = capsys.readouterr()
    assert "Alice prefers green tea" in out and SECRET not in out + err
    assert os.listdir(tmp_path) == []
