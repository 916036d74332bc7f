"""The SQLite backend's sessions: the protocol's facets over one apsw connection.

Each facet delegates to the row modules of this package (``records``,
``graph_rows``, ``vector_rows``...), compiling a
:class:`~embedmind.query.Selection` with
:func:`~embedmind.backend.sqlite.selection_sql.compile_selection` where a read
filters. The BM25 postings and the HNSW caches are this backend's own derived
indexes: text is indexed by :meth:`SqliteRecordWrites.index_text`, vectors
are searched through :mod:`~embedmind.backend.sqlite.vector_search`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import apsw
import numpy as np

from embedmind.backend.sqlite import (
    alias_rows,
    fragment_rows,
    graph_rows,
    lifecycle_rows,
    postings,
    records,
    session_rows,
    vector_rows,
    vector_search,
)
from embedmind.backend.sqlite.identities import identities
from embedmind.backend.sqlite.lexical.channel import text_channel, widened_channel
from embedmind.backend.sqlite.lexical.context import context_terms
from embedmind.backend.sqlite.lexical.index import LexicalIndex, query_terms
from embedmind.backend.sqlite.missing_vectors import MissingVectors
from embedmind.backend.sqlite.selection_sql import (
    Condition,
    compile_candidates,
    compile_selection,
)
from embedmind.backend.values import Edge, Identity, Link, RowRef, Space, VectorHit
from embedmind.lexical.aliases import query_weights
from embedmind.model import Memory
from embedmind.query.selection import Selection

_SPACES = {Space.MEMORY: vector_rows.MEMORY, Space.FRAGMENTS: vector_rows.FRAGMENTS}


@dataclass
class Parts:
    """What a session works with beside its connection: the backend's derived indexes."""

    lexical: LexicalIndex
    vectors: Any  # HnswIndex | None
    fragment_vectors: Any  # HnswIndex | None
    missing: MissingVectors = field(default_factory=MissingVectors)
    """The per-store cache of live memories without a vector."""


class _Facet:
    def __init__(self, conn: apsw.Connection, parts: Parts) -> None:
        self.conn = conn
        self.parts = parts
        self._compiled: dict[tuple[int, str], tuple[Selection, Any]] = {}

    def condition(self, selection: Selection) -> Condition:
        """The compiled selection, compiled once per session and selection."""
        return cast(Condition, self._once(selection, compile_selection))

    def candidates(self, selection: Selection) -> Condition | None:
        """The selection's index-read candidate keys (``compile_candidates``), once per session."""
        return cast("Condition | None", self._once(selection, compile_candidates))

    def _once(self, selection: Selection, compile: Callable[[Selection], Any]) -> Any:
        # Keyed by identity and kept beside the selection, so a freed selection's
        # reused id never answers for a new one.
        slot = (id(selection), compile.__name__)
        cached = self._compiled.get(slot)
        if cached is None or cached[0] is not selection:
            cached = self._compiled[slot] = (selection, compile(selection))
        return cached[1]


def _ref(existing: records.Existing) -> RowRef:
    return RowRef(
        existing.key,
        existing.namespace,
        existing.content,
        existing.created_at,
        existing.forgotten,
        existing.superseded_by,
    )


class SqliteRecords(_Facet):
    """:class:`~embedmind.backend.protocol.Records` over SQLite."""

    def find(self, memory_id: str) -> RowRef | None:
        found = records.find(self.conn, memory_id)
        return None if found is None else _ref(found)

    def find_many(self, ids: Sequence[str]) -> dict[str, RowRef]:
        return {i: _ref(e) for i, e in records.find_many(self.conn, ids).items()}

    def load(self, keys: Sequence[int]) -> dict[int, Memory]:
        return records.select_by_keys(self.conn, keys)

    def load_ids(self, ids: Sequence[str]) -> dict[str, Memory]:
        return records.select_by_ids(self.conn, ids)

    def identities(self, keys: Sequence[int], *, live: bool = False) -> dict[int, Identity]:
        return {k: Identity(*row) for k, row in identities(self.conn, keys, live=live).items()}

    def admitted(self, keys: Sequence[int], selection: Selection) -> set[int]:
        return records.keys_passing(self.conn, keys, *self.condition(selection))

    def page(
        self, selection: Selection, after: tuple[int, int] | None, limit: int
    ) -> list[tuple[int, int, Memory]]:
        sql, params = self.condition(selection)
        return records.page(self.conn, sql, params, after, limit)

    def by_fingerprint(self, fingerprint: str, selection: Selection) -> Memory | None:
        return records.by_fingerprint(self.conn, fingerprint, *self.condition(selection))

    def statistics(self, now: int) -> dict[str, Any]:
        return records.statistics(self.conn, now)

    def live_count(self) -> int:
        return records.live_count(self.conn)

    def forgotten_keys(self) -> list[int]:
        return records.forgotten_keys(self.conn)

    def export_page(self, after: int, limit: int) -> list[dict[str, Any]]:
        return records.export_page(self.conn, after, limit)

    def contents_after(self, after: int, limit: int) -> list[tuple[int, str]]:
        return records.contents_after(self.conn, after, limit)


