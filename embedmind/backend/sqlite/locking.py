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
process's file descriptors — by a FIFO lock (:class:`FairThreadLock`), since
a plain ``threading.Lock`` lets the thread that just released it take it
straight back: a bulk load's next batch beat a waiting ``remember`` on
another thread two and three times in a row (its p99 wait 2.0 s against a
batch held 0.9 s, ``embedmind bench ingest``'s contention table).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from embedmind.backend.sqlite import fileio
from embedmind.errors import StoreBusyError

_FIRST_SLEEP = 0.0002
_MAX_SLEEP = 0.005


class FairThreadLock:
    """A lock handed to its waiters in the order they came (first come, first served).

    ``release`` passes the lock straight to the oldest waiter, so a thread
    that releases it and asks again (a bulk load between two batches) queues
    behind every thread already waiting instead of winning the race.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting at most ``timeout`` seconds; whether it was taken."""
        with self._mutex:
            if not self._held and not self._waiters:
                self._held = True
                return True
            turn = threading.Event()
            self._waiters.append(turn)
        if turn.wait(max(0.0, timeout)):
            return True
        with self._mutex:
            if turn.is_set():  # handed over between the timeout and here: it is ours
                return True
            self._waiters.remove(turn)
            return False

    def release(self) -> None:
        """Hand the lock to the oldest waiter, or leave it free."""
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().set()  # stays held: ownership passes on
            else:
                self._held = False


class WriterLock:
    """Serialises writers across threads and processes for one store file."""

    def __init__(self, store_path: str | None, timeout: float) -> None:
        self._store_path = store_path or ":memory:"
        # None: an in-memory store, serialised by the thread lock alone.
        self._files = store_path is not None
        self._queue_path = f"{store_path}-queue.lock"
        self._write_path = f"{store_path}-write.lock"
        self._timeout = timeout
        self._thread_lock = FairThreadLock()
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
