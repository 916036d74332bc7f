"""The commit path: every mutation of a store commits here, so what follows a commit happens once.

A mutating method of :class:`embedmind.Store` opens its write transaction with
:meth:`CommitPath.write`, changes rows, and records what it changed as a
:class:`Committed`. When the block ends without an error the commit path runs,
in this order:

Inside the transaction, before COMMIT (they roll back with it):

1. **Eviction** past the :class:`~embedmind.policies.EvictionPolicy` cap, for
   every namespace (and tier) a memory *entered*: ``written`` (remember,
   remember_many, remember_detailed, a supersede, import_jsonl) and ``placed``
   (move, rename_namespace, retier). The evicted ids are recorded as a
   ``Committed("evict", deleted=...)`` and follow the steps below.
2. **The index saves when due**: the backend's fragment cache once
   ``save_after()`` changes are unsaved (``WriteSession.save_caches``) — for
   every commit, since a delete or a move changes the logs as a write does.
   The memory-vector index is saved after COMMIT instead (step 6).

After COMMIT (never on rollback):

3. **Metrics**, one call per memory: ``upsert(op, tier)`` for ``written`` and
   ``redacted``; ``update(op, tier)`` for ``placed`` and ``updated``;
   ``soft_delete()`` for ``forgotten``; ``delete()`` for ``deleted`` (evictions
   included); ``sweep_expired(tier)`` for ``expired``.
4. **Events**, one ``records_committed`` dispatch per transaction:
   :class:`~embedmind.events.MemoryWritten` for ``written``,
   :class:`~embedmind.events.MemoryRedacted` for ``redacted``,
   :class:`~embedmind.events.MemoryUpdated` for ``placed`` and ``updated``,
   :class:`~embedmind.events.MemoryForgotten` for ``forgotten`` and
   :class:`~embedmind.events.MemoryDeleted` for ``deleted`` and ``expired``.
5. **Fragment embedding** (:class:`~embedmind.policies.FragmentPolicy`) for
   memories whose *content* was stored: ``written`` and ``redacted``.
   Fragments derive from content only, so a move, a retier or a confidence
   change derives none (a memory moved into the policy's scope gets its
   fragments at its next content write).
6. **The vector index catches up** with what committed (extended, never
   rebuilt) and, when due, is saved — outside the transaction and the writer
   lock, so a save that takes seconds stalls no other writer or reader
   (:meth:`~embedmind.backend.sqlite.hnsw.VectorIndex.catch_up`). Inside
   :meth:`CommitPath.bulk` (``remember_many``) this runs on a worker thread,
   overlapping the next batch, and the block ends only once the index holds
   every batch; the worker writes a due save's file, and the loading thread
   registers it (a commit from the worker's own connection would make SQLite
   drop every page the loading thread's connection has cached); elsewhere a
   write leaves the catching up to the next search, unless a save is due.
   While a bulk block runs on another thread of the process, a small write
   leaves both to that block's worker, so it never waits for a batch being
   added or a large index being serialised. It is a cache: a failure is
   logged, never raised, since the mutation it follows is committed.

Which field a method fills is the rule: content stored is ``written`` (a
redaction: ``redacted``); a namespace or tier changed is ``placed``; any other
change to a live memory's row (reinforce, restore, mark_contradicted,
set_confidence, the memories a supersede closes) is ``updated``; a tombstone
is ``forgotten``; a row removed at once is ``deleted``, or ``expired`` by the
TTL sweep. Namespace links, relations added by an import and vacuum's removal
of tombstones (already reported as forgotten) change no memory: they commit
here too and record nothing.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from embedmind.backend.protocol import (
    Backend,
    ConcurrentWriteError,
    Records,
    VectorCache,
    WriteSession,
)
from embedmind.chunking import Chunker
from embedmind.embedders.protocol import Embedder
from embedmind.engine.fragments import fragment_on_write
from embedmind.events import (
    MemoryDeleted,
    MemoryForgotten,
    MemoryRedacted,
    MemoryUpdated,
    MemoryWritten,
)
from embedmind.model import Memory
from embedmind.plugins import notify_committed
from embedmind.policies import EvictionPolicy, FragmentPolicy

logger = logging.getLogger(__name__)

T = TypeVar("T")

CATCH_UP_AT = 256
"""Memories a bulk block writes from which the vector index catches up with
each commit even when this process has not loaded it yet."""

SAVE_INDEX_AFTER = 20_000
"""Unsaved vector (or fragment) changes at which a commit also saves the index file (else at close).

