"""The database: one SQLite file, its migrations, and read and write transactions.

Every mutating call runs inside :meth:`Database.write`: the writer lock, then
``BEGIN IMMEDIATE``, then ``COMMIT`` (durable at return with
``synchronous=FULL``) or ``ROLLBACK`` on any exception. Reads run inside
:meth:`Database.read`, a deferred transaction, so a multi-statement read sees
one consistent snapshot while writers go on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from embedmind.errors import InvalidInputError, StorageError
from embedmind.storage import fileio, migrations
from embedmind.storage.connection import (
    MEMORY_PATH,
    ConnectionManager,
    Synchronous,
    fetch_one,
)
from embedmind.storage.crashpoints import crashpoint
from embedmind.storage.locking import WriterLock


def normalize_path(path: str | os.PathLike[str]) -> str:
    """Validate a store path and return it as an absolute path (or ``":memory:"``).

    Raises:
        InvalidInputError: When the path is empty, contains NUL, or names a directory.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidInputError("path", f"expected a str or path, got {type(path).__name__}")
    text = os.fspath(path)
    if text == MEMORY_PATH:
        return text
    if not text or "\x00" in text:
        raise InvalidInputError("path", "must be a non-empty path without NUL")
    absolute = os.path.abspath(text)
    if os.path.isdir(absolute):
        raise InvalidInputError(
            "path", f"{text!r} is a directory; name a file like 'memories.mind'"
        )
    parent = os.path.dirname(absolute)
    if not os.path.isdir(parent):
        raise InvalidInputError("path", f"directory {parent!r} does not exist")
    return absolute


class Database:
    """An open store file."""

    def __init__(
        self, path: str, *, synchronous: Synchronous = "FULL", busy_timeout: float = 10.0
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidInputError("synchronous", "must be 'FULL' or 'NORMAL'")
        if not isinstance(busy_timeout, int | float) or not busy_timeout > 0:
            raise InvalidInputError("busy_timeout", "must be a positive number of seconds")
        self.path = path
        if path != MEMORY_PATH:
            fileio.create_private_file(path)
        busy_ms = int(busy_timeout * 1000)
        self.connections = ConnectionManager(path, synchronous, busy_ms)
        # An in-memory store lives in one process: it needs only the thread lock.
        self._lock = WriterLock(None if path == MEMORY_PATH else path, busy_timeout)
        self._memory = path == MEMORY_PATH
        try:
            with self.connections.connection() as conn:
                migrations.check_supported(path, migrations.schema_version(conn))
                if migrations.schema_version(conn) < migrations.LATEST:
                    with self._lock.hold():
                        self.schema_version = migrations.apply_pending(conn, path)
                else:
                    self.schema_version = migrations.schema_version(conn)
        except BaseException:
            self.close()
            raise

    @contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """Yield a connection inside a read transaction (one consistent snapshot)."""
        with self.connections.connection() as conn:
            if conn.in_transaction:  # nested inside a write on this thread
                yield conn
                return
            _execute(conn, "BEGIN")
            try:
                yield conn
            finally:
                _execute(conn, "COMMIT")

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """Yield a connection inside a write transaction; commit on success.

        Raises:
            StoreBusyError: When the writer lock is not obtained in time.
            StorageError: When SQLite fails; the transaction is rolled back.
        """
        with self.connections.connection() as conn, self._lock.hold():
            _execute(conn, "BEGIN IMMEDIATE")
            try:
                yield conn
                crashpoint("before-commit")
                _execute(conn, "COMMIT")
                crashpoint("after-commit")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def checkpoint(self, attempts: int = 50) -> bool:
        """Copy the WAL into the database and truncate it to zero bytes.

        Readers inside a transaction can hold it up; it is retried briefly.

        Returns:
            Whether the WAL was fully checkpointed and truncated.
        """
        if self._memory:
            return True
        with self.connections.connection() as conn, self._lock.hold():
            for _ in range(attempts):
                busy = fetch_one(conn, "PRAGMA wal_checkpoint(TRUNCATE)")[0]
                if not busy:
                    return True
                time.sleep(0.02)
        return False

    def vacuum(self) -> None:
        """Rebuild the database file in place (``VACUUM``) under the writer lock.

        In place, never by replacing the file: replacing a database that other
        processes have open (or that still has a WAL) corrupts it.
        """
        with self.connections.connection() as conn, self._lock.hold():
            conn.execute("PRAGMA temp_store = FILE")  # do not hold a whole copy in memory
            try:
                crashpoint("vacuum")
                _execute(conn, "VACUUM")
            finally:
                conn.execute("PRAGMA temp_store = MEMORY")

    def file_bytes(self) -> int:
        """Return the size of the database file plus its WAL."""
        if self._memory:
            return 0
        return fileio.file_size(self.path) + fileio.file_size(self.path + "-wal")

    @property
    def closed(self) -> bool:
        """Whether the database was closed."""
        return self.connections.closed

    def close(self) -> None:
        """Close every connection and lock file."""
        self.connections.close()
        self._lock.close()


def _execute(conn: apsw.Connection, sql: str) -> None:
    try:
        conn.execute(sql)
    except apsw.Error as e:
        raise StorageError(f"{sql} failed: {e}") from e
