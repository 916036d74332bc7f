"""The SQLite backend: one apsw database file, its BM25 postings and its HNSW caches.

:class:`SqliteBackend` owns the :class:`~embedmind.backend.sqlite.database.Database`
(the file, its lock and connections), the BM25 index's per-process cache and
the two vector caches (memory vectors, fragments) that live beside the file
(``name.mind-vectors``, ``name.mind-fragments``). :data:`FACTORY` is what the
built-in plugin registers through ``register_backends``: it claims every
location that is not a URL.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

from embedmind.backend import readers
from embedmind.backend.sqlite import fileio, vector_rows, workers
from embedmind.backend.sqlite.connection import MEMORY_PATH
from embedmind.backend.sqlite.database import Database, normalize_path
from embedmind.backend.sqlite.hnsw import VectorIndex
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.backend.sqlite.session import Parts, SqliteRead
from embedmind.backend.sqlite.session_writes import SqliteWrite
from embedmind.backend.values import Capabilities, OpenOptions
from embedmind.drafts import Prepared
from embedmind.errors import StorageError

logger = logging.getLogger(__name__)

CAPABILITIES = Capabilities(
    name="sqlite",
    secure_delete=True,
    wal_checkpoint=True,
    vector_cache=True,
    file_backed=True,
    vacuum=True,
    multi_process=True,
)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class MemoryVectorCache:
    """The memory vectors' HNSW index bound to its database, as the commit path keeps it current.

    (:class:`~embedmind.backend.protocol.VectorCache`.)
    """

    def __init__(self, index: VectorIndex, database: Database) -> None:
        self._index = index
        self._database = database

    @property
    def loaded(self) -> bool:
        """Whether this process holds the index in memory."""
        return self._index.loaded

    def catch_up(
        self, *, save_after: int, extend: bool = True, register: bool = True
    ) -> Callable[[], object] | None:
        """Extend the index with what committed; save it once ``save_after`` changes are unsaved."""
        return self._index.catch_up(
            self._database, save_after=save_after, extend=extend, register=register
        )

    def add_uncommitted(
        self, vec_keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Extend the graph with a bulk transaction's vectors before it commits."""
        self._index.add_uncommitted(vec_keys, vectors)

    def discard(self) -> None:
        """Drop the in-memory index (the transaction that fed it rolled back)."""
        self._index.discard()

    def stop_feeding(self) -> None:
        """The bulk loads ended and caught up: searches sync and search as usual again."""
        self._index.stop_feeding()


