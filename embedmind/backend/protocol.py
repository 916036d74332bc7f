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

A backend registers through the ``register_backends`` hook (the built-in
SQLite one exactly as a third-party one would); :meth:`embedmind.Store.open`
picks it from the path or URL (:func:`embedmind.plugins.backend_for`). What it
can do beyond the protocol is declared in :class:`Capabilities`, never sniffed.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

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
from embedmind.model import Memory
from embedmind.query.selection import Selection

__all__ = [
    "Backend",
    "BackendFactory",
    "Capabilities",
    "Channels",
    "Edge",
    "Fragments",
    "Graph",
    "Identity",
    "Lifecycle",
    "Link",
    "Meta",
    "OpenOptions",
    "ReadSession",
    "Records",
    "RowRef",
    "Sessions",
    "Space",
    "VectorHit",
    "WriteSession",
]

Vector = npt.NDArray[np.float32]
"""One unit float32 vector (a query)."""
Span = tuple[int, int]
"""A ``[start, end)`` character span of a memory's content."""
Scored = list[tuple[int, float]]
"""``(key, score)`` best first."""


# -- read facets ---------------------------------------------------------------


class Records(Protocol):
    """Memory rows."""

    def find(self, memory_id: str) -> RowRef | None:
        """The row holding ``memory_id``, forgotten or not."""
        ...

    def find_many(self, ids: Sequence[str]) -> dict[str, RowRef]:
        """The rows holding any of ``ids``, forgotten or not."""
        ...

    def load(self, keys: Sequence[int]) -> dict[int, Memory]:
        """The memories of these keys (forgotten ones included); damaged rows raise StorageError."""
        ...

    def load_ids(self, ids: Sequence[str]) -> dict[str, Memory]:
        """The live (not forgotten) memories of these ids."""
        ...

    def identities(self, keys: Sequence[int], *, live: bool = False) -> dict[int, Identity]:
        """The identity of each existing key, in key order (``live``: tombstones left out)."""
        ...

    def admitted(self, keys: Sequence[int], selection: Selection) -> set[int]:
        """The subset of ``keys`` that ``selection`` admits."""
        ...

    def page(
        self, selection: Selection, after: tuple[int, int] | None, limit: int
    ) -> list[tuple[int, int, Memory]]:
        """``(created_at, key, memory)`` admitted, in that order, after the cursor ``after``."""
        ...

    def by_fingerprint(self, fingerprint: str, selection: Selection) -> Memory | None:
        """The oldest admitted memory with this content fingerprint."""
        ...

    def statistics(self, now: int) -> dict[str, Any]:
        """The counts :meth:`embedmind.Store.stats` reports, in one snapshot."""
        ...

    def live_count(self) -> int:
        """Memories that are not forgotten."""
        ...

    def forgotten_keys(self) -> list[int]:
        """Keys of tombstones."""
        ...

    def export_page(self, after: int, limit: int) -> list[dict[str, Any]]:
        """Live memories after key ``after``, in key order, every stored field (times in µs)."""
        ...

    def contents_after(self, after: int, limit: int) -> list[tuple[int, str]]:
        """``(key, content)`` of live memories with keys above ``after``, in key order."""
        ...


class Channels(Protocol):
    """The recall channels: each returns keys the selection admits, without under-return."""

    def text_top(self, text: str, selection: Selection, k: int) -> Scored:
        """The top ``k`` admitted memories by the backend's lexical score (BM25), best first."""
        ...

    def text_widened(
        self, text: str, selection: Selection, k: int, base: int
    ) -> tuple[Scored, Scored, dict[int, str]]:
        """:meth:`text_top`, and what key-term sub-queries add to its first ``base``.

        Returns ``(top k, widened (key, primary score) best first, {key: key term
        whose sub-query brought it in})``; a backend without sub-queries returns
        ``(text_top(...), [], {})``.
        """
        ...

    def vector_top(
        self,
        query: Vector,
        selection: Selection,
        k: int,
        *,
        cap: int | None = 1,
        space: Space = Space.MEMORY,
        ef: int | None = None,
        exact_scores: bool = False,
    ) -> list[VectorHit]:
        """The ``k`` admitted vectors nearest ``query``, at most ``cap`` per memory, best first.

        ``cap=1`` is memory search (a memory counts once, under its best
        chunk); the cap applies before the ``k`` cut. ``ef`` is a search-breadth
        hint an exact backend ignores. With ``exact_scores`` the cosines are
        float32 ones computed from the stored vectors, and the order follows them.
        """
        ...

    def cosines(self, query: Vector, keys: Sequence[int]) -> dict[int, float]:
        """Each memory's best-chunk cosine to ``query`` (memories without vectors omitted)."""
        ...

    def vector_count(self, space: Space = Space.MEMORY) -> int:
        """Vectors stored in ``space``."""
        ...

    def vector_rows(self, key: int, space: Space = Space.MEMORY) -> list[tuple[int, int, bytes]]:
        """``(start, end, little-endian float32 blob)`` of one memory's vectors, in order."""
        ...

    def lexical_terms(self, key: int, content: str, query: str) -> tuple[str, ...]:
        """The query terms a memory matched only through its session context (for explain)."""
        ...


