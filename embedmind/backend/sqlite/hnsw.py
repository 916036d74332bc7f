"""The HNSW index: a per-process usearch cache of the vectors stored in SQLite.

The index is never trusted on its own word. Each process keeps an in-memory
usearch index plus the change-log sequence it reflects, and before every
search replays the log tail (so a write in another process is found on the
next call). On first use it loads the index file only if the file's size and
checksum match the registry in SQLite — read whole into memory and verified
before usearch sees a byte, since a corrupt file can crash the loader — and
otherwise rebuilds from the durable vectors. Saves go to a temporary file that
is fsynced and renamed into place before the registry is updated, and never
touch a memory-mapped index (usearch's ``view`` is not used at all).

Writes catch the index up *after* they commit (:meth:`VectorIndex.catch_up`,
called by the commit path, on a worker thread during ``remember_many``): the
graph is extended with the committed vectors, never rebuilt, and the periodic
save (:meth:`VectorIndex.save_snapshot`) serialises the index outside the
writer lock, writes the file, and only then registers it in a short write
transaction of its own (on a bulk load's worker, the loading thread registers
it). The SQLite rows are the truth; a save that is lost
(a crash, a race with another process's save) leaves an unregistered or
mismatched file, which the next open rebuilds or replays from the log.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite import fileio, vector_rows
from embedmind.backend.sqlite.vector_owners import OwnerMap
from embedmind.errors import StorageError

if TYPE_CHECKING:
    from usearch.index import Index

    from embedmind.backend.sqlite.database import Database

logger = logging.getLogger(__name__)


def _usearch_index() -> Any:
    """Import usearch, onnxruntime first, as a vector store opens (not at ``import embedmind``).

    Measured here: importing onnxruntime 1.32 *after* usearch 2.26.6 crashes the
    interpreter (SIGSEGV in onnxruntime's module init); the other order is fine.

    ``numpy.ma`` too: numpy 2.4's ``np.unique`` and ``np.isin`` import it at
    their first call, and the vector search calls both. :class:`VectorIndex`
    imports them all when it is made, as the store opens, where nothing
    contends: imported by the first search instead (65-93 ms alone), they
    took 422 ms of a reader's first recall beside a bulk load, whose
    validation holds the GIL for seconds and makes each of an import's many
    file reads wait a switch interval to take it back (that reader's worst
    stall was 0.9-1.3 s in ``embedmind bench ingest``'s contention workload at
    100k, run by a script that timed each call).
    """
    importlib.import_module("numpy.ma")
    with suppress(ImportError):
        importlib.import_module("onnxruntime")
    return importlib.import_module("usearch.index").Index


CONNECTIVITY = 16
EXPANSION_ADD = 128
_REBUILD_PAGE = 50_000
ADD_CHUNK = 128
"""The most vectors a bulk load adds per hold of the index lock while searches run
(:meth:`VectorIndex.add_uncommitted`): a search waits for one chunk, not a whole batch."""
ADD_HOLD_SECONDS = 0.01
"""How long one such chunk should hold the lock (fewer vectors when adding is slow:
a fixed 128 held it 570 ms at p99 on a loaded 2-core machine).

A search waits for the chunk under way. Beside a 100k load with a reader and a
writer every 50 ms (``ingest_contention``, five rounds alternated), 10 ms took the
reader's median from 16.9-20.5 to 13.0-14.3 ms and its p99 from 51.5-67.4 to
47.9-56.4 ms against 20 ms; the load ran at 1,953-2,337 docs/s against
1,969-2,556. Without searches a load adds each batch in one piece."""
ADD_PAUSE = 0.0005
YIELD_MAX_SECONDS = 0.05
"""How long a bulk add waits, between two chunks, for the searches queued on the lock."""
SEARCHES_RECENT_SECONDS = 2.0
"""A search this recent makes a bulk add go in chunks of :data:`ADD_CHUNK`."""
ADD_THREADS = max(16, 2 * (os.cpu_count() or 1))
"""Threads of one usearch ``add``: more than the cores, so the first thread's share is small.

usearch gives each thread a fixed share of the batch, and its first thread takes
the GIL back after every vector it adds (to check for signals). Beside a thread
running Python (a bulk load writes its postings while its graph grows) each of
those takes can wait a switch interval, so that thread's share decides the
add's length: 10,000 vectors took 41 s with 2 threads and 12 s with 16 beside a
busy Python thread on 2 cores (9 s alone). Alone, 16 threads build about as fast
as one per core (100,000 vectors: 42.8 s against 40.8 in one run, 44-45 s against
49-53 in another), and inside a bulk load the two measured the same."""
SAVE_SHARE = 2
"""From :data:`SAVE_SHARE_FROM` vectors, a periodic save is due only once the
unsaved changes are also at least 1/SAVE_SHARE of the index: each save
serialises the whole index, so a fixed step would make a million-vector load
write it fifty times; growing with the index keeps the saves' total a small
multiple of one save, and a crash replays at most about the half of the index
its last save did not hold."""
SAVE_SHARE_FROM = 40_000
"""The index size below which ``save_after`` alone decides (such a save takes under a second)."""
SAVE_RETRY_SECONDS = 30.0
"""After a failed index save, how long saves are skipped: on a full disk every
write past the periodic threshold would otherwise retry and reload the index."""
EXACT_BELOW = 20_000
"""Indexes this small are searched by brute force (usearch's exact SIMD scan).

Measured here (384 dims, f16, one query): exact 0.36 ms at 5k and 1.3 ms at 20k
against 0.4 / 0.8 ms for the graph — a small price for recall 1.0, and immune
to HNSW's trouble with many near-identical vectors (chat memory is full of them)."""


FED_RECENT_SECONDS = 5.0
"""A bulk load fed the index this recently (:meth:`VectorIndex.add_uncommitted`) and has
not returned (:meth:`VectorIndex.stop_feeding`): a search leaves the vectors it has yet
to add to it (:meth:`VectorIndex.sync_for_search`)."""
Tail = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]
"""``(vec_keys, unit rows)`` committed but not in the graph yet, for a search to scan exactly."""
NO_TAIL: Tail = (np.empty(0, np.int64), np.empty((0, 0), np.float32))


def default_ef(size: int) -> int:
    """Search breadth that keeps recall@10 near 0.99 as the index grows.

    Measured on clustered 64-dim data at 20k vectors (f16, M = 16): recall@10
    0.87 at ef 64, 0.96 at 128, 0.99 at 256; larger graphs need more.
    """
    if size < 500_000:
        return 256
    return 384


@dataclass(frozen=True)
class _Snapshot:
    """An index file written and fsynced, and not yet registered."""

    file: vector_rows.IndexFile
    """Its registry entry: the log sequence it holds, its checksum and size."""
    index: Index
    """The in-memory index it was serialised from."""


class VectorIndex:
    """One store's HNSW index in this process."""

    def __init__(
        self,
        file_path: str | None,
        dims: int,
        dtype: str = "f16",
        space: vector_rows.Space = vector_rows.MEMORY,
    ) -> None:
        _usearch_index()  # now, not in the first search (see there)
        self.file_path = file_path
        self.space = space
        self.dims = dims
        self.dtype = dtype
        self._index: Index | None = None
        self._applied = 0
        self._from_file = False
        """Whether this index was loaded from the registered file or saved as it.

        A rebuild leaves it false, so the next ``save`` writes even when the
        registry already names the sequence this index holds: power lost between a
        forced save's rename and its commit (vacuum) leaves a file that does not
        match a registry at the current sequence, and skipping the save would
        rebuild at every open until the next vector write (found by R3,
        tests/reliability/test_power_loss.py)."""
        self._lock = threading.RLock()
        self._save_lock = threading.Lock()
        self._early_key = 0
        """The largest vec_key :meth:`add_uncommitted` put in the index (no save holds more
        than the snapshot it is taken from has committed)."""
        self._waiting = 0
        """Searches waiting for ``_lock`` (:meth:`held`): a bulk add lets them in first."""
        self._add_seconds = 0.0
        """Seconds per vector of the last chunk :meth:`add_uncommitted` added (0: none yet)."""
        self._fed_at = -FED_RECENT_SECONDS
        """When :meth:`add_uncommitted` last ran (see :meth:`sync_for_search`)."""
        self._searched_at = -SEARCHES_RECENT_SECONDS
        """When this process last searched the index (bulk adds go in chunks while searches run)."""
        self._waiting_lock = threading.Lock()
        """Serialises this process's out-of-transaction saves (one file, one writer)."""
        self._retry_at = 0.0
        """Monotonic time before which a save is not attempted again (after one failed)."""
        self.rebuilt = 0
        """How many times this process rebuilt the index from SQLite (diagnostics)."""
        self.owners = OwnerMap()
        """vec_key -> memory key, taught wherever vectors enter the graph (search side)."""
        self._provisional: vector_rows.IndexFile | None = None
        """The registry entry :meth:`save` wrote inside a transaction not yet known committed.

        ``save`` runs inside the caller's write transaction, so its ``sync``
        puts that transaction's own, uncommitted vectors into this index. If the
        transaction rolls back (a failed save or commit, Ctrl-C), SQLite hands
        the same log sequences and vec_keys out again to other vectors, and the
        index would keep the rolled-back vectors under the reused keys (found by
        tests/reliability/test_reconcile.py). The next sync compares the
        registry with this entry and discards the index when they differ."""

    def _new(self) -> Index:
        index: Index = _usearch_index()(
            ndim=self.dims,
            metric="cos",
            dtype=self.dtype,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        return index

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def sync(self, conn: apsw.Connection) -> None:
        """Bring the in-memory index up to the committed state ``conn`` sees."""
        with self.held():
            self._drop_if_rolled_back(conn)
            last = vector_rows.last_seq(conn, self.space)
            if self._index is None:
                self._open(conn)
                return
            if last == self._applied:
                return
            first = vector_rows.first_seq(conn, self.space)
            if first is None or first > self._applied + 1:
                self._open(conn)  # the log was trimmed past what we applied
                return
            self._replay(conn, self._applied)

    def sync_for_search(self, conn: apsw.Connection) -> Tail:
        """Like :meth:`sync`, but while a bulk load feeds the index, return what it has yet to add.

        A batch may commit before the load's worker has added all its vectors;
        :meth:`sync` would add the rest itself under the index lock (a reader
        waited 1.2 s so on a loaded machine). Instead they are read from SQLite
        for the search to score exactly beside the graph's hits, and the worker
        goes on adding them. Outside a bulk load, or after removals: :meth:`sync`.

        Returns:
            The vectors the snapshot sees that the graph does not hold (often none).
        """
        if not self.feeding:
            self.sync(conn)
            return NO_TAIL
        with self.held():
            self._drop_if_rolled_back(conn)
            index = self._index
            last = vector_rows.last_seq(conn, self.space)
            first = vector_rows.first_seq(conn, self.space)
            if index is None or last == self._applied or first is None or first > self._applied + 1:
                self.sync(conn)
                return NO_TAIL
            final, _ = self._changes(conn, self._applied)
            if not all(final.values()):  # removals: the plain replay handles them
                self.sync(conn)
                return NO_TAIL
            wanted = np.fromiter(final, np.int64, len(final))
            wanted = wanted[~np.asarray(index.contains(wanted.astype(np.uint64)), dtype=bool)]
            if not len(wanted):
                self.sync(conn)  # all in already: it only learns owners and moves on
                return NO_TAIL
        vec_keys, _, vectors = vector_rows.load(conn, wanted.tolist(), self.dims, self.space)
        return vec_keys, vectors

    def _drop_if_rolled_back(self, conn: apsw.Connection) -> None:
        """Discard the index when the transaction of the last in-transaction save rolled back."""
        if self._provisional is None:
            return
        if vector_rows.index_file(conn, self.space.index_name) != self._provisional:
            # Rolled back (or replaced since by another process's save: a
            # needless but harmless reload). Reload from the committed state.
            self._index, self._provisional = None, None
        elif conn.txn_state("main") != apsw.SQLITE_TXN_WRITE:
            # Seen from outside any write transaction: that save committed. (In
            # a write transaction it may be the very one that saved: keep checking.)
            self._provisional = None

    def _open(self, conn: apsw.Connection) -> None:
        entry = vector_rows.index_file(conn, self.space.index_name)
        if self.file_path is not None and entry is not None:
            data = fileio.read_verified(self.file_path, entry.size, entry.checksum)
            if data is not None:
                index = self._restore(data)
                if index is not None:
                    self._index, self._applied = index, entry.seq
                    self._from_file = True
                    self.owners.learn_all(conn, self.space)
                    self._replay(conn, entry.seq)
                    return
            logger.warning("index file %s is missing, stale or corrupt: rebuilding", self.file_path)
        self._rebuild(conn)

    def _restore(self, data: bytes) -> Index | None:
        try:
            index: Index | None = _usearch_index().restore(data)
        except Exception:  # any failure means "do not trust it"
            return None
        if index is None or index.ndim != self.dims or "cos" not in str(index.metric).lower():
            return None
        index.expansion_add = EXPANSION_ADD  # type: ignore[misc]  # restore() drops it
        return index

    def rebuild(self, conn: apsw.Connection) -> None:
        """Rebuild the in-memory index from the stored vectors (drops removal tombstones)."""
        with self._lock:
            self._rebuild(conn)

    def _rebuild(self, conn: apsw.Connection) -> None:
        index = self._new()
        applied = vector_rows.last_seq(conn, self.space)
        after = 0
        while True:
            vec_keys, keys, vectors = vector_rows.load_all(
                conn, self.dims, after, _REBUILD_PAGE, self.space
            )
            if not len(vec_keys):
                break
            _add(index, vec_keys, vectors)
            self.owners.learn(conn, vec_keys, keys)
            after = int(vec_keys[-1])
        self._index, self._applied = index, applied
        self._from_file = False
        self.rebuilt += 1

    def _replay(self, conn: apsw.Connection, since: int) -> None:
        assert self._index is not None  # callers load the index first
        final, last = self._changes(conn, since)
        removed = [k for k, added in final.items() if not added and k in self._index]
        for key in removed:
            self._index.remove(key)
        adds = np.asarray([k for k, added in final.items() if added], np.int64)
        present = np.asarray(self._index.contains(adds.astype(np.uint64)), dtype=bool)
        early, wanted = adds[present], adds[~present].tolist()  # one call, not one per key
        if len(early):  # a bulk load added them before COMMIT (add_uncommitted): learn owners
            self.owners.owners(conn, early, self.space)
        if wanted:
            vec_keys, keys, vectors = vector_rows.load(conn, wanted, self.dims, self.space)
            if len(vec_keys):
                _add(self._index, vec_keys, vectors)
                self.owners.learn(conn, vec_keys, keys)
        self._applied = max(last, vector_rows.last_seq(conn, self.space))

    def _changes(self, conn: apsw.Connection, since: int) -> tuple[dict[int, int], int]:
        """Each vec_key's last change after ``since`` (1: added, 0: removed), and the last seq."""
        final: dict[int, int] = {}
        last = since
        for seq, vec_key, added in vector_rows.changes_since(conn, since, self.space):
            final[vec_key] = added
            last = seq
        return final, last

    def search(
        self, query: npt.NDArray[np.float32], count: int, ef: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The ``count`` nearest vectors: ``(vec_keys, cosine similarities)`` best first."""
        self._searched_at = time.monotonic()
        with self.held():
            if self._index is None or not len(self._index):
                return np.empty(0, np.int64), np.empty(0, np.float32)
            self._index.expansion_search = max(ef, count)  # type: ignore[misc]
            # A small index is scanned exactly: as fast as the graph there, and
            # immune to HNSW's trouble with many near-identical vectors.
            exact = len(self._index) <= EXACT_BELOW
            matches = self._index.search(query, min(count, len(self._index)), exact=exact)
        keys = np.asarray(matches.keys, dtype=np.int64)
        sims = (1.0 - np.asarray(matches.distances, dtype=np.float32)).astype(np.float32)
        return keys, sims

    def vectors(self, vec_keys: npt.NDArray[np.int64]) -> list[npt.NDArray[Any] | None]:
        """The graph's copies of ``vec_keys`` (its dtype); ``None`` for one it does not hold."""
        with self.held():  # usearch converts 20x slower than numpy: asked in its own dtype
            if self._index is None or not len(vec_keys):
                return [None] * len(vec_keys)
            return list(cast(Any, self._index.get(np.asarray(vec_keys, np.uint64))))

    def save(self, conn: apsw.Connection, force: bool = False) -> bool:
        """Write the index file and register it; the caller holds a write transaction.

        A file that cannot be written (a full disk, a directory in its place) is
        logged and leaves everything as if no save had been asked for: the
        registry and the log are untouched and no temporary file remains.

        Returns:
            Whether a file was written (never for an in-memory store).
        """
        if self.file_path is None:
            return False
        if time.monotonic() < self._retry_at:
            # A save failed moments ago: skip it before the sync below would load
            # this transaction's uncommitted vectors with nothing to drop them on
            # a rollback (and do not pay the reload again per write).
            return False
        with self._lock:
            try:
                self.sync(conn)
                index = self._index
                if index is None:
                    return False
                entry = vector_rows.index_file(conn, self.space.index_name)
                current = entry is not None and entry.seq == self._applied
                if current and self._from_file and not force:
                    return False
                saved = self._write_file(index)
                if saved is None:
                    return False
                size, checksum = saved
                written = vector_rows.IndexFile(self._applied, checksum, size)
                vector_rows.record_index_file(conn, self.space.index_name, written)
                vector_rows.trim_log(conn, self._applied, self.space)
            except BaseException:
                # The caller's transaction rolls back, taking with it the
                # vectors this sync applied: drop the index, the next sync reloads.
                self._index, self._provisional = None, None
                raise
            self._provisional = written  # checked by the next sync (see __init__)
            self._from_file = True
            return True

    def _write_file(self, index: Index) -> tuple[int, str] | None:
        """Write the index file; ``None`` (logged) when it could not be written.

        The file is a cache of what SQLite holds, so a failed save (a full disk,
        a directory in its place) means only "not saved": the caller's
        transaction goes on and commits, the log is not trimmed, and the next
        process replays or rebuilds. Every caller (close, vacuum, redaction, the
        periodic save inside writes) inherits this, so a committed mutation
        never reports a failure of its derived index afterwards.
        """
        assert self.file_path is not None  # checked by save
        try:
            return fileio.write_atomically(self.file_path, lambda temp: _save(index, temp))
        except StorageError as e:
            logger.warning("index not saved (rebuilt or replayed at the next open): %s", e)
            # This index may hold the caller's uncommitted vectors, and with no
            # registry entry written there is no way to tell later whether they
            # committed: drop it, the next sync reloads from the committed state.
            self._index, self._provisional = None, None
            self._retry_at = time.monotonic() + SAVE_RETRY_SECONDS
            return None

    def add_uncommitted(
        self, vec_keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Extend the graph with vectors a write transaction holds, before it commits.

        A bulk load calls it on its worker thread while the rest of the
        transaction (rows, postings) is written, so building the graph
        overlaps writing instead of following it. It is safe before COMMIT:
        a search admits only vectors whose rows its snapshot sees, the replay
        after COMMIT skips keys already present (vec_keys are never reused
        once committed), and a transaction that rolls back must call
        :meth:`discard`, since SQLite hands its vec_keys out again.
        Only an index already in memory is extended (loading one is the
        replay's job). A bulk load's catch-up adds committed vectors the same
        way (:meth:`catch_up`).
        """
        keys = np.asarray(vec_keys, dtype=np.uint64)
        # In chunks only while searches run: one call of usearch's parallel add
        # is faster (measured: 6,000 vectors of 384 dims, about 10 % faster than
        # chunks of 128 or 1,024), but holds the lock for the whole batch.
        self._fed_at = time.monotonic()
        start = 0
        while start < len(keys):
            if start:
                self._let_waiters_in()
            searched = time.monotonic() - self._searched_at < SEARCHES_RECENT_SECONDS
            chunk = slice(start, start + self._chunk_size() if searched else len(keys))
            with self._lock:
                index = self._index
                if index is None:
                    return
                fresh = ~np.asarray(index.contains(keys[chunk]), dtype=bool)
                if fresh.any():
                    self._early_key = max(self._early_key, int(keys[chunk][fresh].max()))
                    began = time.perf_counter()
                    _add(index, keys[chunk][fresh], vectors[chunk][fresh])
                    self._add_seconds = (time.perf_counter() - began) / int(fresh.sum())
            start = chunk.stop
            self._fed_at = time.monotonic()

    def _chunk_size(self) -> int:
        """Vectors per lock hold while searches run: about :data:`ADD_HOLD_SECONDS` of adding."""
        if self._add_seconds <= 0:
            return ADD_CHUNK
        return max(1, min(ADD_CHUNK, int(ADD_HOLD_SECONDS / self._add_seconds)))

    @property
    def feeding(self) -> bool:
        """Whether a bulk load fed the graph within :data:`FED_RECENT_SECONDS` and goes on.

        Its adds then hold the index lock in chunks, and each time a search
        asks for the lock it may wait out a chunk.
        """
        return time.monotonic() - self._fed_at < FED_RECENT_SECONDS

    def stop_feeding(self) -> None:
        """End :attr:`feeding`: the bulk loads are over and their workers caught up."""
        self._fed_at = -FED_RECENT_SECONDS

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the index lock as a search does: counted while waiting, so a bulk add yields.

        Re-entrant: a search beside a bulk load syncs and searches in one hold,
        since asking twice waited out the load's chunks twice
        (:func:`~embedmind.backend.sqlite.vector_search.begin_nearest`).
        """
        with self._waiting_lock:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._waiting_lock:
                self._waiting -= 1
        try:
            yield
        finally:
            self._lock.release()

    def _let_waiters_in(self) -> None:
        """Between two chunks of a bulk add: wait (briefly) until no search waits for the lock.

        A lock released and taken straight back is rarely won by a woken
        waiter (least of all on a loaded machine), so a bulk add would keep
        searches waiting for its whole batch.
        """
        deadline = time.monotonic() + YIELD_MAX_SECONDS
        time.sleep(0)
        while self._waiting and time.monotonic() < deadline:
            time.sleep(ADD_PAUSE)

    def discard(self) -> None:
        """Drop the in-memory index (a transaction that fed :meth:`add_uncommitted` rolled back).

        The next search reloads it from the registered file and the log.
        """
        with self._lock:
            self._index, self._provisional, self._early_key = None, None, 0

    @property
    def loaded(self) -> bool:
        """Whether this process holds the index in memory (loaded or built)."""
        return self._index is not None

    def catch_up(
        self, db: Database, *, save_after: int, extend: bool = True, register: bool = True
    ) -> Callable[[], object] | None:
        """Extend the in-memory index with what has committed; save it once enough is unsaved.

        Called after a write committed, outside its transaction and the writer
        lock: the graph gains the new vectors (usearch adds on every core), so
        the next search finds nothing to replay.

        Args:
            db: The store's database (a read transaction, then a short write one
                to register a saved file).
            save_after: Unsaved log entries at which the file is saved
                (:meth:`save_snapshot`).
            extend: Bring the in-memory index up to date even when no save is
                due (``False``: leave that to the next search).
            register: Register a saved file here. ``False`` leaves that to the
                returned call, so a worker thread never writes the store: a
                commit from another connection makes SQLite drop every page the
                writing thread's connection has cached, while a commit of its
                own keeps them.

        Returns:
            With ``register=False``, the registration of a file just saved
            (``None`` when none was): call it on the thread that writes.
        """
        with db.read() as conn:
            if extend:
                # While a bulk load feeds the index, what committed without
                # being added early (a worker behind by a batch meets that
                # batch committed) goes in chunks that let searches in: the
                # replay adds it in one piece under the index lock (searches
                # waited 60-175 ms for 256 vectors beside a 100k load).
                missing, rows = self.sync_for_search(conn)
                if len(missing):
                    self.add_uncommitted(missing, rows)
                self.sync(conn)
            due = self.file_path is not None and self._save_due(conn, save_after)
        snapshot = self.write_snapshot(db) if due else None
        if snapshot is None:
            return None
        registration = functools.partial(self.register_snapshot, db, snapshot)
        if not register:
            return registration
        registration()
        return None

    def save_snapshot(self, db: Database) -> bool:
        """Save the committed index outside any write transaction, then register it.

        Returns:
            Whether a file was written and registered.
        """
        snapshot = self.write_snapshot(db)
        return snapshot is not None and self.register_snapshot(db, snapshot)

    def write_snapshot(self, db: Database) -> _Snapshot | None:
        """Write the committed index to its file, not yet registered.

        The index is serialised to memory under this object's lock (searches
        wait that long, never for the disk), and the file is written and
        fsynced with no lock held. A save that fails leaves the registry as it
        was.

        Returns:
            What :meth:`register_snapshot` records, or ``None`` when no file was
            written (nothing new to save, a failure, another thread saving
            right now).
        """
        if self.file_path is None or time.monotonic() < self._retry_at:
            return None
        if not self._save_lock.acquire(blocking=False):
            return None  # another thread of this process is saving it right now
        try:
            with db.read() as conn, self._lock:
                self.sync(conn)
                index, applied = self._index, self._applied
                if index is None:
                    return None
                if self._early_key > vector_rows.last_key(conn, self.space):
                    # It holds a bulk transaction's vectors not committed yet (a
                    # bulk load on another thread): a file of them would outlive
                    # a rollback, whose vec_keys are handed out again.
                    return None
                entry = vector_rows.index_file(conn, self.space.index_name)
                if entry is not None and entry.seq >= applied and self._from_file:
                    return None
                data = self._serialise(index)
            saved = self._write_bytes(data)
            if saved is None:
                return None
            size, checksum = saved
            return _Snapshot(vector_rows.IndexFile(applied, checksum, size), index)
        finally:
            self._save_lock.release()

    def register_snapshot(self, db: Database, snapshot: _Snapshot) -> bool:
        """Record a written file in the registry and trim the log it covers.

        In a write transaction of its own that only touches two small tables.
        A file another save has replaced since is registered all the same: its
        checksum no longer matches, so the next open rebuilds (never trusts it).

        Returns:
            Whether it was registered (not when another process registered a
            newer save meanwhile).
        """
        with db.write() as conn:
            entry = vector_rows.index_file(conn, self.space.index_name)
            if entry is not None and entry.seq > snapshot.file.seq:
                return False  # another process registered a newer save meanwhile
            vector_rows.record_index_file(conn, self.space.index_name, snapshot.file)
            vector_rows.trim_log(conn, snapshot.file.seq, self.space)
        with self._lock:
            if self._index is snapshot.index:
                self._from_file = True
        return True

    def _serialise(self, index: Index) -> bytearray:
        data = index.save()
        assert data is not None  # save() without a path returns the bytes
        return cast(bytearray, data)  # a fresh buffer of its own: written as it is, not copied

    def _write_bytes(self, data: bytearray) -> tuple[int, str] | None:
        """Write serialised bytes as the index file; ``None`` (logged) when it failed."""
        assert self.file_path is not None  # checked by save_snapshot

        def write(temp: str) -> None:
            with open(temp, "wb") as handle:
                handle.write(data)

        try:
            return fileio.write_atomically(self.file_path, write)
        except StorageError as e:
            # Only committed vectors are in this index: it stays, unlike after
            # a failed in-transaction save (see _write_file).
            logger.warning("index not saved (rebuilt or replayed at the next open): %s", e)
            self._retry_at = time.monotonic() + SAVE_RETRY_SECONDS
            return None

    def _save_due(self, conn: apsw.Connection, save_after: int) -> bool:
        """Whether enough is unsaved for a periodic save (see :data:`SAVE_SHARE`)."""
        held = 0 if self._index is None else len(self._index)
        step = save_after if held < SAVE_SHARE_FROM else max(save_after, held // SAVE_SHARE)
        return self.unsaved(conn) >= step

    def unsaved(self, conn: apsw.Connection) -> int:
        """How many log entries the registered file does not reflect yet."""
        entry = vector_rows.index_file(conn, self.space.index_name)
        return vector_rows.last_seq(conn, self.space) - (0 if entry is None else entry.seq)

    @property
    def rebuilt_unsaved(self) -> bool:
        """Whether this process rebuilt the index and has not saved it since.

        The registered file was then missing, damaged or never written: an
        owner that saves only when :meth:`unsaved` is non-zero must also save
        in this case, or every later process rebuilds again.
        """
        return self._index is not None and not self._from_file


def _add(index: Index, vec_keys: npt.NDArray[Any], vectors: npt.NDArray[np.float32]) -> None:
    """Add vectors to the graph on :data:`ADD_THREADS` threads, one per vector for a small batch.

    A small add too is spread as wide as it goes: the share of usearch's
    first thread costs a GIL round trip per vector, which beside busy Python
    threads is a switch interval each, and a search waits for the add (the
    index lock). Beside two spinning threads, 10 vectors took 199 ms on one
    thread and 26 ms on 16 (40: 766 against 66 ms); alone, 16 threads were no
    slower at 1, 10, 40 or 128 vectors. In ``embedmind bench ingest``'s
    contention workload at 100k (run by a script that timed each call, two
    runs of each rule) this took the reader's p99 from 119-132 to 75-77
    ms, and the second writer's from 113-121 to 169-209 ms: more threads
    take more of the cores from the bulk load's transaction, which that
    writer waits for.
    """
    threads = max(1, min(ADD_THREADS, len(vec_keys)))
    index.add(np.asarray(vec_keys, dtype=np.uint64), vectors, threads=threads)


def _save(index: Index, path: str) -> None:
    index.save(path)
