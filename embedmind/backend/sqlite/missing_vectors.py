"""Which live memories have no vector, kept current for recall at almost no cost.

A memory written while a store with vectors was open with ``embedder=None``
gets no vector, and vector recall never finds it. Finding such memories takes
a scan of every row (about 1.5 ms per 10,000), too slow for each recall, so the
answer is cached per store and checked against :func:`change_marks` (one tiny
statement) on each call. When the marks moved, only what can have changed is
looked at again where that is exact: rows written since (their keys are
higher), and the rows known to have no vector. A window in which vectors were
removed (a forget, a changed upsert, a redaction) or whose log was trimmed
could have taken the vectors of any memory, and is answered by a full scan.

This process's own writes keep the cache current as they commit
(:class:`WriteWatch`), so the first recall after a bulk load finds nothing to
scan: a write knows which memories it took vectors from, and its index saves
trim the log (which made the next refresh scan everything).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import apsw

from embedmind.backend.sqlite import vector_rows

logger = logging.getLogger(__name__)

Marks = tuple[int, int, int]

LEARN_AT = 256
"""Memories one transaction inserts from which a cache never computed in this
process is computed after its COMMIT (the engine's ``CATCH_UP_AT``: a write that
large loads the whole vector index, far costlier than the scan)."""

KEPT_STATES = 8
"""Earlier answers kept, by their marks, after the cache moved on.

