"""SQLite connections through apsw: pragmas, SQL functions, per-thread use, fork safety.

A file store gives each thread its own connection (SQLite connections must not
interleave transactions), and a process that finds itself forked opens fresh
ones instead of touching the parent's (SQLite forbids carrying a connection
across ``fork()``). A ``":memory:"`` store has exactly one database, so all
threads share one connection behind a lock.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import apsw

from embedmind.backend.sqlite.where_sql import (
    FOLD_FUNCTION,
    TYPE_ERROR_FUNCTION,
    fold_sql,
    raise_type_error,
)
from embedmind.backend.values import Synchronous
from embedmind.errors import StorageError, StoreClosedError

MEMORY_PATH = ":memory:"
STATEMENT_CACHE = 512
"""Prepared statements apsw keeps per connection (its default is 100).

apsw evicts by use, not by statement: every execution (each row of an
``executemany`` too) puts its statement back in the next slot of a ring and
evicts whatever sat there. A ``remember`` of a 34-word message used enough
slots that the recall after it compiled 6.4 statements again each time; with
512 slots it compiled none (0.1). A slot is a pointer: the statements held are
still only the distinct ones in use.
"""
FORK_MESSAGE = (
    "store {path!r} was opened before fork(); SQLite connections cannot cross fork(), "
    "so open the store in the child only (or use the 'spawn' start method)"
)
_open_by: dict[str, list[int]] = {}
"""Processes that hold each store path open; a forked child inherits this map."""
_open_guard = threading.Lock()


def claim_path(path: str) -> None:
    """Record that this process opens ``path``; refuse when an ancestor holds it open.

    Raises:
        StorageError: When a process this one was forked from had ``path`` open.
    """
    path = os.path.realpath(path)  # one file, however it is named
    with _open_guard:
        holders = _open_by.setdefault(path, [])
        if any(pid != os.getpid() for pid in holders):
            raise StorageError(FORK_MESSAGE.format(path=path))
        holders.append(os.getpid())


def release_path(path: str) -> None:
    """Undo one :func:`claim_path` of this process."""
    path = os.path.realpath(path)
    with _open_guard:
        holders = _open_by.get(path, [])
        if os.getpid() in holders:
            holders.remove(os.getpid())


PAGE_SIZE = 8192
WAL_SIZE_LIMIT = 64 * 1024 * 1024
"""Bytes a rewound WAL file keeps at most (RELIABILITY.md R8 bounds the WAL at 64 MB)."""


def _configure(conn: apsw.Connection, synchronous: Synchronous, busy_ms: int) -> None:
    # Set on every connection: distributions differ in their defaults.
    conn.setbusytimeout(busy_ms)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    _into_wal(conn, busy_ms)
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    # Rewound WALs are written over, not truncated (database.Database._bound_wal):
    # one that a large transaction took past this is cut back at its next rewind.
    conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA cache_size = -32768")
    conn.create_scalar_function(TYPE_ERROR_FUNCTION, raise_type_error, 2, deterministic=False)  # type: ignore[arg-type]
    conn.create_scalar_function(FOLD_FUNCTION, fold_sql, 1, deterministic=True)  # type: ignore[arg-type]


WAL_RETRY_PAUSE = 0.005
"""Seconds between two tries of switching a new file to WAL while another process does."""


def _into_wal(conn: apsw.Connection, busy_ms: int) -> None:
    """Switch the file to WAL, retrying for up to ``busy_ms`` while another connection does.

    When several processes open a new store at once, SQLite can answer the
    switch with ``SQLITE_BUSY`` at once, without calling the busy handler
    (a deadlock it avoids while another connection converts the file): 3 of
    240 opens failed so, four processes opening one new file together.
    """
    deadline = time.monotonic() + busy_ms / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_PAUSE)


def open_connection(path: str, synchronous: Synchronous, busy_ms: int) -> apsw.Connection:
    """Open and configure one connection.

    Args:
        path: The database file (taken literally: ``file:`` URIs are not parsed).
        synchronous: ``"FULL"`` (durable at commit) or ``"NORMAL"``.
        busy_ms: SQLite's busy timeout, a backstop behind the writer lock.

    Returns:
        The configured connection.

    Raises:
        StorageError: When SQLite cannot open or configure the file.
    """
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    conn: apsw.Connection | None = None
    try:
        conn = apsw.Connection(path, flags=flags, statementcachesize=STATEMENT_CACHE)
        conn.setbusytimeout(busy_ms)
        _refuse_foreign_database(conn, path)
        _configure(conn, synchronous, busy_ms)
    except (apsw.Error, StorageError) as e:
        if conn is not None:
            with suppress(apsw.Error):
                conn.close()
        if isinstance(e, StorageError):
            raise
        raise StorageError(f"cannot open store {path!r}: {e}") from e
    return conn


def _refuse_foreign_database(conn: apsw.Connection, path: str) -> None:
    """Refuse another application's SQLite database before touching it.

    A store's file records its schema version in ``user_version`` from its first
    transaction on, and creates its tables in that same transaction; a file at
    version 0 that already has tables belongs to someone else. Opening it would
    add embedmind's tables and switch it to WAL mode, so it is refused first.

    Both are read by one statement, so from one snapshot: read apart, another
    process creating the store between the two reads (version 0, then its
    tables) made a store being created look like someone else's file.
    """
    version, tables = conn.execute(
        "SELECT (SELECT user_version FROM pragma_user_version), "
        "(SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\')"
    ).fetchall()[0]
    if version == 0 and tables:
        raise StorageError(
            f"{path!r} is a SQLite database that embedmind did not create; "
            "refusing to open it as a store (nothing was changed)"
        )


class ConnectionManager:
    """Hands out the right connection for the calling thread and process.

    ``on_open`` is called with each file connection it opens, before first use.
    """

    def __init__(
        self,
        path: str,
        synchronous: Synchronous,
        busy_ms: int,
        on_open: Callable[[apsw.Connection], None] | None = None,
    ) -> None:
        self.path = path
        self._on_open = on_open
        self._synchronous = synchronous
        self._busy_ms = busy_ms
        self._pid = os.getpid()
        self._local = threading.local()
        self._all: list[apsw.Connection] = []
        self._guard = threading.RLock()
        self._shared: apsw.Connection | None = None
        self._closed = False
        if path == MEMORY_PATH:
            self._shared = open_connection(path, synchronous, busy_ms)
            self._all.append(self._shared)
        else:
            claim_path(path)

    def _after_fork(self) -> None:
        # SQLite keeps per-file lock and shared-memory state per process; a
        # forked child inherits the parent's copy, so even a brand-new
        # connection in the child would share it without holding a lock of its
        # own, and its commits could vanish when the parent closes. Refuse.
        raise StorageError(FORK_MESSAGE.format(path=self.path))

    @contextmanager
    def connection(self) -> Iterator[apsw.Connection]:
        """Yield the calling thread's connection (the shared one, locked, in memory)."""
        if self._closed:
            raise StoreClosedError("the store is closed")
        if os.getpid() != self._pid:
            self._after_fork()
        if self._shared is not None:
            with self._guard:
                yield self._shared
            return
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_connection(self.path, self._synchronous, self._busy_ms)
            if self._on_open is not None:
                self._on_open(conn)
            self._local.conn = conn
            with self._guard:
                self._all.append(conn)
        yield conn

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._closed

    def close(self) -> None:
        """Close every connection this manager opened in this process."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
            if os.getpid() != self._pid:
                return  # never touch the parent's connections from a forked child
            if self._shared is None:
                release_path(self.path)
            for conn in self._all:
                with suppress(apsw.Error):  # close is best effort
                    conn.close()
            self._all = []


def fetch_one(conn: apsw.Connection, sql: str, params: Any = ()) -> tuple[Any, ...]:
    """Run a query that always yields a row (an aggregate, ``RETURNING``) and return it."""
    row = conn.execute(sql, params).fetchone()
    if row is None:  # pragma: no cover - only a damaged schema gets here
        raise StorageError(f"expected a row from: {sql}")
    return tuple(row)


def insert_json_rows(conn: apsw.Connection, sql: str, params: Any, count: int) -> range:
    """Run one ``INSERT ... SELECT ... FROM json_each(?) ORDER BY key`` of ``count`` rows.

    A batch travels as one JSON array: one ``sqlite3_step`` inserts every
    row, where ``executemany`` bound and stepped each one (and gave the GIL
    back and took it again per row). The JSON round trip keeps values exact:
    text (NUL included), 64-bit integers, and reals (parsed correctly rounded).

    Returns:
        The rows' keys, in the array's order: ``AUTOINCREMENT`` gives one
        statement's rows consecutive keys above every key ever used, in the
        order they are selected (``changes()`` counts the statement's own
        rows, not its triggers').
    """
    conn.execute(sql, params)
    inserted, last = conn.changes(), conn.last_insert_rowid()
    if inserted != count:  # pragma: no cover - the SELECT yields every element
        raise StorageError(f"inserted {inserted} rows of {count}, nothing written")
    return range(last - inserted + 1, last + 1)


def sqlite_version() -> str:
    """The SQLite library this backend runs on (bundled by apsw), for ``embedmind doctor``."""
    return str(apsw.sqlitelibversion())
