"""The facets of a backend session (:mod:`embedmind.backend.protocol`): one small protocol each.

Read facets answer questions over one snapshot; each write facet adds the
mutating methods of its read facet. Filters and scopes arrive as values
(:class:`embedmind.query.Selection`); rows are named by the backend's
integer keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from embedmind.backend.values import Edge, Identity, Link, RowRef, Space, VectorHit
from embedmind.drafts import Prepared
from embedmind.model import Memory
from embedmind.query.selection import Selection

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
        exact_first: int = 0,
    ) -> list[VectorHit]:
        """The ``k`` admitted vectors nearest ``query``, at most ``cap`` per memory, best first.

        ``cap=1`` is memory search (a memory counts once, under its best
        chunk); the cap applies before the ``k`` cut. ``ef`` is a search-breadth
        hint an exact backend ignores. The first ``exact_first`` hits are the
        best by the float32 cosine computed from the stored vectors, in that
        order and with those cosines, so a smaller ``exact_first`` gives the
        beginning of a larger one's; the hits after them may keep the search's
        own cosines and order (reading a vector back costs a random read).
        """
        ...

    def begin_vector_top(
        self,
        query: Vector,
        selection: Selection,
        k: int,
        *,
        cap: int | None = 1,
        space: Space = Space.MEMORY,
        ef: int | None = None,
        exact_first: int = 0,
        overlap: bool = True,
    ) -> Callable[[], list[VectorHit]]:
        """Start :meth:`vector_top`; calling the result returns its hits.

        With ``overlap`` the caller uses this session for other reads before
        the call (a hybrid recall's text channel): a backend that can search
        its vector index beside them (on another core) starts that search
        here. Without, or in a backend that cannot, the search runs in the
        call. Either way the hits are the ones :meth:`vector_top` gives.
        """
        ...

    def cosines(self, query: Vector, keys: Sequence[int]) -> dict[int, float]:
        """Each memory's best-chunk cosine to ``query`` (memories without vectors omitted)."""
        ...

    def text_ceiling(self, text: str) -> float:
        """The largest BM25 score any memory could reach for ``text`` (0 when none can match).

        The sum of ``weight · idf(t) · (k1 + 1)`` over the query's scoring terms
        the index holds (its own at weight 1, alias expansions at theirs), with
        the statistics :meth:`text_top` scores with (:mod:`embedmind.evidence`).
        """
        ...

    def memory_vectors(
        self, keys: Sequence[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The given memories' stored vectors as ``(owners, rows)``, sorted by key then chunk."""
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

    def text_statistics(self) -> tuple[int, int]:
        """``(documents, distinct terms)`` in the text index."""
        ...

    def missing_vectors(self) -> tuple[int, ...]:
        """Keys of live memories without a vector (written with no embedder), in key order."""
        ...

    def missing_vector_count(self) -> int:
        """How many live memories have no vector (one count, no cache)."""
        ...

    def missing_contents(
        self, after: int = 0, limit: int = -1, keys: Sequence[int] | None = None
    ) -> list[tuple[int, str]]:
        """``(key, content)`` of live memories with no vector, after ``after`` or among ``keys``."""
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

    def texts_after(
        self, after: int, limit: int
    ) -> list[tuple[int, list[tuple[int, int, str | None]]]]:
        """Whole records after key ``after``, about ``limit`` fragments: ``(key, texts_of)``."""
        ...

    def given_as_vectors(self) -> tuple[int, int, list[str]]:
        """Fragments stored without text: ``(count, records, a few record ids)``."""
        ...


class Lifecycle(Protocol):
    """TTL, tiers, namespaces and their links."""

    def expired(self, now: int, limit: int) -> list[tuple[int, str, str]]:
        """``(key, id, tier)`` of memories whose TTL has passed, oldest expiry first."""
        ...

    def still_expired(self, key: int, now: int) -> bool:
        """Whether ``key`` still expires at or before ``now`` (its TTL was not slid meanwhile)."""
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

    def dates_enabled(self) -> bool:
        """Whether the lexical index carries date words (:mod:`embedmind.lexical.dates`)."""
        ...

    def session_ids(self, keys: Sequence[int]) -> dict[int, str]:
        """The ``session_id`` of each of ``keys`` that has one."""
        ...

    def neighbours(self, keys: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        """The dialog neighbours the lexical index holds for each of ``keys`` (none: omitted).

        ``(previous, next)`` as :mod:`embedmind.lexical.session_context` defines
        them, the links each memory's postings were built with; a store with
        session context off holds none.
        """
        ...


class Aliases(Protocol):
    """The alias table (:mod:`embedmind.aliases`) and its pending re-index."""

    def rows(self) -> list[tuple[str, str]]:
        """``(key as given, target)`` of every alias."""
        ...

    def pending_count(self) -> int:
        """Memories marked for a re-index an alias change started."""
        ...


# -- write facets --------------------------------------------------------------


class RecordWrites(Records, Protocol):
    """Memory rows, written. Every method keeps the backend's derived indexes in step."""

    def find(self, memory_id: str) -> RowRef | None:
        """The row holding ``memory_id``, forgotten or not, held as :meth:`find_many` holds it."""
        ...

    def find_many(self, ids: Sequence[str]) -> dict[str, RowRef]:
        """The rows holding any of ``ids``, forgotten or not, held until the transaction ends.

        Held: the row as the last writer committed it (waiting for a writer
        that holds it), and no other writer changes or removes it until this
        transaction ends, so a check made on it still holds when the write
        that follows it lands. A backend that serialises its writers (SQLite)
        holds every row already; one that does not locks these, in key order.
        An id no row holds is not held: two writers may both insert it, and
        the second's insert raises
        :class:`~embedmind.backend.protocol.ConcurrentWriteError`.
        """
        ...

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

    def put_vectors_many(
        self, items: Sequence[tuple[int, Sequence[Span], Sequence[bytes]]]
    ) -> list[int]:
        """Store the memory vectors of several memories (``(key, spans, blobs)`` each) at once.

        Returns:
            Their vec_keys, in the order of ``items`` and of each one's spans.
        """
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

    def mark_superseded(self, key: int, by: str, valid_to: int, now: int) -> bool:
        """Flag a memory as replaced by ``by``; its validity ends at ``valid_to``.

        One statement that checks and writes: a memory already replaced by
        another is left as it is.

        Returns:
            Whether it is now replaced by ``by`` (``False``: another memory
            replaced it first).
        """
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

    def set_dates(self, on: bool) -> None:
        """Turn date words on or off, re-indexing the text index when it changes."""
        ...


class AliasWrites(Aliases, Protocol):
    """The alias table, written."""

    def put(self, entries: Sequence[tuple[str, str]]) -> None:
        """Insert or replace ``(key as given, target)`` rows."""
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Remove rows by key as given."""
        ...

    def mark_holding(self, key_terms: Sequence[str]) -> None:
        """Mark for re-index every memory whose text index holds all of ``key_terms``.

        A superset is fine (the terms need not be adjacent): a memory's index
        includes the words it lends its dialog neighbours.
        """
        ...

    def pending(self, limit: int) -> list[int]:
        """Up to ``limit`` marked keys, in key order."""
        ...

    def reindex(self, keys: Sequence[int]) -> int:
        """Re-derive these memories' text index under the current table and unmark them."""
        ...
