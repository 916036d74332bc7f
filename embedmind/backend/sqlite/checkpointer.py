"""Copying the WAL back into the database file on a thread of its own, beside the writers.

SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past
1,000 pages: the committing writer copies every new page back into the
database file and syncs it before its call returns, still holding the writer
lock. A bulk batch of 10,000 memories into a store of a million changes about
7,850 pages (61 MiB, counted in stop 44), so every batch paid that copy in full. Here no store
connection checkpoints as it commits: its WAL hook (:meth:`Checkpointer.watch`)
records how many frames the WAL holds and, past :data:`CHECKPOINT_FRAMES`,
wakes this thread, which runs a ``PASSIVE`` checkpoint on a connection of its
own while the writer goes on with its next transaction. ``PASSIVE`` never
waits for a reader or a writer and never blocks one; it copies the frames
that committed before it began.

What stays with the writers is rewinding the WAL
(:meth:`~embedmind.backend.sqlite.database.Database.write`): before a write
transaction begins on a WAL that has grown past its bound, the writer waits
for this thread's copy under way to end (:meth:`Checkpointer.quiet`), then
asks for a ``RESTART``, which finds the pages already copied.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import apsw

logger = logging.getLogger(__name__)

CHECKPOINT_FRAMES = 1000
"""WAL frames past which a commit wakes the checkpoint thread (SQLite's own trigger)."""


class Checkpointer:
    """The checkpoint thread of one store file in this process, started at its first wake.

    Args:
        open_connection: Opens the thread's own connection to the store file.
    """

    def __init__(self, open_connection: Callable[[], apsw.Connection]) -> None:
        self._open_connection = open_connection
        self._pid = os.getpid()
        self._wake = threading.Condition()
        self._wanted = False
        self._copying = False
        self._quieted = 0
        self._closing = False
        self._thread: threading.Thread | None = None
        self.frames = 0
        """Frames in the WAL after the last commit on a watched connection (any process's)."""
        self.passes = 0
        """Checkpoints this thread ran (diagnostics)."""

    def watch(self, conn: apsw.Connection) -> None:
        """Take over ``conn``'s checkpoints: it no longer checkpoints as it commits.

        A WAL hook replaces SQLite's automatic checkpoint on that connection.
        """
        conn.set_wal_hook(self._committed)

    def _committed(self, _conn: apsw.Connection, _name: str, frames: int) -> int:
        """The WAL hook, run by SQLite after each commit: record, and wake the thread if due."""
        self.frames = frames
        if frames >= CHECKPOINT_FRAMES:
            with self._wake:
                if not self._closing:
                    self._wanted = True
                    if self._thread is None:
                        self._thread = threading.Thread(
                            target=self._run, name="embedmind-checkpoint", daemon=True
                        )
                        self._thread.start()
                    self._wake.notify()
        return apsw.SQLITE_OK

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Within the block no background checkpoint runs: the one under way is waited for.

        SQLite lets one checkpoint run at a time and answers any other with
        ``SQLITE_BUSY`` at once, without waiting: a writer's ``RESTART`` would
        fail whenever it met this thread's copy. Waiting for that copy costs
        the writer no more than making it itself (a ``PASSIVE`` copy never
        waits for anyone, so it ends), and a commit wakes this thread right
        before the next writer would begin.
        """
        with self._wake:
            self._quieted += 1
            self._wake.wait_for(lambda: not self._copying)
        try:
            yield
        finally:
            with self._wake:
                self._quieted -= 1
                self._wake.notify_all()

    def restarted(self) -> None:
        """The WAL was rewound to its start: it holds no frames until the next commit."""
        self.frames = 0

    def close(self) -> None:
        """Stop the thread after the checkpoint under way, and close its connection."""
        if os.getpid() != self._pid:
            # A forked child has no such thread, and the lock may have been held
            # by it at the fork: taking it could hang the child's close forever.
            return
        with self._wake:
            self._closing = True
            self._wake.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        conn: apsw.Connection | None = None
        try:
            while True:
                with self._wake:
                    while not self._closing and (not self._wanted or self._quieted):
                        self._wake.wait()
                    if self._closing:
                        return
                    self._wanted, self._copying = False, True
                try:
                    if conn is None:
                        conn = self._open_connection()
                    self._checkpoint(conn)
                finally:
                    with self._wake:
                        self._copying = False
                        self._wake.notify_all()
        except Exception:  # never raised to anyone: the writers' WAL reset still bounds the WAL
            logger.warning("the background checkpoint stopped", exc_info=True)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: apsw.Connection) -> None:
        try:
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
            self.passes += 1
        except apsw.BusyError:
            pass  # another connection is checkpointing: it copies the same frames
        except apsw.Error as e:  # a full disk, an I/O error: the WAL keeps the pages
            logger.warning("background checkpoint failed: %s", e)