A large vector index also waits for a share of itself to be unsaved
(:data:`embedmind.backend.sqlite.hnsw.SAVE_SHARE`).

Read at each commit (:func:`save_index_after`): tests and the power-loss
recorder lower it to exercise saves."""


def save_index_after() -> int:
    """The current :data:`SAVE_INDEX_AFTER`."""
    return SAVE_INDEX_AFTER


RACE_RUNS = 5
"""Times :func:`retrying` runs a write that concurrent writers keep rolling back.

The second run settles a race on a new id (it finds the row the other writer
committed); the others are for writers that deadlock again and again, which
should be rare: PostgreSQL takes its ``deadlock_timeout`` (1 s) to find each."""
RACE_PAUSE = 0.005
"""Seconds (times the runs rolled back, less one) within which the random pause
before a run falls: none before the second, whose race is settled."""


def retrying(write: Callable[[], T]) -> T:
    """Run ``write``, one whole write transaction, again while a concurrent writer rolls it back.

    The backend says so with :class:`~embedmind.backend.protocol.ConcurrentWriteError`:
    nothing of the write was stored, and running it again reads what the other
    writer committed, so an id both inserted is an upsert on the second run (or
    a ConflictError from another namespace). From the third run on, a random
    pause first, so writers that keep deadlocking fall out of step.

    Raises:
        ConcurrentWriteError: A :class:`~embedmind.errors.StoreBusyError`, when
            the last of :data:`RACE_RUNS` runs was rolled back too.
    """
    for run in range(1, RACE_RUNS):
        try:
            return write()
        except ConcurrentWriteError:
            logger.debug("a concurrent writer rolled back run %d of a write", run)
            time.sleep(random.uniform(0, RACE_PAUSE * (run - 1)))
    return write()


@dataclass(frozen=True)
class Changed:
    """A memory changed or removed, named by what events and metrics report of it."""

    id: str
    namespace: str
    tier: str


@dataclass(frozen=True)
class Committed:
    """What one mutation changed inside a transaction (see the module docstring for the rule).

    Attributes:
        op: The operation, passed to the metrics (``"write"``, ``"import"``,
            ``"redact"``, ``"move"``...).
        written: Memories whose content was stored (new, upserted, imported).
        redacted: Memories whose content was replaced by redaction.
        placed: Memories whose namespace or tier changed.
        updated: Live memories changed otherwise in place.
        forgotten: Ids tombstoned.
        deleted: Ids removed at once.
        expired: Memories removed by the TTL sweep.
    """

    op: str
    written: tuple[Memory, ...] = ()
    redacted: tuple[Memory, ...] = ()
    placed: tuple[Changed, ...] = ()
    updated: tuple[Changed, ...] = ()
    forgotten: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    expired: tuple[Changed, ...] = ()


class Transaction:
    """An open write transaction of the commit path: its session and what was recorded."""

    def __init__(self, session: WriteSession, early: _EarlyIndex | None = None) -> None:
        self.session = session
        self.conn: Any = getattr(session, "conn", None)
        """The SQLite session's connection, for the modules that still take one (transitional)."""
        self.records: list[Committed] = []
        self.held_s = 0.0
        """Once committed: how long the transaction held the writer lock, to its commit (s)."""
        self.vectors_written = early
        """Inside a bulk block with the vector index in memory: hand it the vectors
        this transaction stores, to be added while the rest is written (step 6)."""

    def record(self, committed: Committed) -> None:
        """Add what a mutation changed; the commit path acts on it once the block ends."""
        self.records.append(committed)


