"""The PostgreSQL backend: one schema in a PostgreSQL database with pgvector.

``Store.open("postgresql://user@host/db?schema=app_memory")`` reaches
:func:`open_backend` through the plugin's factory; the
``schema`` query parameter (default ``embedmind``) is the backend's own and is
removed before the rest goes to libpq, so every libpq parameter (``sslmode``,
``connect_timeout``, ``application_name``...) works as usual.

What it cannot promise is declared in :data:`CAPABILITIES`, not faked: deleted
and redacted rows are rewritten in the tables and indexes, but PostgreSQL keeps
old row versions until ``VACUUM`` and never rewrites WAL archives, replicas or
backups, so ``secure_delete`` is false; there is no file to checkpoint or copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from embedmind.backend import readers
from embedmind.backend.postgres import plugin, schema
from embedmind.backend.postgres.connection import Database, translating
from embedmind.backend.postgres.schema import DEFAULT_SCHEMA
from embedmind.backend.postgres.session import PgRead, PgWrite
from embedmind.backend.values import Capabilities, OpenOptions
from embedmind.checks import finite_number

CAPABILITIES = Capabilities(
    name="postgresql",
    secure_delete=False,
    wal_checkpoint=False,
    vector_cache=False,
    file_backed=False,
    vacuum=True,
    multi_process=True,
)
_OWN_PARAMETERS = ("schema",)


def split_location(location: str) -> tuple[str, str]:
    """``(libpq URL, schema)`` from a store URL (its ``schema`` parameter removed)."""
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    own = dict(q for q in query if q[0] in _OWN_PARAMETERS)
    rest = [q for q in query if q[0] not in _OWN_PARAMETERS]
    return urlunsplit(parts._replace(query=urlencode(rest))), own.get("schema", DEFAULT_SCHEMA)


class PostgresBackend:
    """One open PostgreSQL store (:class:`~embedmind.backend.protocol.Backend`)."""

    capabilities = CAPABILITIES

    def __init__(self, database: Database, location: str) -> None:
        self.database = database
        self._location = location

    @property
    def path(self) -> str:
        """The URL the store was opened with."""
        return self._location

    @property
    def schema_version(self) -> int:
        """The schema version of the open store."""
        return self.database.schema_version

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.database.closed

    @contextmanager
    def read(self) -> Iterator[PgRead]:
        """A read snapshot (``REPEATABLE READ, READ ONLY``)."""
        with readers.reading(), self.database.read() as conn:
            yield PgRead(conn)

    @contextmanager
    def write(self) -> Iterator[PgWrite]:
        """One write transaction."""
        with self.database.write() as conn:
            yield PgWrite(conn)

    def configure_vectors(self, dims: int) -> None:
        """Fix the vector dimension and build the HNSW indexes, unless already recorded.

        The engine checks the embedder against the recorded identity first; a
        store created through ``Store.open`` gets its indexes here, before its
        first write.
        """
        with self.database.write() as conn:
            if schema.dimensions(conn) is None:
                schema.record_dimensions(conn, dims)

    vector_cache: None = None
    """No per-process vector index: the server's HNSW index serves searches."""

    def save_vector_cache(self, *, rebuild: bool = False) -> None:
        """No-op: the vector index lives in the server (no per-process cache)."""

    def save_fragment_cache(self, *, rebuild: bool = False) -> bool:
        """No-op: no per-process fragment cache; nothing was written."""
        return False

    def remove_cache_files(self) -> None:
        """No-op: no cache files."""

    def clear_caches(self) -> None:
        """No-op: nothing derived from content is cached in this process."""

    def checkpoint(self, timeout: float) -> str | None:
        """No-op returning ``None``: the server checkpoints its own WAL.

        There is no log of the store's own to fold back: the old row versions
        a redaction leaves are pruned by (auto)vacuum, and the copies in the
        server's WAL, archives, replicas and backups are its operators' to
        expire (``CAPABILITIES.secure_delete`` is false), so a caller waiting
        on this could never succeed by waiting longer.
        """
        return None

    def vacuum(self) -> None:
        """``VACUUM (ANALYZE)`` the store's tables (space goes back to PostgreSQL, not the OS)."""
        tables = ("memories", "lex_postings", "lex_docs", "memory_vectors", "fragments")
        location, timeout = self.database.location, self.database.busy_timeout
        with translating(location, timeout), self.database.pool.connection() as conn:
            conn.autocommit = True  # VACUUM cannot run inside a transaction
            for table in tables:
                conn.execute(f"VACUUM (ANALYZE) {table}")
            conn.autocommit = False

    def file_bytes(self) -> int:
        """0: the store is not a file on this machine."""
        return 0

    def close(self) -> None:
        """Close the pool; closing twice does nothing."""
        self.database.close()


def store_exists(location: str, busy_timeout: float = 10.0) -> bool:
    """Whether the schema ``location`` names has been migrated (connects once; creates nothing)."""
    url, store_schema = split_location(location)
    with translating(location, busy_timeout), psycopg.connect(url, autocommit=True) as conn:
        return schema.schema_version(conn, schema.check_schema_name(store_schema)) > 0


def open_backend(options: OpenOptions) -> PostgresBackend:
    """Connect, migrate the schema (under the advisory lock) and open the pool."""
    # The SQLite backend's check, before any connection (its message, word for word).
    finite_number(
        options.busy_timeout, "busy_timeout", positive=True,
        message="must be a positive number of seconds",
    )  # fmt: skip
    url, store_schema = split_location(options.location)
    database = Database(url, store_schema, busy_timeout=options.busy_timeout)
    # The vector dimension is fixed (and the HNSW indexes built) when the
    # engine records its embedder: MetaWrites.write_identity.
    return PostgresBackend(database, options.location)


FACTORY = plugin.FACTORY
"""The one PostgreSQL factory (:class:`~embedmind.backend.postgres.plugin.DeferredFactory`)."""
