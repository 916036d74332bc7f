"""The full scan behind ``embedmind doctor --verify``: rows, index files, SQLite's own check.

Reads only, in short transactions of :data:`PAGE` rows, so a scan of a large
store never holds writers off. A damaged memory row or a failing ``PRAGMA
integrity_check`` makes the report not ``ok``; an index file that does not
match its registry entry is only noted, since index files are caches the next
open rebuilds.

A row is damaged when a read would refuse it
(:mod:`embedmind.backend.sqlite.integrity`): a text column that is not UTF-8,
content off its fingerprint, metadata or tags that are not a JSON object or a
list of strings, an unknown tier or level, a time outside the years 1-9999, a
confidence (or prior confidence) outside [0, 1], a negative access count.
Entity names, relations and namespace links are not scanned: a read of a
damaged one names it (:mod:`embedmind.backend.graph_values`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedmind.backend.sqlite import fileio, integrity, vector_rows
from embedmind.backend.sqlite.database import Database
from embedmind.errors import InvalidInputError

if TYPE_CHECKING:
    from embedmind.store import Store

INDEX_FILES = ((vector_rows.MEMORY, "-vectors"), (vector_rows.FRAGMENTS, "-fragments"))
"""Each index and the suffix of its file (as ``Store`` and ``Fragments`` name them)."""
PAGE = 2_000
INTEGRITY_LIMIT = 100
"""At most this many messages are asked of ``PRAGMA integrity_check``."""


@dataclass(frozen=True)
class DamagedMemory:
    """One memory whose row no longer reads back as written."""

    id: str
    reason: str


@dataclass(frozen=True)
class IndexFileState:
    """One derived index file against its registry entry.

    Attributes:
        name: ``"memory-vectors"`` or ``"fragments"``.
        path: The file.
        state: ``"ok"``, ``"unregistered"`` (never saved), ``"missing"``,
            ``"not a regular file"`` or ``"stale or damaged"`` — all but ``"ok"``
            mean the next open rebuilds it from SQLite.
    """

    name: str
    path: str
    state: str


@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify` found.

    Attributes:
        rows: Memory rows scanned (forgotten ones included).
        damaged: The damaged memories, by id.
        integrity: ``PRAGMA integrity_check``'s messages (``("ok",)`` when sound).
        index_files: The state of each registered or expected index file.
    """

    rows: int
    damaged: tuple[DamagedMemory, ...]
    integrity: tuple[str, ...]
    index_files: tuple[IndexFileState, ...]

    @property
    def ok(self) -> bool:
        """Whether no row is damaged and SQLite's own check passed."""
        return not self.damaged and self.integrity == ("ok",)


def verify(store: Store) -> VerifyReport:
    """Scan every row, the index files and the SQLite file of ``store``.

    Example:
        >>> import embedmind
        >>> with embedmind.Store.open(":memory:", embedder=None) as store:
        ...     _ = store.remember("Alice prefers green tea")
        ...     verify(store).ok
        True
    """
    db = store._db  # the SQLite backend's database: this checks its file and rows
    if not isinstance(db, Database):  # PostgreSQL's backend has a `database` too
        raise InvalidInputError(
            "store", "verify checks SQLite stores; this one has another backend (nothing checked)"
        )
    damaged: list[DamagedMemory] = []
    rows, after = 0, 0
    while True:
        with db.read() as conn:
            found, after, read = integrity.scan_page(conn, after, PAGE)
        damaged += [DamagedMemory(i, reason) for i, reason in found]
        rows += read
        if read < PAGE:
            break
    with db.read() as conn:
        checked = tuple(
            str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({INTEGRITY_LIMIT})")
        )
        files = tuple(
            _index_state(conn, db.sibling(suffix), space) for space, suffix in INDEX_FILES
        )
    return VerifyReport(rows, tuple(damaged), checked, tuple(f for f in files if f is not None))


def _index_state(conn: object, path: str | None, space: vector_rows.Space) -> IndexFileState | None:
    if path is None:
        return None  # an in-memory store keeps no index file
    entry = vector_rows.index_file(conn, space.index_name)  # type: ignore[arg-type]
    if entry is None:
        state = "unregistered"
    elif not os.path.lexists(path):
        state = "missing"
    elif not fileio.is_regular_file(path):
        state = "not a regular file"
    elif fileio.read_verified(path, entry.size, entry.checksum) is None:
        state = "stale or damaged"
    else:
        state = "ok"
    return IndexFileState(space.index_name, path, state)