A recall whose snapshot began before a commit that moved the cache (a bulk
load commits every batch) reads older marks than the cache's. Without its
answer at hand it scanned every row (about 1.5 ms per 10,000; 7-8 % of a
reader's sampled time beside a bulk load of 100k) and set the cache back, so
the next write's own update did not apply either."""

WATCH_LIMIT = 1_000
"""Cached rows without a vector above which a write leaves the cache to the next recall.

Each write that keeps the cache current checks every cached row again (it may
have been forgotten or given a vector): about 0.9 ms per 1,000 rows (measured
at 500, 2,000 and 10,000), paid by the read path once per recall but here once
per write, so a store holding many memories without vectors keeps its writes
as cheap as before."""


class MissingVectors:
    """A per-store cache of the keys of live memories without a vector."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._marks: Marks | None = None
        self._rows: frozenset[int] = frozenset()  # rows without a vector, live or forgotten
        self._live: tuple[int, ...] = ()
        self._kept: dict[Marks, tuple[int, ...]] = {}  # earlier answers (KEPT_STATES)

    @property
    def known(self) -> bool:
        """Whether the cache was computed in this process (it may be stale)."""
        return self._marks is not None

    def cached(self) -> tuple[Marks | None, tuple[int, ...]]:
        """The marks and live keys as last computed, unchecked (for tests and tooling)."""
        with self._lock:
            return self._marks, self._live

    def live_keys(self, conn: apsw.Connection) -> tuple[int, ...]:
        """The keys of the live memories without a vector, as of ``conn``'s snapshot."""
        marks = vector_rows.change_marks(conn)
        with self._lock:
            if marks == self._marks:
                return self._live
            kept = self._kept.get(marks)
            if kept is not None:  # a snapshot older than the cache: its own answer
                return kept
            self._refresh(conn, marks)
            return self._live

    def watch(self, conn: apsw.Connection) -> WriteWatch:
        """Start following a write transaction just begun on ``conn``."""
        return WriteWatch(self, vector_rows.change_marks(conn))

    def _refresh(self, conn: apsw.Connection, marks: Marks) -> None:
        if self._marks is not None and self._incremental(conn, self._marks, marks):
            since = vector_rows.rows_without_vectors(conn, after=self._marks[2])
            candidates = self._rows | set(since)
        else:
            candidates = frozenset(vector_rows.rows_without_vectors(conn))
        self._set(marks, *_without_vectors(conn, candidates))

    def _set(self, marks: Marks, rows: frozenset[int], live: tuple[int, ...]) -> None:
        """Move the cache to ``marks`` (the lock held), keeping the answer it moves from."""
        if self._marks is not None:
            self._kept[self._marks] = self._live
            while len(self._kept) > KEPT_STATES:
                del self._kept[next(iter(self._kept))]  # the oldest kept
        self._marks, self._rows, self._live = marks, rows, live

    def _rows_as_of(self, marks: Marks) -> tuple[Marks | None, frozenset[int]] | None:
        """``(cached marks, rows)`` when the cache is exact as of ``marks``, else ``None``."""
        with self._lock:
            if self._marks == marks:
                return self._marks, self._rows
            if self._marks is None and marks[2] == 0:
                return None, frozenset()  # no memory was ever stored: nothing lacks a vector
            return None

    def _install(
        self, was: Marks | None, marks: Marks, rows: frozenset[int], live: tuple[int, ...]
    ) -> None:
        with self._lock:
            if self._marks == was:  # else a refresh meanwhile already moved it on
                self._set(marks, rows, live)

    @staticmethod
    def _incremental(conn: apsw.Connection, known: Marks, marks: Marks) -> bool:
        """Whether the cached rows plus the rows written since are all that can lack a vector."""
        _, seq, newest = known
        if marks[1] < seq or marks[2] < newest:  # the file went back (restored): start over
            return False
        if marks[1] == seq:
            return True
        first, entries, removals = vector_rows.log_removals(conn, seq)
        # Every entry since ``seq`` still logged, and none a removal.
        return first == seq + 1 and entries == marks[1] - seq and not removals


class WriteWatch:
    """One write transaction's effect on the cache, applied only once it committed.

    The write session reports the memories it takes vectors from
    (:meth:`removed`); just before COMMIT :meth:`settle` works out, inside the
    transaction, what the cache becomes, and :meth:`committed` installs it.
    Only a cache exact as of the marks read when the transaction began is
    moved on: the writer lock kept every other writer out since, so the new
    marks follow from the old by this transaction alone. A cache made stale by
    another process's write is left to the next recall's refresh, which finds
    that write by its marks.
    """

    def __init__(self, cache: MissingVectors, start: Marks) -> None:
        self._cache = cache
        self._start = start
        self._removed_keys: set[int] = set()
        self._removed = 0
        self._staged: tuple[Marks | None, Marks, frozenset[int], tuple[int, ...]] | None = None
        self._inserted = 0

    def removed(self, key: int, vectors: int) -> None:
        """Note that the transaction removed ``vectors`` memory vectors of ``key``."""
        if vectors:
            self._removed_keys.add(key)
            self._removed += vectors

    def settle(self, conn: apsw.Connection) -> None:
        """Work out the cache as of this transaction's end (inside it, before COMMIT).

        Never raises: the cache is derived, and a failure here must not roll
        the write back (the next recall's refresh is exact on its own).
        """
        try:
            self._settle(conn)
        except apsw.Error as e:
            self._staged = None
            logger.warning("the missing-vectors cache was not updated: %s", e)

    def _settle(self, conn: apsw.Connection) -> None:
        end = vector_rows.change_marks(conn)
        self._inserted = end[2] - self._start[2]
        cached = self._cache._rows_as_of(self._start)
        if end == self._start or cached is None or len(cached[1]) > WATCH_LIMIT:
            return
        if not self._removals_known(conn, end):
            return  # vectors removed behind the session's back: the refresh scans
        # The new rows are a key range of this transaction's own size.
        since = vector_rows.rows_without_vectors(conn, after=self._start[2])
        rows, live = _without_vectors(conn, cached[1] | set(since) | self._removed_keys)
        self._staged = (cached[0], end, rows, live)

    def committed(self) -> bool:
        """Install what :meth:`settle` worked out; whether the cache should be computed now.

        Called after COMMIT only. ``True`` when the cache was never computed in
        this process and this transaction inserted at least :data:`LEARN_AT`
        memories: the caller then computes it from a read snapshot, outside the
        writer lock, once, rather than on the first recall. Smaller writes
        leave it to that recall: a full scan per small write would cost more.
        """
        if self._staged is not None:
            self._cache._install(*self._staged)
            return False
        return not self._cache.known and self._inserted >= LEARN_AT

    def _removals_known(self, conn: apsw.Connection, end: Marks) -> bool:
        """Whether every vector removal this transaction logged was reported to :meth:`removed`."""
        if end[1] == self._start[1]:
            return self._removed == 0
        first, entries, removals = vector_rows.log_removals(conn, self._start[1])
        whole = first == self._start[1] + 1 and entries == end[1] - self._start[1]
        return whole and removals == self._removed


def _without_vectors(
    conn: apsw.Connection, candidates: Iterable[int]
) -> tuple[frozenset[int], tuple[int, ...]]:
    """``(rows without a vector, the live ones in key order)`` among ``candidates``."""
    status = vector_rows.vector_status(conn, sorted(candidates))
    rows = frozenset(key for key, _, has in status if not has)
    return rows, tuple(sorted(key for key, live, has in status if live and not has))