def changed(records: Records, keys: Sequence[int], *, live: bool = False) -> tuple[Changed, ...]:
    """The :class:`Changed` of rows by key, in key order (damaged rows are named, not refused).

    With ``live``, tombstones are left out: a move or rename carries them along,
    but they were reported when forgotten and are no memory to report again.
    """
    found = records.identities(keys, live=live).values()
    return tuple(Changed(i.id, i.namespace, i.tier) for i in found)


@dataclass(frozen=True)
class Parts:
    """What the commit path acts on: the store's parts and its policies.

    Attributes:
        backend: The store's backend.
        embedder: Its embedder (``None``: text only, no fragments).
        metrics: The metrics observer (any object; missing methods are skipped).
        eviction: The cap-cull policy, if any.
        fragment_policy: The fragment-embed-on-write policy, if any.
        chunker: The policy's resolved chunker.
        listener_store: The store passed to ``records_committed`` listeners.
        save_after: The unsaved vector changes at which a write saves the
            index file, read at each commit (so tests can lower it).
    """

    backend: Backend
    embedder: Embedder | None
    metrics: Any
    eviction: EvictionPolicy | None
    fragment_policy: FragmentPolicy | None
    chunker: Chunker | None
    listener_store: object
    save_after: Callable[[], int]


class CommitPath:
    """The one write pipeline of a store (see the module docstring)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._bulk = threading.local()
        """Per calling thread: its catch-up worker (made at its first :meth:`bulk`
        block and kept, since connections are per thread and a worker per block
        would open one per block), whether a block is open, its pending catch-up."""
        self._bulk_blocks = 0
        """Bulk blocks open in this process, on any thread (see :meth:`_catch_up`)."""
        self._bulk_count_lock = threading.Lock()

    @contextmanager
    def write(self) -> Iterator[Transaction]:
        """Open a write transaction; on success evict, save when due, commit, then follow up.

        Yields:
            The transaction: its ``conn`` and ``record``.
        """
        early = self._early_index()
        try:
            with self._parts.backend.write() as session:
                began = time.perf_counter()
                tx = Transaction(session, early)
                yield tx
                done = self._before_commit(tx)
            tx.held_s = time.perf_counter() - began
        except BaseException:
            if early is not None:
                early.roll_back()
            raise
        self._after_commit(done)
        self._catch_up()

    @contextmanager
    def bulk(self, size: int) -> Iterator[None]:
        """Within the block, the vector index catches up with each commit on a worker thread.

        Args:
            size: How many memories the block is about to write; below
                :data:`CATCH_UP_AT` an index this process has not loaded is
                left for the first search to load.

        usearch releases the GIL while it adds, so extending the graph with
        batch *n* overlaps writing batch *n + 1*. At most one catch-up is in
        flight (the next commit waits for it, outside its transaction); the
        block ends once the index holds every commit, so the first search
        after it has nothing to replay.
        """
        vectors = self._vectors()
        if vectors is None or getattr(self._bulk, "pool", None) is not None:
            yield  # text only, or nested: the outer block catches up
            return
        worker = getattr(self._bulk, "worker", None)
        if worker is None:  # one per calling thread: none waits behind another's catch-up
            worker = self._bulk.worker = ThreadPoolExecutor(1, thread_name_prefix="embedmind-index")
        self._bulk.pool, self._bulk.pending, self._bulk.size = worker, None, size
        with self._bulk_count_lock:
            self._bulk_blocks += 1
        try:
            yield
        finally:
            pending, self._bulk.pool, self._bulk.pending = self._bulk.pending, None, None
            try:
                if pending is not None:
                    _collect(pending)
            finally:
                with self._bulk_count_lock:
                    self._bulk_blocks -= 1
                    if not self._bulk_blocks:  # the last load: its worker is done
                        vectors.stop_feeding()

    def _early_index(self) -> _EarlyIndex | None:
        """Within a bulk block that keeps the index current, its early extension (else ``None``).

        The index need not be in memory yet: the worker first brings it up to
        the committed state (loading it if need be, as the catch-up would),
        then adds the transaction's vectors, so even a one-batch load of a
        fresh store builds its graph while it writes its postings.
        """
        pool = getattr(self._bulk, "pool", None)
        vectors = self._vectors()
        if pool is None or vectors is None:
            return None
        if getattr(self._bulk, "size", 0) < CATCH_UP_AT and (
            not vectors.loaded or self._bulk_blocks > 1
        ):
            # A small block leaves loading to the first search, and a small
            # write beside another thread's bulk load leaves its vector to
            # that load's worker (as :meth:`_catch_up` does): its own early
            # add would first replay the load's last batch under the index
            # lock, and a search waited 1 s for it on a loaded machine.
            return None
        return _EarlyIndex(pool, vectors)

    def _before_commit(self, tx: Transaction) -> list[Committed]:
        done = list(tx.records)
        evicted = self._evict(tx.session, done)
        if evicted:
            done.append(Committed("evict", deleted=evicted))
        # Every commit, since a delete or a move changes the logs as a write does
        # (the fragment index; the vector index saves after COMMIT, step 6).
        tx.session.save_caches(vector_save_after=self._parts.save_after())
        return done

    def _after_commit(self, done: Sequence[Committed]) -> None:
        for committed in done:
            _count(self._parts.metrics, committed)
        notify_committed(self._parts.listener_store, (e for c in done for e in events_of(c)))
        self._derive_fragments([m for c in done for m in (*c.written, *c.redacted)])

    def _vectors(self) -> VectorCache | None:
        """The backend's per-process vector index, if it keeps one (the SQLite backend)."""
        return self._parts.backend.vector_cache

    def _catch_up(self) -> None:
        """Step 6: extend (and, when due, save) the vector index after COMMIT."""
        vectors = self._vectors()
        if vectors is None:
            return
        save_after = self._parts.save_after()
        pool = getattr(self._bulk, "pool", None)
        # A few writes to a store whose index this process never loaded leave
        # the loading to the first search (it may be a million vectors).
        wanted = vectors.loaded or getattr(self._bulk, "size", 0) >= CATCH_UP_AT
        small = pool is None or getattr(self._bulk, "size", 0) < CATCH_UP_AT
        if small and self._bulk_blocks > (pool is not None):
            # A bulk load runs on another thread: its worker extends the index
            # and saves it when due. Doing either here would make this one write
            # wait for that worker's batch (the index lock) or for a large index
            # to be serialised; the next search replays what is left.
            return
        if pool is None or not wanted:
            _quietly(vectors.catch_up, save_after=save_after, extend=False)
            return
        pending = self._bulk.pending
        if pending is not None:
            _collect(pending)  # one in flight: the index never falls far behind
        self._bulk.pending = pool.submit(
            _quietly, vectors.catch_up, save_after=save_after, register=False
        )

    def _evict(self, session: WriteSession, done: Sequence[Committed]) -> tuple[str, ...]:
        """Cap-cull: the oldest memories beyond the cap in each group a memory entered."""
        policy = self._parts.eviction
        if policy is None:
            return ()
        entered = {(m.namespace, m.tier.value) for c in done for m in c.written}
        entered |= {(m.namespace, m.tier) for c in done for m in c.placed}
        groups = {
            (ns, tier if policy.tiers else None) for ns, tier in entered if policy.covers(ns, tier)
        }
        keys = [
            k
            for ns, tier in sorted(groups, key=str)
            for k in session.lifecycle.oldest_beyond(ns, tier, policy.max_records)
        ]
        if not keys:
            return ()
        ids = tuple(c.id for c in changed(session.records, keys))
        session.records.delete(keys)
        return ids

    def _derive_fragments(self, written: Sequence[Memory]) -> None:
        """Fragment-embed-on-write, best effort: failures are logged, never raised."""
        parts = self._parts
        policy, chunker, embedder = parts.fragment_policy, parts.chunker, parts.embedder
        if policy is None or chunker is None or embedder is None:
            return
        for memory in written:
            if policy.applies(memory):
                fragment_on_write(
                    parts.backend, parts.save_after, embedder, chunker, policy, memory
                )


