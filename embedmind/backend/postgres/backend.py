"""The PostgreSQL backend: one schema in a PostgreSQL database with pgvector.

``Store.open("postgresql://user@host/db?schema=app_memory")`` reaches
:func:`open_backend` through the plugin's factory; the
``schema`` query parameter (default ``embedmind``) is the backend's own and is
removed before the rest goes to libpq, so every libpq parameter (``sslmode``,
``connect_timeout``, ``application_name``...) works as usual. A libpq
``key=value`` string opens too (``"host=db dbname=prod user=app schema=app_memory"``),
its ``schema`` pair the backend's own likewise.

What it cannot promise is declared in :data:`CAPABILITIES`, not faked: deleted
and redacted rows are rewritten in the tables and indexes, but PostgreSQL keeps
old row versions until ``VACUUM`` and never rewrites WAL archives, replicas or
backups, so ``secure_delete`` is false; there is no file to checkpoint or copy.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from embedmind.backend import locations, readers
from embedmind.backend.postgres import plugin, schema, vacuum_sql
from embedmind.backend.postgres.connection import Database, translating
from embedmind.backend.postgres.records import check_no_nul, refuse_nul
from embedmind.backend.postgres.schema import DEFAULT_SCHEMA
from embedmind.backend.postgres.session import PgRead, PgWrite
from embedmind.backend.values import Capabilities, OpenOptions
from embedmind.checks import finite_number
from embedmind.drafts import Prepared
from embedmind.errors import InvalidInputError

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
# Tables (with their indexes and TOAST), materialized views and sequences of one schema.
_SIZE_SQL = (
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %s AND c.relkind IN ('r', 'm', 'S')"
)


def split_location(location: str) -> tuple[str, str]:
    """``(libpq conninfo, schema)`` from a store URL or libpq string (its ``schema`` removed).

    Checked before any connection: the schema's name, and a libpq string's
    syntax and keywords.

    Raises:
        InvalidInputError: When the schema is no name of the store's own (see
            :func:`~embedmind.backend.postgres.schema.check_schema_name`), or a
            libpq string is malformed or has a keyword libpq does not know.
    """
    if "://" not in location.partition("?")[0]:
        return _split_libpq(location)
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    own = dict(q for q in query if q[0] in _OWN_PARAMETERS)
    rest = [q for q in query if q[0] not in _OWN_PARAMETERS]
    store_schema = schema.check_schema_name(own.get("schema", DEFAULT_SCHEMA))
    return urlunsplit(parts._replace(query=urlencode(rest))), store_schema


def _split_libpq(location: str) -> tuple[str, str]:
    pairs = locations.libpq_pairs(location)
    unknown = sorted({k for k, _ in pairs} - _libpq_keywords() - set(_OWN_PARAMETERS))
    if unknown:
        raise InvalidInputError(
            "location",
            f"{unknown[0]!r} is not a libpq connection keyword (libpq's are lower-case: "
            f"host, port, dbname, user, password...); or write a URL: {locations.URL_FIX}",
        )
    own = dict(p for p in pairs if p[0] in _OWN_PARAMETERS)
    rest = [p for p in pairs if p[0] not in _OWN_PARAMETERS]
    store_schema = schema.check_schema_name(own.get("schema", DEFAULT_SCHEMA))
    return locations.libpq_string(rest), store_schema


@functools.cache
def _libpq_keywords() -> frozenset[str]:
    """The keywords the libpq psycopg runs on accepts (``PQconndefaults``)."""
    return frozenset(o.keyword.decode() for o in psycopg.pq.Conninfo.get_defaults())


class PostgresBackend:
    """One open PostgreSQL store (:class:`~embedmind.backend.protocol.Backend`)."""

    capabilities = CAPABILITIES

    def __init__(self, database: Database, location: str) -> None:
        self.database = database
        self._location = location

    @property
    def path(self) -> str:
        """The URL or libpq string the store was opened with, its password hidden."""
        return locations.masked(self._location)

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

    def check_memory(self, prepared: Prepared) -> None:
        """Refuse NUL (U+0000) in the content or a metadata string (PostgreSQL text cannot hold it).

        Raises:
            InvalidInputError: Naming the field and the fix.
        """
        check_no_nul(prepared)

    def check_text(self, text: str, field: str) -> None:
        """Refuse NUL (U+0000) in free text (a link's note, a fragment's text), as above.

        Raises:
            InvalidInputError: Naming ``field`` and the fix.
        """
        refuse_nul(text, field)

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
        a redaction leaves are removed from the files by :meth:`vacuum`, and
        the copies in the server's WAL, archives, replicas and backups are its
        operators' to expire (``CAPABILITIES.secure_delete`` is false), so a caller waiting
        on this could never succeed by waiting longer.
        """
        return None

    def vacuum(self) -> None:
        """Rewrite and analyse every table of the store (:mod:`.vacuum_sql`).

        No byte of a redacted, deleted or replaced value stays in the data files
        of the store's tables, indexes, TOAST tables or in ``pg_statistic`` once
        it returns and the server has checkpointed. Each table is locked
        exclusively while it is rewritten (its readers wait), and freed space
        goes back to the operating system.
        """
        location, timeout = self.database.location, self.database.busy_timeout
        with translating(location, timeout), self.database.pool.connection() as conn:
            conn.autocommit = True  # VACUUM cannot run inside a transaction block
            try:
                vacuum_sql.rewrite(conn)
            finally:
                conn.autocommit = False

    def file_bytes(self) -> int:
        """Bytes the store's tables take on the server, with their indexes and TOAST.

        The sum of ``pg_total_relation_size`` over the store's schema: what
        ``stats`` reports and ``vacuum`` reclaims (the server's WAL is not counted).
        """
        with self.database.read() as conn:
            row = conn.execute(_SIZE_SQL, (self.database.schema,)).fetchone()
        return int(row[0]) if row is not None else 0

    def close(self) -> None:
        """Close the pool; closing twice does nothing."""
        self.database.close()


def store_exists(location: str, busy_timeout: float = 10.0) -> bool:
    """Whether the schema ``location`` names has been migrated (connects once; creates nothing)."""
    url, store_schema = split_location(location)
    shown = locations.masked(location)  # an error message never repeats the password
    with translating(shown, busy_timeout), psycopg.connect(url, autocommit=True) as conn:
        return schema.schema_version(conn, store_schema) > 0


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