class SqliteChannels(_Facet):
    """:class:`~embedmind.backend.protocol.Channels` over the postings and the HNSW caches."""

    def text_top(self, text: str, selection: Selection, k: int) -> list[tuple[int, float]]:
        return text_channel(self.conn, self.parts.lexical, text, self.condition(selection), k)

    def text_widened(
        self, text: str, selection: Selection, k: int, base: int
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], dict[int, str]]:
        found, widened = widened_channel(
            self.conn, self.parts.lexical, text, self.condition(selection), k, base
        )
        return found, widened.items, widened.via

    def vector_top(
        self,
        query: Any,
        selection: Selection,
        k: int,
        *,
        cap: int | None = 1,
        space: Space = Space.MEMORY,
        ef: int | None = None,
        exact_first: int = 0,
    ) -> list[VectorHit]:
        finish = self.begin_vector_top(
            query, selection, k, cap=cap, space=space, ef=ef, exact_first=exact_first,
            overlap=False,
        )  # fmt: skip
        return finish()

    def begin_vector_top(
        self,
        query: Any,
        selection: Selection,
        k: int,
        *,
        cap: int | None = 1,
        space: Space = Space.MEMORY,
        ef: int | None = None,
        exact_first: int = 0,
        overlap: bool = True,
    ) -> Callable[[], list[VectorHit]]:
        index = self.parts.vectors if space is Space.MEMORY else self.parts.fragment_vectors
        if index is None:
            return list
        finish = vector_search.begin_nearest(
            self.conn, index, query, self.condition(selection), k, cap,
            _SPACES[space], ef=ef, exact_first=exact_first,
            candidates=self.candidates(selection), overlap=overlap,
        )  # fmt: skip
        return lambda: [VectorHit(v, key, sim) for v, key, sim in finish()]

    def cosines(self, query: Any, keys: Sequence[int]) -> dict[int, float]:
        index = self.parts.vectors
        return {} if index is None else vector_search.cosines_of(self.conn, index.dims, query, keys)

    def text_ceiling(self, text: str) -> float:
        weights = query_weights(query_terms(text), self.parts.lexical.aliases(self.conn))
        return postings.ceiling(self.conn, weights)

    def memory_vectors(self, keys: Sequence[int]) -> tuple[Any, Any]:
        index = self.parts.vectors
        if index is None:
            return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
        return vector_rows.by_memory(self.conn, keys, index.dims)

    def vector_count(self, space: Space = Space.MEMORY) -> int:
        return vector_rows.count(self.conn, _SPACES[space])

    def indexed_vectors(self) -> int:
        """Vectors in this process's memory-vector index (0 without one)."""
        return 0 if self.parts.vectors is None else len(self.parts.vectors)

    def vector_rows(self, key: int, space: Space = Space.MEMORY) -> list[tuple[int, int, bytes]]:
        return vector_rows.rows_of(self.conn, key, _SPACES[space])

    def lexical_terms(self, key: int, content: str, query: str) -> tuple[str, ...]:
        return context_terms(self.conn, key, content, query)

    def text_statistics(self) -> tuple[int, int]:
        return self.parts.lexical.statistics(self.conn)

    def missing_vectors(self) -> tuple[int, ...]:
        return self.parts.missing.live_keys(self.conn)

    def missing_vector_count(self) -> int:
        return vector_rows.missing_count(self.conn)

    def missing_contents(
        self, after: int = 0, limit: int = -1, keys: Sequence[int] | None = None
    ) -> list[tuple[int, str]]:
        return vector_rows.missing_contents(self.conn, after, limit, keys)


