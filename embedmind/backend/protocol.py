"""What a storage backend provides: read and write sessions over one store, and capabilities.

The engine (:mod:`embedmind.engine`) runs every operation inside a session a
backend opens: :meth:`Backend.read` for a consistent snapshot,
:meth:`Backend.write` for one atomic transaction (its changes commit together
when the block ends without an error, and roll back otherwise). A session is
split into facets, each a small protocol:

========================  ==============================================================
``records``               memory rows by id or key, pages, counts (:class:`Records`)
``channels``              the recall channels: ``text_top``, ``vector_top``, cosines
``graph``                 entities, relations, supersession (:class:`Graph`)
``fragments``             located sub-document vectors (:class:`Fragments`)
``lifecycle``             TTL, tiers, namespaces and their links (:class:`Lifecycle`)
``meta``                  bookkeeping values and the embedder identity (:class:`Meta`)
``sessions``              dialog neighbours and the session-context switch (:class:`Sessions`)
========================  ==============================================================

A write session's facets add the mutating methods (``RecordWrites`` and so
on). Filters and scopes arrive as values (:class:`embedmind.query.Selection`);
only a backend turns them into its own query language. Rows are named by an
integer **key** the backend assigns (stable for a row's life, never reused
while the store is open); ids are the caller's names.

A write session's ``records.find`` and ``records.find_many`` hold the rows
they return until the transaction ends (:class:`RecordWrites`), so a check
made on them (superseded already? in which namespace? which content to
unindex?) still holds when the write that follows it lands. A transaction
that a concurrent writer made fail, and only that, raises
:class:`ConcurrentWriteError`: nothing of it is stored, and the engine runs
the whole write again (:func:`embedmind.engine.commit.retrying`).

A backend registers through the ``register_backends`` hook (the built-in
SQLite one exactly as a third-party one would); :meth:`embedmind.Store.open`
picks it from the path or URL (:func:`embedmind.plugins.backend_for`). What it
can do beyond the protocol is declared in :class:`Capabilities`, never sniffed.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
import numpy.typing as npt

from embedmind.backend.facets import (
    Aliases,
    AliasWrites,
    Channels,
    Fragments,
    FragmentWrites,
    Graph,
    GraphWrites,
    Lifecycle,
    LifecycleWrites,
    Meta,
    MetaWrites,
    Records,
    RecordWrites,
    Sessions,
    SessionWrites,
)
from embedmind.backend.values import (
    Capabilities,
    Edge,
    Identity,
    Link,
    OpenOptions,
    RowRef,
    Space,
    VectorHit,
)
from embedmind.drafts import Prepared
from embedmind.errors import StorageError, StoreBusyError

__all__ = [
    "AliasWrites",
    "Aliases",
    "Backend",
    "BackendFactory",
    "Capabilities",
    "Channels",
    "ConcurrentWriteError",
    "Edge",
    "FragmentWrites",
    "Fragments",
    "Graph",
    "GraphWrites",
    "Identity",
    "Lifecycle",
    "LifecycleWrites",
    "Link",
    "Meta",
    "MetaWrites",
    "OpenOptions",
    "ReadSession",
    "RecordWrites",
    "Records",
    "RowRef",
    "SessionWrites",
    "Sessions",
    "Space",
    "VectorCache",
    "VectorHit",
    "WriteSession",
]


class ConcurrentWriteError(StoreBusyError):
    """A write transaction rolled back only because a concurrent writer got there first.

    A backend raises it when its concurrency control, not the input, ended the
    transaction: two writers inserting one new id at once (the second meets the
    first's row as that one commits), or two writers each waiting for a row the
    other holds (a deadlock). Nothing of the transaction is stored, and the same
    write run again reads what the other writer committed (the id is then an
    upsert, or a :class:`~embedmind.errors.ConflictError` from another
    namespace), so the engine runs it again; a caller meets it only once
    those runs are used up, as the :class:`~embedmind.errors.StoreBusyError` it is.

    Attributes:
        path: The store.
        waited: Always 0: the transaction did not time out.
    """

    def __init__(self, path: str, reason: str) -> None:
        # StoreBusyError's own message speaks of a lock held too long: not the case here.
        StorageError.__init__(
            self,
            f"store {path!r} is busy: {reason}, and this write was rolled back (nothing of "
            "it is stored); retry it",
        )
        self.path = path
        self.waited = 0.0


class ReadSession(Protocol):
    """A consistent snapshot of one store."""

    @property
    def records(self) -> Records:
        """Memory rows."""
        ...

    @property
    def channels(self) -> Channels:
        """Recall channels."""
        ...

    @property
    def graph(self) -> Graph:
        """Entities and relations."""
        ...

    @property
    def fragments(self) -> Fragments:
        """Fragment rows."""
        ...

    @property
    def lifecycle(self) -> Lifecycle:
        """TTL, tiers and namespaces."""
        ...

    @property
    def meta(self) -> Meta:
        """Bookkeeping values."""
        ...

    @property
    def sessions(self) -> Sessions:
        """Dialogs and session context."""
        ...

    @property
    def aliases(self) -> Aliases:
        """The alias table."""
        ...


class WriteSession(ReadSession, Protocol):
    """One atomic write transaction; its facets read what it has written so far."""

    @property
    def records(self) -> RecordWrites:
        """Memory rows."""
        ...

    @property
    def graph(self) -> GraphWrites:
        """Entities and relations."""
        ...

    @property
    def fragments(self) -> FragmentWrites:
        """Fragment rows."""
        ...

    @property
    def lifecycle(self) -> LifecycleWrites:
        """TTL, tiers and namespaces."""
        ...

    @property
    def meta(self) -> MetaWrites:
        """Bookkeeping values."""
        ...

    @property
    def sessions(self) -> SessionWrites:
        """Dialogs and session context."""
        ...

    @property
    def aliases(self) -> AliasWrites:
        """The alias table."""
        ...

    def forget_caches(self) -> None:
        """Unregister the per-process cache files (a re-embed: the next open rebuilds them)."""
        ...

    def save_caches(self, *, vector_save_after: int) -> None:
        """Save per-process caches that are due (a no-op without :attr:`Capabilities.vector_cache`).

        Called by the commit path before every COMMIT: the vector index once
        ``vector_save_after`` changes are unsaved, the fragment index by its own rule.
        """
        ...


# -- the backend ---------------------------------------------------------------


class VectorCache(Protocol):
    """A per-process vector index beside the store, which the commit path keeps current.

    A backend whose searches read such a cache (:attr:`Capabilities.vector_cache`)
    hands it to the engine as :attr:`Backend.vector_cache`; the engine extends it
    after each commit, and within a bulk load on a worker thread while the
    transaction is still being written.
    """

    @property
    def loaded(self) -> bool:
        """Whether this process holds the index in memory."""
        ...

    def catch_up(
        self, *, save_after: int, extend: bool = True, register: bool = True
    ) -> Callable[[], object] | None:
        """Bring the index up to what has committed, and save its file once enough is unsaved.

        Args:
            save_after: Unsaved changes from which the index file is also written.
            extend: Bring the in-memory index up to date even when no save is
                due (``False``: leave that to the next search).
            register: Record a saved file in the store here. ``False`` (a worker
                thread's catch-up) leaves that write to the returned call, made
                on the thread that writes the store.

        Returns:
            With ``register=False``, what registers a file just saved (``None``
            when none was).
        """
        ...

    def add_uncommitted(
        self, vec_keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Add vectors an open write transaction holds (a bulk load's early extension)."""
        ...

    def discard(self) -> None:
        """Drop the in-memory index: a transaction that fed :meth:`add_uncommitted` rolled back."""
        ...

    def stop_feeding(self) -> None:
        """The process's bulk loads ended, their catch-ups done: searches stop waiting on them."""
        ...


class Backend(Protocol):
    """One open store."""

    @property
    def capabilities(self) -> Capabilities:
        """What this backend offers beyond the protocol."""
        ...

    @property
    def path(self) -> str:
        """Where the store is: a file's absolute path, ``":memory:"`` or a URL."""
        ...

    @property
    def schema_version(self) -> int:
        """The schema version of the open store."""
        ...

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        ...

    def configure_vectors(self, dims: int) -> None:
        """Prepare vector storage for ``dims`` (called once, after the embedder identity check)."""
        ...

    def check_memory(self, prepared: Prepared) -> None:
        """Refuse a memory this backend cannot store, before any transaction (no-op: it can).

        ``prepare`` validated it for every backend; this is the backend's own
        limit (PostgreSQL: no NUL in text). The engine calls it for every
        memory of a batch, or of an import file, before the first write, so a
        refused one writes nothing.

        Raises:
            InvalidInputError: Naming the field and the fix.
        """
        ...

    def check_text(self, text: str, field: str) -> None:
        """Refuse free text (a link's note, a fragment's text) as :meth:`check_memory` does.

        Raises:
            InvalidInputError: Naming ``field`` and the fix.
        """
        ...

    @property
    def vector_cache(self) -> VectorCache | None:
        """The memory vectors' per-process index (``None``: the store's own index answers)."""
        ...

    def read(self) -> AbstractContextManager[ReadSession]:
        """Open a read snapshot."""
        ...

    def write(self) -> AbstractContextManager[WriteSession]:
        """Open a write transaction (serialised; a bounded wait ends in StoreBusyError)."""
        ...

    def checkpoint(self, timeout: float) -> str | None:
        """Fold the write-ahead log into the store; why not, when it could not."""
        ...

    def vacuum(self) -> None:
        """Reclaim space (see capabilities)."""
        ...

    def file_bytes(self) -> int:
        """Bytes the store occupies on disk (a server's store: its tables there, with indexes)."""
        ...

    def save_vector_cache(self, *, rebuild: bool = False) -> None:
        """Save the per-process vector cache if it moved on (``rebuild``: from the rows first).

        Never raises: a failure is logged, the cache being rebuilt at the next
        open. A no-op without :attr:`Capabilities.vector_cache`.
        """
        ...

    def save_fragment_cache(self, *, rebuild: bool = False) -> bool:
        """Save the per-process fragment cache when it lags; whether it was written.

        Raises:
            StorageError: When it cannot be saved (the stored rows are intact).
        """
        ...

    def remove_cache_files(self) -> None:
        """Delete the cache files :meth:`WriteSession.forget_caches` unregistered (none: no-op)."""
        ...

    def clear_caches(self) -> None:
        """Drop per-process caches derived from content (after a redaction or a vacuum)."""
        ...

    def close(self) -> None:
        """Save caches and release every handle; closing twice does nothing."""
        ...


class BackendFactory(Protocol):
    """What ``register_backends`` registers: claims locations and opens them."""

    name: str
    """The backend's name (``"sqlite"``, ``"postgresql"``)."""
    schemes: tuple[str, ...]
    """URL schemes it opens (``("postgresql", "postgres")``); ``()`` for plain paths."""

    def claims(self, location: str) -> bool:
        """Whether this backend opens ``location`` (the SQLite one: any non-URL path)."""
        ...

    def open(self, options: OpenOptions) -> Backend:
        """Open (creating if missing) the store at ``options.location``."""
        ...

    def exists(self, location: str) -> bool:
        """Whether a store is at ``location`` already (reading commands refuse to create one)."""
        ...
