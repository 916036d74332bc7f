"""Work started now and collected later, on a worker thread, while the caller goes on.

Two kinds of work run here, each beside work of the calling thread that
holds no GIL:

- A hybrid recall's graph search. usearch releases the GIL while it walks
  the graph, so the search runs on the other core while the calling thread
  scores the text channel (Python, numpy and SQLite reads on the session's
  connection); the caller collects the result when it needs it.
- A batch's text analysis (pure Python), while the calling thread inserts
  the batch's rows in one SQLite statement.

Only that work runs on a worker: it touches no SQLite connection (a
session's connection is used by one thread at a time).

The workers are shared by the process's stores. A child process made by
``fork`` gets fresh ones: a parent's worker threads do not exist there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

WORKERS = max(2, os.cpu_count() or 1)
"""Calls in flight at once (each index lets one search in at a time anyway)."""

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def soon(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Callable[[], T]:
    """Start ``call(*args, **kwargs)`` on a worker; return what waits for its result.

    The returned callable re-raises what the call raised.
    """
    future = _workers().submit(call, *args, **kwargs)
    return future.result


def ready() -> None:
    """Start a worker thread now unless one is idle.

    A thread costs about 0.4 ms to start (2-core AMD EPYC): paid here, when a
    store with vectors opens, rather than by its first hybrid recall.
    """
    _workers().submit(int)


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="embedmind-worker")
        return _pool


def _forget_the_parents_workers() -> None:
    # Its threads, and any hold on the lock, stayed in the parent.
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_the_parents_workers)