class _EarlyIndex:
    """A bulk transaction's vectors added to the in-memory index on the block's worker.

    Queued on the one worker thread that also runs the catch-ups, so an early
    add runs after the previous batch's catch-up and before this batch's: the
    graph grows while the main thread writes the postings, and the catch-up
    after COMMIT finds these keys present and only moves the index's log
    position on. A transaction that rolls back drops the index (its vec_keys
    will be handed out again), after any add still in flight.
    """

    def __init__(self, pool: ThreadPoolExecutor, vectors: VectorCache) -> None:
        self._pool = pool
        self._vectors = vectors
        self._pending: list[Future[None]] = []

    def __call__(self, vec_keys: Any, rows: Any) -> None:
        self._pending.append(self._pool.submit(self._add, vec_keys, rows))

    def _add(self, vec_keys: Any, rows: Any) -> None:
        # Committed state first (its own read snapshot: the open transaction's
        # rows are invisible to it), then the uncommitted vectors on top. No
        # save here: registering one needs the writer lock this transaction
        # holds; the catch-up after COMMIT saves when due.
        _quietly(self._vectors.catch_up, save_after=sys.maxsize)
        _quietly(self._vectors.add_uncommitted, vec_keys, rows)

    def roll_back(self) -> None:
        if not self._pending:
            return
        for pending in self._pending:
            pending.result()  # never raises: _quietly logs
        self._vectors.discard()