class SqliteBackend:
    """One open SQLite store (:class:`~embedmind.backend.protocol.Backend`)."""

    capabilities = CAPABILITIES

    def __init__(self, database: Database) -> None:
        self.database = database
        self.lexical = LexicalIndex()
        self.vectors: VectorIndex | None = None
        self.fragment_vectors: VectorIndex | None = None
        self.vector_cache: MemoryVectorCache | None = None
        self.parts = Parts(self.lexical, None, None)

    def check_memory(self, prepared: Prepared) -> None:
        """No-op: SQLite stores every memory ``prepare`` accepts (NUL included)."""

    def check_text(self, text: str, field: str) -> None:
        """No-op: SQLite stores any text that is valid UTF-8."""

    def configure_vectors(self, dims: int) -> None:
        """Open the vector caches beside the file for ``dims``-dimensional vectors."""
        self.vectors = VectorIndex(self.database.sibling("-vectors"), dims)
        self.vector_cache = MemoryVectorCache(self.vectors, self.database)
        # Beside the real file (symlinked names resolve to it).
        self.fragment_vectors = VectorIndex(
            self.database.sibling("-fragments"), dims, space=vector_rows.FRAGMENTS
        )
        self.parts.vectors, self.parts.fragment_vectors = self.vectors, self.fragment_vectors
        workers.ready()  # its hybrid recalls search on a worker

    @property
    def path(self) -> str:
        """The file's absolute path, or ``":memory:"``."""
        return self.database.path

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        return self.database.schema_version

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.database.closed

    @contextmanager
    def read(self) -> Iterator[SqliteRead]:
        """Open a read snapshot."""
        with readers.reading(), self.database.read() as conn:
            yield SqliteRead(conn, self.parts)

    @contextmanager
    def write(self) -> Iterator[SqliteWrite]:
        """Open a write transaction.

        Every write of the commit path commits here, so this is where the
        missing-vectors cache learns what each one did: worked out inside the
        transaction (no other writer can move the marks meanwhile), installed
        only once COMMIT returned, so a rollback leaves the cache as it was.
        """
        with self.database.write() as conn:
            watch = self.parts.missing.watch(conn)
            yield SqliteWrite(conn, self.parts, watch)
            watch.settle(conn)
        if watch.committed():
            self._learn_missing_vectors()

    def _learn_missing_vectors(self) -> None:
        """Compute the missing-vectors cache from a fresh snapshot; never raises (it is a cache)."""
        try:
            with self.database.read() as conn:
                self.parts.missing.live_keys(conn)
        except StorageError as e:  # the write committed: the first recall scans instead
            logger.warning("could not list the memories without vectors of %s: %s", self.path, e)

    def checkpoint(self, timeout: float) -> str | None:
        """Fold the WAL into the main file; why not, when it could not."""
        return self.database.checkpoint(timeout)

    def vacuum(self) -> None:
        """Rebuild the file, reclaiming free pages."""
        self.database.vacuum()

    def file_bytes(self) -> int:
        """Bytes of the file and its WAL."""
        return self.database.file_bytes()

    def save_vector_cache(self, *, rebuild: bool = False) -> None:
        """Save the memory-vector index file if it moved on; never raises (it is a cache).

        With ``rebuild`` (vacuum), rebuild it from the stored vectors first and
        always write. A failure (the writer lock busy, the file not written) is
        logged: the next open replays the log or rebuilds.
        """
        if self.vectors is None or (self.vectors.file_path is None and not rebuild):
            return
        try:
            with self.database.write() as conn:
                if rebuild:
                    self.vectors.rebuild(conn)
                self.vectors.save(conn, force=rebuild)
        except (StorageError, OSError) as e:  # the next open rebuilds it
            logger.warning("could not save the vector index of %s: %s", self.path, e)

    def save_fragment_cache(self, *, rebuild: bool = False) -> bool:
        """Save the fragment index file when it lags; whether a file was written.

        Runs in its own write transaction, so a failure cannot undo the memory
        index's save. Nothing is written for a store that never held a fragment,
        nor when the registered file already reflects the log and this process
        did not have to rebuild it (a process that never queried fragments and
        wrote none takes no write lock). With ``rebuild`` (vacuum) it is rebuilt
        from the stored vectors first and always written.

        Raises:
            StorageError: When the file cannot be written or registered; the
                previous file and its registry entry stay as they were.
        """
        index = self.fragment_vectors
        if index is None or index.file_path is None:
            return False
        with self.database.read() as conn:
            if vector_rows.last_seq(conn, vector_rows.FRAGMENTS) == 0:
                return False  # never held a fragment: no file to keep
            if not rebuild and not index.unsaved(conn) and not index.rebuilt_unsaved:
                return False
        with self.database.write() as conn:
            if rebuild:
                index.rebuild(conn)
            return index.save(conn, force=rebuild)

    def remove_cache_files(self) -> None:
        """Delete the vector cache files beside the store (once ``forget_caches`` committed)."""
        if self.database.path == ":memory:":
            return
        for suffix in ("-vectors", "-fragments"):
            sibling = self.database.sibling(suffix)
            if sibling is not None:
                fileio.remove_quietly(sibling)

    def clear_caches(self) -> None:
        """Drop per-process caches of derived text (after a redaction or a vacuum)."""
        self.lexical.clear_cache()

    def close(self) -> None:
        """Release the file, its lock and connections (the caller saved the caches)."""
        self.database.close()


class SqliteFactory:
    """The SQLite :class:`~embedmind.backend.protocol.BackendFactory`: paths, ``":memory:"``."""

    name = "sqlite"
    schemes: tuple[str, ...] = ()

    def claims(self, location: str) -> bool:
        """Every location that is not a URL (``scheme://``) is a file path."""
        return _URL.match(location) is None

    def open(self, options: OpenOptions) -> SqliteBackend:
        """Open (creating if missing) the file at ``options.location``."""
        database = Database(
            normalize_path(options.location),
            synchronous=options.synchronous,  # type: ignore[arg-type]
            busy_timeout=options.busy_timeout,
        )
        return SqliteBackend(database)

    def exists(self, location: str) -> bool:
        """Whether the file is there (``":memory:"`` always is).

        Raises:
            InvalidInputError: When ``location`` is not a usable store path.
        """
        path = normalize_path(location)
        return path == MEMORY_PATH or os.path.exists(path)


FACTORY = SqliteFactory()
"""The factory the built-in plugin registers."""


def is_url(location: str) -> bool:
    """Whether ``location`` names a URL (``scheme://...``) rather than a file."""
    return _URL.match(location) is not None
