"""The writer lock: fair, bounded, released by process death.

SQLite's busy handler is unfair under contention (one writer was measured at 1
commit in 5 s against another), so writers are serialised by OS file locks
before ``BEGIN IMMEDIATE``. Two lock files make it fair: a writer first takes
the *queue* lock, then the *write* lock, then lets the queue lock go. A writer
that has just committed must queue behind the one already holding the queue
lock, so two busy writers alternate instead of one starving the other.
``flock`` locks belong to an open file description and vanish when the
process dies, so a crashed writer never wedges the store. Threads of one
process are serialised by a ``threading.Lock`` first, since they share the
process's file descriptors.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from embedmind.backend.sqlite import fileio
from embedmind.errors import StoreBusyError

_FIRST_SLEEP = 0.0002
_MAX_SLEEP = 0.005


class WriterLock:
    """Serialises writers across threads and processes for one store file."""

    def __init__(self, store_path: str | None, timeout: float) -> None:
        self._store_path = store_path or ":memory:"
        # None: an in-memory store, serialised by the thread lock alone.
        self._files = store_path is not None
        self._queue_path = f"{store_path}-queue.lock"
        self._write_path = f"{store_path}-write.lock"
        self._timeout = timeout
        self._thread_lock = threading.Lock()
        self._pid = -1
        self._queue_fd = -1
        self._write_fd = -1

    def _descriptors(self) -> tuple[int, int]:
        # Descriptors are per process: after fork() the child opens its own,
        # because a shared open file description would share the lock too.
        if self._pid != os.getpid():
            self._queue_fd = fileio.open_lock_file(self._queue_path)
            self._write_fd = fileio.open_lock_file(self._write_path)
            self._pid = os.getpid()
        return self._queue_fd, self._write_fd

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the writer lock for the duration of the ``with`` block.

        Args:
            timeout: Seconds to wait for it; by default the store's busy timeout.

        Raises:
            StoreBusyError: When the lock is not obtained within the timeout.
        """
        wait = self._timeout if timeout is None else max(0.0, timeout)
        started = time.monotonic()
        deadline = started + wait
        if not self._thread_lock.acquire(timeout=wait):
            raise StoreBusyError(self._store_path, time.monotonic() - started)
        try:
            if not self._files:
                yield
                return
            queue_fd, write_fd = self._descriptors()
            _acquire(queue_fd, deadline, self._store_path, started)
            try:
                _acquire(write_fd, deadline, self._store_path, started)
            finally:
                fcntl.flock(queue_fd, fcntl.LOCK_UN)
            try:
                yield
            finally:
                fcntl.flock(write_fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def close(self) -> None:
        """Close the lock files (only in the process that opened them)."""
        if self._pid == os.getpid():
            for fd in (self._queue_fd, self._write_fd):
                fileio.close_fd(fd)
            self._pid = -1


def _acquire(fd: int, deadline: float, path: str, started: float) -> None:
    sleep = _FIRST_SLEEP
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            now = time.monotonic()
            if now >= deadline:
                raise StoreBusyError(path, now - started) from None
            time.sleep(min(sleep, deadline - now))
            sleep = min(sleep * 2, _MAX_SLEEP)
