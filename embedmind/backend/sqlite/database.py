"""The database: one SQLite file, its migrations, and read and write transactions.

Every mutating call runs inside :meth:`Database.write`: the writer lock, then
``BEGIN IMMEDIATE``, then ``COMMIT`` (durable at return with
``synchronous=FULL``) or ``ROLLBACK`` on any exception. Reads run inside
:meth:`Database.read`, a deferred transaction, so a multi-statement read sees
one consistent snapshot while writers go on.

WAL frames are copied back into the database on a thread of the store's own
(:mod:`~embedmind.backend.sqlite.checkpointer`), never inside a writer's
COMMIT. A ``PASSIVE`` checkpoint never waits for readers, and the WAL is
rewound only once no reader uses it. With readers always inside some
transaction it never is, and the WAL grows without bound (RELIABILITY.md R8
measured 134 MB in 10 s with two reader processes). So a writer, holding the
writer lock, rewinds the WAL itself before its transaction begins once the
WAL holds more than :data:`WAL_RESET_BYTES` (see :meth:`Database._bound_wal`).
The decision: writers may wait up to :data:`WAL_RESET_WAIT_MS` about once per
:data:`WAL_RESET_BYTES` of WAL for the readers of older snapshots (and for
the checkpoint thread's copy) to finish; readers are never blocked, and a
reader that outlasts the wait only postpones the reset.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import apsw

from embedmind.backend.locations import looks_like_libpq
from embedmind.backend.sqlite import fileio, migrations
from embedmind.backend.sqlite.checkpointer import Checkpointer
from embedmind.backend.sqlite.connection import (
    MEMORY_PATH,
    ConnectionManager,
    fetch_one,
    open_connection,
)
from embedmind.backend.sqlite.locking import WriterLock
from embedmind.backend.values import CHECKPOINT_TIMEOUT, Synchronous
from embedmind.checks import finite_number
from embedmind.crashpoints import crashpoint
from embedmind.errors import InvalidInputError, StorageError, StoreBusyError

logger = logging.getLogger(__name__)

WAL_RESET_BYTES = 16 * 1024 * 1024
"""WAL content past which the next write first rewinds it (twice SQLite's own trigger)."""
WAL_RESET_WAIT_MS = 200
"""How long that reset may wait for readers of older snapshots (the writers' worst stall)."""
WAL_FRAME_HEADER = 24
"""Bytes of each WAL frame before its page."""
WAL_RETRY_BYTES = 4 * 1024 * 1024
"""After a reset that readers outlasted, the WAL growth before the next attempt."""

CHECKPOINT_ATTEMPT_MS = 100
"""How long one checkpoint attempt holds the writer lock waiting for readers."""
CHECKPOINT_PAUSE = 0.05
"""Seconds between attempts, the writer lock let go, so other writers commit meanwhile."""
SQLITE_FAILED = "SQLite failed"

SIBLING_SUFFIX_BYTES = len("-fragments.XXXXXXXX.tmp")
"""The longest suffix the engine adds to the store's file name: an index save's temporary file."""
SQLITE_MAX_PATH_BYTES = 512 - len("-journal")
"""SQLite's unix VFS takes paths of at most 512 bytes, including the ``-journal`` it appends."""


def normalize_path(path: str | os.PathLike[str]) -> str:
    """Validate a store path and return it as an absolute path (or ``":memory:"``).

    Raises:
        InvalidInputError: When the path is empty, contains NUL or characters that
            are not UTF-8, is too long for SQLite or the file system, names a
            directory, or is a libpq connection string.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidInputError("path", f"expected a str or path, got {type(path).__name__}")
    text = os.fspath(path)
    if text == MEMORY_PATH:
        return text
    if not isinstance(text, str) or not text or "\x00" in text:
        raise InvalidInputError("path", "must be a non-empty path without NUL")
    if looks_like_libpq(text):
        # Never a file named after it, its password in the name; nor the name in
        # this message. Whichever backend is registered, this one never opens it.
        raise InvalidInputError(
            "path",
            "is a libpq connection string (keyword=value), not a file path: a PostgreSQL "
            "store needs the postgresql backend (pip install 'embedmind[postgres]'); a file "
            "name cannot hold words like 'host=' or 'password='",
        )
    absolute = os.path.abspath(text)
    # SQLite takes file names as UTF-8: a lone surrogate would fail deep inside
    # the open with a raw UnicodeEncodeError, after the file was created.
    try:
        encoded = absolute.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("path", "contains characters that are not valid UTF-8") from None
    # Too long a name half works (the file opens, a lock file or an index
    # save's temporary file cannot be created), so refuse it before creating anything.
    if len(encoded) > SQLITE_MAX_PATH_BYTES:
        raise InvalidInputError("path", f"longer than {SQLITE_MAX_PATH_BYTES} bytes as UTF-8")
    longest = _name_max(absolute) - SIBLING_SUFFIX_BYTES
    if len(os.path.basename(encoded)) > longest:
        raise InvalidInputError("path", f"file name longer than {longest} bytes as UTF-8")
    if os.path.isdir(absolute):
        raise InvalidInputError(
            "path", f"{text!r} is a directory; name a file like 'memories.mind'"
        )
    parent = os.path.dirname(absolute)
    if not os.path.isdir(parent):
        raise InvalidInputError("path", f"directory {parent!r} does not exist")
    return absolute


def _name_max(path: str) -> int:
    """The longest file name the directory of ``path`` accepts (255 when unknown)."""
    try:
        return os.pathconf(os.path.dirname(path), "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


class Database:
    """An open store file."""

    def __init__(
        self, path: str, *, synchronous: Synchronous = "FULL", busy_timeout: float = 10.0
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidInputError("synchronous", "must be 'FULL' or 'NORMAL'")
        # Finite: int(inf * 1000) below would be a raw OverflowError.
        finite_number(
            busy_timeout,
            "busy_timeout",
            positive=True,
            message="must be a positive number of seconds",
        )
        self.path = path
        if path != MEMORY_PATH:
            fileio.create_private_file(path)
        busy_ms = int(busy_timeout * 1000)
        self._busy_ms = busy_ms
        self._next_wal_reset = WAL_RESET_BYTES
        self._frame_bytes: int  # read from the file below
        self._checkpoints: Checkpointer | None = None
        if path != MEMORY_PATH:
            self._checkpoints = Checkpointer(
                functools.partial(open_connection, path, synchronous, busy_ms)
            )
        self.connections = ConnectionManager(
            path,
            synchronous,
            busy_ms,
            on_open=None if self._checkpoints is None else self._checkpoints.watch,
        )
        # An in-memory store lives in one process: it needs only the thread lock.
        # The lock files sit beside the real file: a store opened through a
        # symlink under another name must share its writers' lock, or they would
        # meet in SQLite's busy handler instead (unfair, and a raw "database is
        # locked" instead of StoreBusyError; found by R11, test_open_paths.py).
        real_path = None if path == MEMORY_PATH else os.path.realpath(path)
        self._real_path = real_path
        self._lock = WriterLock(real_path, busy_timeout)
        self._wal_path = f"{real_path}-wal"  # SQLite too keeps it beside the real file
        self._memory = path == MEMORY_PATH
        try:
            with self.connections.connection() as conn:
                # A file made before the page size was fixed keeps its own.
                self._frame_bytes = fetch_one(conn, "PRAGMA page_size")[0] + WAL_FRAME_HEADER
                migrations.check_supported(path, migrations.schema_version(conn))
                if migrations.schema_version(conn) < migrations.LATEST:
                    with self._lock.hold():
                        self.schema_version = migrations.apply_pending(conn, path)
                else:
                    self.schema_version = migrations.schema_version(conn)
        except apsw.Error as e:
            # SQLite opens the WAL and SHM only at the first read: one it cannot
            # open (a symlink planted in its place) fails here, never as a raw error.
            self.close()
            raise StorageError(f"cannot open store {path!r}: {e}") from e
        except BaseException:
            self.close()
            raise

    def sibling(self, suffix: str) -> str | None:
        """The path of a file derived from the store's (``None`` in memory).

        Beside the real file, not the name it was opened by: a store opened
        through a symlink must find the index files its other names saved.
        """
        return None if self._real_path is None else self._real_path + suffix

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
            except apsw.Error as e:  # an I/O error, a corrupt page: typed, per DESIGN §8
                raise StorageError(f"reading {self.path!r} failed: {e}") from e
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
            self._bound_wal(conn)
            _execute(conn, "BEGIN IMMEDIATE")
            try:
                yield conn
                crashpoint("before-commit")
                _execute(conn, "COMMIT")
                crashpoint("after-commit")
            except BaseException as e:
                if conn.in_transaction:
                    with suppress(apsw.Error):  # SQLite may have rolled back already
                        conn.execute("ROLLBACK")
                if isinstance(e, apsw.Error):  # a full disk, an I/O error: typed, per DESIGN §8
                    raise StorageError(f"writing {self.path!r} failed, nothing written: {e}") from e
                raise

    def _bound_wal(self, conn: apsw.Connection) -> None:
        """Rewind the WAL before a write transaction once it holds :data:`WAL_RESET_BYTES`.

        Called under the writer lock, before ``BEGIN``. The checkpoint thread
        started copying the frames back at the last commit: the writer waits
        for that copy to end (SQLite would refuse a second checkpoint beside
        it), and the ``RESTART`` checkpoint finds little or nothing left to
        copy. It waits (through a busy timeout lowered to
        :data:`WAL_RESET_WAIT_MS`) only for readers of snapshots older than
        the last commit: readers that begin once the WAL is fully copied read
        the database file and do not hold it up. The next transaction then
        writes the WAL from its start; the file is not truncated, so its
        blocks are written over rather than allocated anew. (A batch of
        10,000 text-only memories into a 1M store: 2.16-2.18 s with the copy
        in the COMMIT and a truncation after it, 1.74-1.80 s so; the
        truncation alone left out, 1.85-1.91 s against 2.02-2.03.) When old
        readers outlast the wait, the next attempt comes after another
        :data:`WAL_RETRY_BYTES` of growth, so a long reader costs writers one
        short wait per step, not one per commit, and the WAL gets several
        more chances before it nears 64 MB. Nothing here may fail the write.
        """
        if self._checkpoints is None:
            return
        size = self._checkpoints.frames * self._frame_bytes
        if size < self._next_wal_reset:
            return
        busy = 1
        try:
            with self._checkpoints.quiet():
                conn.setbusytimeout(WAL_RESET_WAIT_MS)
                busy = fetch_one(conn, "PRAGMA wal_checkpoint(RESTART)")[0]
        except apsw.Error as e:
            logger.warning("could not reset the WAL of %s: %s", self.path, e)
        finally:
            with suppress(apsw.Error):
                conn.setbusytimeout(self._busy_ms)
        if busy:
            self._next_wal_reset = size + WAL_RETRY_BYTES
        else:
            self._next_wal_reset = WAL_RESET_BYTES
            self._checkpoints.restarted()

    def checkpoint(self, timeout: float = CHECKPOINT_TIMEOUT) -> str | None:
        """Copy the WAL into the database and truncate it to zero bytes, within ``timeout``.

        A reader in another process whose snapshot still uses the WAL holds the
        truncation up for as long as its transaction lasts (a streaming export:
        minutes). So the whole wait is bounded by ``timeout``, and the writer
        lock is held only during each attempt (at most
        :data:`CHECKPOINT_ATTEMPT_MS`, SQLite's busy handler waiting for the
        readers), then let go for :data:`CHECKPOINT_PAUSE` so other writers
        commit meanwhile instead of meeting :class:`StoreBusyError`. (Before,
        each of 50 attempts waited the full busy timeout under the lock: 506 s.)

        Returns:
            ``None`` when the WAL was fully checkpointed and truncated, else what
            prevented it (for the caller's error message).
        """
        if self._memory:
            return None
        deadline = time.monotonic() + timeout
        with self.connections.connection() as conn:
            while True:
                left = deadline - time.monotonic()
                problem = self._checkpoint_once(
                    conn, max(0.001, min(CHECKPOINT_ATTEMPT_MS / 1000, left))
                )
                if problem is None or problem.startswith(SQLITE_FAILED):
                    return problem
                if deadline - time.monotonic() <= 0:
                    return problem
                time.sleep(min(CHECKPOINT_PAUSE, max(0.0, deadline - time.monotonic())))

    def _checkpoint_once(self, conn: apsw.Connection, wait: float) -> str | None:
        """One TRUNCATE checkpoint under the writer lock, waiting at most ``wait`` s for readers."""
        try:
            with self._lock.hold(timeout=wait):
                conn.setbusytimeout(max(1, int(wait * 1000)))
                try:
                    busy = fetch_one(conn, "PRAGMA wal_checkpoint(TRUNCATE)")[0]
                finally:
                    conn.setbusytimeout(self._busy_ms)
        except StoreBusyError:
            return "another writer held the writer lock"
        except apsw.Error as e:  # a full disk, an I/O error: the WAL stays as it is
            logger.warning("could not checkpoint the WAL of %s: %s", self.path, e)
            return f"{SQLITE_FAILED}: {e}"
        if busy:
            return "a reader in another process holds a snapshot that still uses the WAL"
        return None

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
        return fileio.file_size(self.path) + fileio.file_size(self._wal_path)

    @property
    def closed(self) -> bool:
        """Whether the database was closed."""
        return self.connections.closed

    def close(self) -> None:
        """Close every connection and lock file (after the checkpoint under way, if any)."""
        if self._checkpoints is not None:
            self._checkpoints.close()
        self.connections.close()
        self._lock.close()


def _execute(conn: apsw.Connection, sql: str) -> None:
    try:
        conn.execute(sql)
    except apsw.Error as e:
        raise StorageError(f"{sql} failed: {e}") from e
