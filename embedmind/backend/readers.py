"""How many read sessions this process has open right now, on any thread and store.

A long stretch of pure Python on one thread starves a reader on another:
the reader gives up the GIL at each database call and then waits up to the
switch interval (5 ms) to get it back. A bulk load checks :func:`any_open`
and, only while a reader is there, sleeps briefly now and then to let it
through (:data:`embedmind.engine.writes.YIELD_EVERY`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_open = 0


@contextmanager
def reading() -> Iterator[None]:
    """Count a read session as open for the duration of the block."""
    global _open
    with _lock:
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1


def any_open() -> bool:
    """Whether a read session is open in this process."""
    return _open > 0
