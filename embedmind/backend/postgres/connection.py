"""Connections to one PostgreSQL store: a pool, transactions, and driver errors made typed.

A :class:`Database` owns a ``psycopg_pool.ConnectionPool`` whose connections
have the store's schema (then pgvector's) on their search path. A read is one
``REPEATABLE READ, READ ONLY`` transaction — a consistent snapshot across the
statements of a recall — and a write one ``READ COMMITTED`` transaction that
commits when the block ends without an error. Every driver error leaves as an
:mod:`embedmind.errors` type with the cause chained: a filter's type error as
:class:`~embedmind.errors.FilterTypeError`, a lock or statement timeout as
:class:`~embedmind.errors.StoreBusyError`, a write that lost a race to a
concurrent writer (the same new id inserted twice, a deadlock) as
:class:`~embedmind.backend.protocol.ConcurrentWriteError`, which the engine
runs again, everything else (a lost server
included) as :class:`~embedmind.errors.StorageError`, so no raw driver
exception escapes the backend.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from psycopg import IsolationLevel
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from embedmind.backend.postgres import schema
from embedmind.backend.postgres.where_sql import as_type_error
from embedmind.backend.protocol import ConcurrentWriteError
from embedmind.errors import StorageError, StoreBusyError, StoreClosedError

Conn = psycopg.Connection[TupleRow]


class Database:
    """The pool of one store (a database and a schema in it)."""

    def __init__(
        self, conninfo: str, store_schema: str, *, busy_timeout: float = 10.0, max_size: int = 8
    ) -> None:
        self.conninfo = conninfo
        self.schema = schema.check_schema_name(store_schema)
        self.busy_timeout = busy_timeout
        self.location = (
            f"{psycopg.conninfo.conninfo_to_dict(conninfo).get('dbname', '')}/{store_schema}"
        )
        with translating(self.location, busy_timeout):
            with psycopg.connect(conninfo, autocommit=True) as conn:
                self.schema_version = schema.migrate(conn, self.schema)
            self.pool: ConnectionPool[Conn] = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=max_size,
                configure=self._configure,
                check=ConnectionPool.check_connection,
                open=True,
                timeout=busy_timeout,
            )
        self.closed = False

    def _configure(self, conn: Conn) -> None:
        conn.autocommit = True
        schema.use_schema(conn, self.schema)
        # A writer waiting on another's row lock ends in StoreBusyError, not forever.
        conn.execute(
            "SELECT set_config('lock_timeout', %s, false)", (f"{int(self.busy_timeout * 1000)}ms",)
        )
        conn.autocommit = False

    @contextmanager
    def read(self) -> Iterator[Conn]:
        """A read-only snapshot transaction."""
        self._check_open()
        with (
            translating(self.location, self.busy_timeout, self.pool),
            self.pool.connection() as conn,
        ):
            conn.isolation_level = IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            with conn.transaction():
                yield self._translated(conn)

    @contextmanager
    def write(self) -> Iterator[Conn]:
        """One write transaction; committed when the block ends without an error."""
        self._check_open()
        with (
            translating(self.location, self.busy_timeout, self.pool),
            self.pool.connection() as conn,
        ):
            conn.isolation_level = IsolationLevel.READ_COMMITTED
            conn.read_only = False
            with conn.transaction():
                yield self._translated(conn)

    def _check_open(self) -> None:
        # The SQLite backend's error, not the pool's PoolClosed as a StorageError.
        if self.closed:
            raise StoreClosedError("the store is closed")

    def _translated(self, conn: Conn) -> Conn:
        return cast(Conn, _Translating(conn, self.location, self.busy_timeout))

    def close(self) -> None:
        """Close every pooled connection; closing twice does nothing."""
        if not self.closed:
            self.closed = True
            self.pool.close()


class _Translating:
    """A connection whose ``execute`` raises embedmind errors (the rest is the connection's).

    So a facet's caller gets :class:`FilterTypeError` from the call that met the
    bad row, inside the session, not only when the session ends. (The
    transaction is then aborted, as after any failed statement in PostgreSQL.)
    """

    def __init__(self, conn: Conn, location: str, busy_timeout: float) -> None:
        self._conn = conn
        self._location = location
        self._busy_timeout = busy_timeout

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        with translating(self._location, self._busy_timeout):
            return self._conn.execute(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def translating(
    location: str, busy_timeout: float, pool: ConnectionPool[Conn] | None = None
) -> Iterator[None]:
    """Turn driver and pool errors into embedmind errors, the cause chained.

    A pool timeout is :class:`StoreBusyError` only when every connection of
    the pool was in use (the store is busy); when the pool had room but could
    not connect, the server is down or unreachable: :class:`StorageError`.
    """
    began = time.monotonic()
    try:
        yield
    except psycopg.errors.LockNotAvailable as exc:
        raise StoreBusyError(location, time.monotonic() - began) from exc
    except psycopg.errors.QueryCanceled as exc:
        raise StoreBusyError(location, time.monotonic() - began) from exc
    except psycopg.errors.DataException as exc:
        error = as_type_error(exc)
        if error is None:
            raise StorageError(f"PostgreSQL store {location!r}: {exc}") from exc
        raise error from exc
    except PoolTimeout as exc:
        if pool is not None and pool.get_stats().get("pool_size", 0) < (pool.max_size or 0):
            raise StorageError(
                f"PostgreSQL store {location!r}: no connection to the server within "
                f"{busy_timeout:g}s; check that the server is up and reachable, then retry"
            ) from exc
        raise StoreBusyError(location, time.monotonic() - began) from exc
    except psycopg.Error as exc:
        race = lost_race(exc)
        if race is not None:
            raise ConcurrentWriteError(location, race) from exc
        raise StorageError(
            f"PostgreSQL store {location!r}: {exc.__class__.__name__}: {exc}; "
            "check that the server is up and reachable, then retry"
        ) from exc


ID_CONSTRAINT = "memories_id_key"
"""PostgreSQL's name for the ``UNIQUE`` of ``memories.id`` (schema migration 1)."""


def lost_race(exc: psycopg.Error) -> str | None:
    """Why a concurrent writer, not the input, made a statement fail; ``None`` when not.

    A unique violation on the id is an insert racing another writer's insert
    of the same id: both found no row (a lock holds only rows that exist), and
    the second insert waited for the first to commit. Its writer runs the
    write again, which finds the row (an upsert, or a ConflictError from
    another namespace). Any other unique violation would be a bug, not a race.
    """
    if isinstance(exc, psycopg.errors.UniqueViolation):
        if exc.diag.constraint_name == ID_CONSTRAINT:
            return "another writer stored the same id at the same moment"
        return None
    if isinstance(exc, psycopg.errors.DeadlockDetected):
        return "it and another writer each waited for rows the other held (a deadlock)"
    if isinstance(exc, psycopg.errors.SerializationFailure):
        return "a concurrent writer changed the rows it read"
    return None