class Graph(Protocol):
    """Entities and relations."""

    def edges(self, key: int) -> list[Edge]:
        """Relations of ``key`` whose other end is not forgotten, both directions."""
        ...

    def entity_names(self, key: int) -> list[str]:
        """A memory's entity names, sorted."""
        ...

    def entity_members(self, name: str) -> list[int]:
        """Keys of live memories carrying entity ``name``, in time order."""
        ...

    def predecessors(self, memory_id: str) -> list[tuple[int, str]]:
        """``(key, id)`` of the memories ``memory_id`` superseded directly."""
        ...

    def outgoing(self, key: int) -> list[tuple[str, str, int]]:
        """``(kind, target id, created_at)`` of a memory's stored relations, sorted."""
        ...

    def counts(self) -> tuple[int, int]:
        """``(entities, relations)`` stored."""
        ...


class Fragments(Protocol):
    """Fragment rows (their vectors are :attr:`Space.FRAGMENTS`)."""

    def details(self, vec_keys: Sequence[int]) -> dict[int, tuple[str, int, int, str | None]]:
        """``vec_key -> (record id, start, end, text)``."""
        ...

    def counts(self) -> tuple[int, int]:
        """``(records with fragments, fragments)``."""
        ...

    def source(self, key: int) -> str | None:
        """The content fingerprint a record's fragments were derived from."""
        ...

    def texts_of(self, key: int) -> list[tuple[int, int, str | None]]:
        """``(start, end, text)`` of one record's fragments, in stored order."""
        ...


class Lifecycle(Protocol):
    """TTL, tiers, namespaces and their links."""

    def expired(self, now: int, limit: int) -> list[tuple[int, str, str]]:
        """``(key, id, tier)`` of memories whose TTL has passed, oldest expiry first."""
        ...

    def namespace_activity(self) -> list[tuple[str, int, int]]:
        """``(namespace, live count, newest updated_at)`` of namespaces with live memories."""
        ...

    def keys_in_namespace(self, namespace: str) -> list[int]:
        """Every key (forgotten included) in one namespace."""
        ...

    def oldest_beyond(self, namespace: str, tier: str | None, cap: int) -> list[int]:
        """Keys of the oldest live memories of a namespace (and tier) beyond the newest ``cap``."""
        ...

    def links(self, src: str | None) -> list[Link]:
        """Links from ``src`` (or every link), by source then destination."""
        ...


class Meta(Protocol):
    """Bookkeeping values."""

    def get(self, key: str) -> str | None:
        """One value, or ``None``."""
        ...

    def identity(self) -> dict[str, str]:
        """The recorded embedder identity (``model_id``, ``dims``, ``metric``...); empty if none."""
        ...


class Sessions(Protocol):
    """Dialogs: memories of one namespace and session, by ``created_at``."""

    def context_enabled(self) -> bool:
        """Whether the lexical index carries session context (a memory's neighbours' words)."""
        ...


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


# -- write facets --------------------------------------------------------------


class RecordWrites(Records, Protocol):
    """Memory rows, written. Every method keeps the backend's derived indexes in step."""

    def insert_many(self, batch: Sequence[Prepared]) -> list[int]:
        """Insert new rows (ids known to be free and distinct) and their tags; their keys."""
        ...

    def insert(self, prepared: Prepared) -> int:
        """Insert one new row; its key."""
        ...

    def replace(self, key: int, prepared: Prepared, created_at: int) -> None:
        """Overwrite the row ``key`` in place (an upsert), keeping ``created_at``."""
        ...

    def index_text(self, docs: Sequence[tuple[int, str]]) -> None:
        """Index ``(key, content)`` for :meth:`Channels.text_top` (new or re-authored text)."""
        ...

    def unindex_text(self, keys: Sequence[int]) -> None:
        """Drop these memories from the text index (forgotten, or about to be re-indexed)."""
        ...

    def mark_forgotten(self, key: int, now: int) -> None:
        """Tombstone the row (the caller drops its text, vectors and fragments)."""
        ...

    def delete(self, keys: Sequence[int]) -> None:
        """Remove rows at once with everything derived: tags, text, vectors, fragments, edges."""
        ...

    def set_content(self, key: int, content: str, fingerprint: str, now: int) -> None:
        """Replace a memory's content in place (redaction; secure delete if capable)."""
        ...

    def restore_fields(self, key: int, fields: dict[str, Any]) -> None:
        """Write back the fields an import carries beyond a fresh write."""
        ...

    def put_vectors(
        self, key: int, spans: Sequence[Span], blobs: Sequence[bytes], space: Space = Space.MEMORY
    ) -> list[int]:
        """Store a memory's vectors (one per span); their vec_keys."""
        ...

    def remove_vectors(self, key: int, space: Space = Space.MEMORY) -> int:
        """Drop a memory's vectors in ``space``; how many there were."""
        ...


