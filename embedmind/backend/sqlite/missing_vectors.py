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
"""

from __future__ import annotations

import threading

import apsw

from embedmind.backend.sqlite import vector_rows


class MissingVectors:
    """A per-store cache of the keys of live memories without a vector."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._marks: tuple[int, int, int] | None = None
        self._rows: frozenset[int] = frozenset()  # rows without a vector, live or forgotten
        self._live: tuple[int, ...] = ()

    def live_keys(self, conn: apsw.Connection) -> tuple[int, ...]:
        """The keys of the live memories without a vector, as of ``conn``'s snapshot."""
        marks = vector_rows.change_marks(conn)
        with self._lock:
            if marks != self._marks:
                self._refresh(conn, marks)
            return self._live

    def _refresh(self, conn: apsw.Connection, marks: tuple[int, int, int]) -> None:
        if self._marks is not None and self._incremental(conn, self._marks, marks):
            since = vector_rows.rows_without_vectors(conn, after=self._marks[2])
            candidates = self._rows | set(since)
        else:
            candidates = frozenset(vector_rows.rows_without_vectors(conn))
        status = vector_rows.vector_status(conn, sorted(candidates))
        self._rows = frozenset(key for key, _, has in status if not has)
        self._live = tuple(sorted(key for key, live, has in status if live and not has))
        self._marks = marks

    @staticmethod
    def _incremental(
        conn: apsw.Connection, known: tuple[int, int, int], marks: tuple[int, int, int]
    ) -> bool:
        """Whether the cached rows plus the rows written since are all that can lack a vector."""
        _, seq, newest = known
        if marks[1] < seq or marks[2] < newest:  # the file went back (restored): start over
            return False
        if marks[1] == seq:
            return True
        first, entries, removed = vector_rows.log_window(conn, seq)
        # Every entry since ``seq`` still logged, and none a removal.
        return first == seq + 1 and entries == marks[1] - seq and not removed
