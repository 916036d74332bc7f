"""Time the same queries on several engines, round-robin, so load hits all alike.

For each query every engine answers in turn, the order rotating per query:
a burst of load from another job on a shared machine slows every engine at
once, and the ratios between them stay meaningful even when absolute times
drift. A failing engine is marked failed and the others go on.

Queries run with numpy's BLAS on one thread (when threadpoolctl is there):
one query is one mat-vec, every graph search is single-threaded, and on two
busy cores a two-thread OpenBLAS mat-vec over 10k vectors measured 10-20 ms
instead of 0.7 ms, as its threads waited for each other.

Example:
    >>> runs = round_robin({"twice": lambda i: [i * 2]}, 3)
    >>> runs["twice"].results, len(runs["twice"].seconds), runs["twice"].error
    ([[0], [2], [4]], 3, '')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from embedmind_bench.optional import load
from embedmind_bench.progress import Progress, silent

Searcher = Callable[[int], list[Any]]


@dataclass
class Run:
    """One engine's timed answers.

    Attributes:
        seconds: Wall time per query, in query order.
        results: Each query's ranked keys.
        error: Why the engine stopped answering (empty when it did not).
    """

    seconds: list[float] = field(default_factory=list)
    results: list[list[Any]] = field(default_factory=list)
    error: str = ""


def round_robin(
    searchers: Mapping[str, Searcher],
    count: int,
    *,
    warmup: int = 0,
    bar: Progress | None = None,
) -> dict[str, Run]:
    """Ask every searcher queries ``0 .. count-1``, rotating the order per query.

    Args:
        searchers: ``name -> f(query index) -> ranked keys``.
        count: How many queries.
        warmup: Untimed leading queries (repeated from the start) before timing.
        bar: Advanced once per query.

    Returns:
        ``name -> Run``; a searcher that raised has ``error`` set and stops.
    """
    with single_threaded_blas():
        return _rounds(searchers, count, warmup, bar or silent("", count))


def single_threaded_blas() -> AbstractContextManager[object]:
    """Limit BLAS libraries to one thread (a no-op without threadpoolctl).

    Returns:
        A context manager.
    """
    threadpoolctl, _ = load("threadpoolctl")
    if threadpoolctl is None:
        return nullcontext()
    limits: AbstractContextManager[object] = threadpoolctl.threadpool_limits(1, user_api="blas")
    return limits


def _rounds(
    searchers: Mapping[str, Searcher], count: int, warmup: int, bar: Progress
) -> dict[str, Run]:
    """The timed rounds of :func:`round_robin`."""
    runs = {name: Run() for name in searchers}
    names = list(searchers)
    passes = [(i, False) for i in range(min(warmup, count))] + [(i, True) for i in range(count)]
    for index, timed in passes:
        shift = index % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            run = runs[name]
            if run.error:
                continue
            try:
                start = time.perf_counter()
                keys = searchers[name](index)
                elapsed = time.perf_counter() - start
            except Exception as exc:  # one broken engine must not stop the others
                run.error = f"{type(exc).__name__}: {exc}"
                continue
            if timed:
                run.seconds.append(elapsed)
                run.results.append(keys)
        if timed:
            bar.update(1)
    return runs