class GraphWrites(Graph, Protocol):
    """Entities and relations, written."""

    def add_entities(self, key: int, names: Sequence[str]) -> None:
        """Attach entity names to a memory."""
        ...

    def add_relations(self, key: int, edges: Sequence[tuple[str, int]], now: int) -> None:
        """Add ``(kind, target key)`` relations from ``key``."""
        ...

    def add_relation_rows(self, rows: Sequence[tuple[int, str, int, int]]) -> None:
        """Insert ``(src, kind, dst, created_at)`` relations, ignoring ones already there."""
        ...

    def replace_outgoing(self, key: int, keep_kind: str) -> None:
        """Forget a re-authored memory's entities and outgoing relations, except ``keep_kind``."""
        ...

    def mark_superseded(self, key: int, by: str, valid_to: int, now: int) -> None:
        """Flag a memory as replaced by ``by``; its validity ends at ``valid_to``."""
        ...

    def restore(self, key: int, now: int) -> None:
        """Clear supersession and contradiction."""
        ...

    def mark_contradicted(self, key: int, by: str, confidence: float, now: int) -> None:
        """End a fact's validity now, recording the contradicting id."""
        ...

    def set_confidence(self, key: int, confidence: float, now: int) -> None:
        """Set a memory's confidence in place."""
        ...


class FragmentWrites(Fragments, Protocol):
    """Fragment rows, written."""

    def add(
        self,
        key: int,
        spans: Sequence[Span],
        blobs: Sequence[bytes],
        texts: Sequence[str | None],
    ) -> int:
        """Store a record's fragments (vectors in :attr:`Space.FRAGMENTS`); how many."""
        ...

    def set_source(self, key: int, fingerprint: str | None) -> None:
        """Record (or, with ``None``, forget) the content a record's fragments came from."""
        ...


class LifecycleWrites(Lifecycle, Protocol):
    """TTL, tiers and namespaces, written."""

    def reinforce(self, keys: Sequence[int], now: int, new_expiry: int | None) -> int:
        """Bump access counts; slide expiring TTLs to ``new_expiry`` if later; how many."""
        ...

    def retier(self, key: int, tier: str, expires_at: int | None, now: int) -> None:
        """Change a memory's tier and expiry in place."""
        ...

    def move(self, keys: Sequence[int], namespace: str, now: int) -> int:
        """Move memories to ``namespace`` (their dialogs' text context follows); how many."""
        ...

    def put_link(
        self, src: str, dst: str, tiers: Sequence[str] | None, note: str, created: int
    ) -> None:
        """Insert or replace the link ``src -> dst``."""
        ...

    def delete_link(self, src: str, dst: str) -> bool:
        """Remove a link; whether one existed."""
        ...

    def rename_link_endpoints(self, old: str, new: str) -> None:
        """Rewrite the links of a renamed namespace (a pre-existing link wins a collision)."""
        ...


class MetaWrites(Meta, Protocol):
    """Bookkeeping values, written."""

    def set(self, key: str, value: str | None) -> None:
        """Set (``None``: delete) one value."""
        ...

    def write_identity(self, identity: dict[str, str]) -> None:
        """Record the embedder identity of the store's vectors."""
        ...


class SessionWrites(Sessions, Protocol):
    """Session context, written."""

    def set_context(self, on: bool) -> None:
        """Turn session context on or off, re-indexing the text index when it changes."""
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

    def save_caches(self, *, vector_save_after: int) -> None:
        """Save per-process caches that are due (a no-op without :attr:`Capabilities.vector_cache`).

        Called by the commit path before every COMMIT: the vector index once
        ``vector_save_after`` changes are unsaved, the fragment index by its own rule.
        """
        ...


# -- the backend ---------------------------------------------------------------


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
        """Bytes the store occupies on disk (0 when not file-backed)."""
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