class SqliteGraph(_Facet):
    """:class:`~embedmind.backend.protocol.Graph` over SQLite."""

    def edges(self, key: int) -> list[Edge]:
        return [Edge(e.other, e.kind, e.outgoing) for e in graph_rows.edges(self.conn, key)]

    def entity_names(self, key: int) -> list[str]:
        return graph_rows.entity_names(self.conn, key)

    def entity_members(self, name: str) -> list[int]:
        return graph_rows.entity_member_keys(self.conn, name)

    def predecessors(self, memory_id: str) -> list[tuple[int, str]]:
        return graph_rows.predecessors(self.conn, memory_id)

    def outgoing(self, key: int) -> list[tuple[str, str, int]]:
        return graph_rows.outgoing(self.conn, key)

    def counts(self) -> tuple[int, int]:
        return graph_rows.counts(self.conn)


class SqliteFragments(_Facet):
    """:class:`~embedmind.backend.protocol.Fragments` over SQLite."""

    def details(self, vec_keys: Sequence[int]) -> dict[int, tuple[str, int, int, str | None]]:
        return fragment_rows.details(self.conn, vec_keys)

    def counts(self) -> tuple[int, int]:
        return fragment_rows.counts(self.conn)

    def source(self, key: int) -> str | None:
        return fragment_rows.source(self.conn, key)

    def texts_of(self, key: int) -> list[tuple[int, int, str | None]]:
        return fragment_rows.texts_of(self.conn, key)

    def texts_after(
        self, after: int, limit: int
    ) -> list[tuple[int, list[tuple[int, int, str | None]]]]:
        return fragment_rows.texts_after(self.conn, after, limit)

    def given_as_vectors(self) -> tuple[int, int, list[str]]:
        return fragment_rows.given_as_vectors(self.conn)


class SqliteLifecycle(_Facet):
    """:class:`~embedmind.backend.protocol.Lifecycle` over SQLite."""

    def expired(self, now: int, limit: int) -> list[tuple[int, str, str]]:
        return lifecycle_rows.expired(self.conn, now, limit)

    def still_expired(self, key: int, now: int) -> bool:
        return lifecycle_rows.still_expired(self.conn, key, now)

    def namespace_activity(self) -> list[tuple[str, int, int]]:
        return lifecycle_rows.namespace_activity(self.conn)

    def keys_in_namespace(self, namespace: str) -> list[int]:
        return lifecycle_rows.keys_in_namespace(self.conn, namespace)

    def oldest_beyond(self, namespace: str, tier: str | None, cap: int) -> list[int]:
        return lifecycle_rows.oldest_beyond(self.conn, namespace, tier, cap)

    def links(self, src: str | None) -> list[Link]:
        return lifecycle_rows.links(self.conn, src)


class SqliteMeta(_Facet):
    """:class:`~embedmind.backend.protocol.Meta` over SQLite."""

    def get(self, key: str) -> str | None:
        return vector_rows.meta_get(self.conn, key)

    def identity(self) -> dict[str, str]:
        return vector_rows.read_identity(self.conn)


class SqliteSessions(_Facet):
    """:class:`~embedmind.backend.protocol.Sessions` over SQLite."""

    def context_enabled(self) -> bool:
        return session_rows.enabled(self.conn)

    def dates_enabled(self) -> bool:
        return session_rows.enabled(self.conn, session_rows.DATES)

    def session_ids(self, keys: Sequence[int]) -> dict[int, str]:
        return {k: p.session_id for k, p in session_rows.places(self.conn, keys).items()}

    def neighbours(self, keys: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        return postings.dialog_links(self.conn, keys)


class SqliteAliases(_Facet):
    """:class:`~embedmind.backend.protocol.Aliases` over SQLite."""

    def rows(self) -> list[tuple[str, str]]:
        return alias_rows.rows(self.conn)

    def pending_count(self) -> int:
        return alias_rows.pending_count(self.conn)


class SqliteRead:
    """A read snapshot (:class:`~embedmind.backend.protocol.ReadSession`)."""

    def __init__(self, conn: apsw.Connection, parts: Parts) -> None:
        self.conn = conn
        """The connection (this backend's own modules only; the engine never touches it)."""
        self.parts = parts
        self.records = SqliteRecords(conn, parts)
        self.channels = SqliteChannels(conn, parts)
        self.graph = SqliteGraph(conn, parts)
        self.fragments = SqliteFragments(conn, parts)
        self.lifecycle = SqliteLifecycle(conn, parts)
        self.meta = SqliteMeta(conn, parts)
        self.sessions = SqliteSessions(conn, parts)
        self.aliases = SqliteAliases(conn, parts)
