"""``Store.open(url, create=False)`` on PostgreSQL: a schema no store was written to is refused.

Nothing is created on the server (no schema), and the message hides the
password as every message about a location does. SQLite's side is in
``tests/test_store_open_create.py``.
"""

from __future__ import annotations

import psycopg
import pytest

import embedmind
from embedmind.backend.postgres.testing import ThrowawayServer

SECRET = "s3cretPW"


def _schema_exists(pg_dsn: str, name: str) -> bool:
    with psycopg.connect(pg_dsn) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
    return found is not None


def test_an_unwritten_schema_is_refused_and_not_created(
    pg_server: ThrowawayServer, pg_dsn: str
) -> None:
    # The test server trusts every connection: the password is carried, never checked.
    location = f"{pg_dsn} password={SECRET} schema=typo_schema"
    with pytest.raises(embedmind.NotFoundError) as caught:
        embedmind.Store.open(location, embedder=None, create=False)
    message = str(caught.value)
    assert "does not exist" in message and "create=True" in message and SECRET not in message
    assert not _schema_exists(pg_dsn, "typo_schema"), "create=False created the schema"


def test_a_written_schema_opens(pg_server: ThrowawayServer, pg_dsn: str) -> None:
    dbname = str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    url = pg_server.url(dbname) + "?schema=written"
    with embedmind.Store.open(url, embedder=None) as store:
        store.remember("Alice prefers green tea", id="tea")
    with embedmind.Store.open(url, embedder=None, create=False) as store:
        assert store.get("tea") is not None