def events_of(committed: Committed) -> list[object]:
    """The ``records_committed`` events of one :class:`Committed`."""
    c = committed
    events: list[object] = [MemoryWritten(m.id, m.namespace, m.tier.value) for m in c.written]
    events += [MemoryRedacted(m.id) for m in c.redacted]
    events += [MemoryUpdated(m.id, m.namespace, m.tier) for m in (*c.placed, *c.updated)]
    events += [MemoryForgotten(i) for i in c.forgotten]
    events += [MemoryDeleted(i) for i in (*c.deleted, *(m.id for m in c.expired))]
    return events


def _count(metrics: Any, c: Committed) -> None:
    if metrics is None:  # counted per memory: skipped whole without an observer
        return
    for memory in (*c.written, *c.redacted):
        emit(metrics, "upsert", c.op, memory.tier.value)
    for change in (*c.placed, *c.updated):
        emit(metrics, "update", c.op, change.tier)
    for _ in c.forgotten:
        emit(metrics, "soft_delete")
    for _ in c.deleted:
        emit(metrics, "delete")
    for change in c.expired:
        emit(metrics, "sweep_expired", change.tier)


def _quietly(catch_up: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Run a catch-up of a derived index; log, never raise (the write it follows committed)."""
    try:
        return catch_up(*args, **kwargs)
    except Exception:
        logger.warning("the vector index did not catch up (the next search will)", exc_info=True)
        return None


def _collect(pending: Future[Callable[[], object] | None]) -> None:
    """Wait for a worker's catch-up, then register here the index file it saved, if any.

    The worker never writes the store (why: step 6 in this module's docstring).
    """
    register = pending.result()  # never raises: _quietly logs
    if register is not None:
        _quietly(register)


def emit(metrics: Any, event: str, *args: Any) -> None:
    """Call the metrics observer's ``event`` method if it has one."""
    hook = getattr(metrics, event, None)
    if callable(hook):
        hook(*args)
