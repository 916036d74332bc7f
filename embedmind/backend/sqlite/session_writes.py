"""The SQLite backend's write session: the read facets plus the mutating methods.

Text is versioned by the store's write sequence, bumped once per write
session on first use (postings blocks carry it, so another process's cache
knows a block changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from embedmind.backend.sqlite import (
    alias_rows,
    fragment_rows,
    graph_rows,
    lifecycle_rows,
    records,
    session_rows,
    vector_rows,
)
from embedmind.backend.sqlite.lexical.index import Ahead, analyse_ahead
from embedmind.backend.sqlite.missing_vectors import WriteWatch
from embedmind.backend.sqlite.session import (
    _SPACES,
    Parts,
    SqliteAliases,
    SqliteFragments,
    SqliteGraph,
    SqliteLifecycle,
    SqliteMeta,
    SqliteRead,
    SqliteRecords,
    SqliteSessions,
)
from embedmind.backend.values import Space
from embedmind.drafts import Prepared

ANALYSE_AHEAD_ROWS = 64
"""Rows from which an insert's texts are analysed beside it, on a worker thread."""


class _Versioned:
    """The write sequence of one write session, bumped on first use."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        self._version: int | None = None

    def get(self) -> int:
        if self._version is None:
            self._version = records.next_write_seq(self._conn)
        return self._version


class SqliteRecordWrites(SqliteRecords):
    """:class:`~embedmind.backend.protocol.RecordWrites` over SQLite."""

    def __init__(
        self, conn: apsw.Connection, parts: Parts, version: _Versioned, watch: WriteWatch | None
    ) -> None:
        super().__init__(conn, parts)
        self.version = version
        self.watch = watch
        """Told of every memory whose vectors this session removes (the missing-vectors cache)."""
        self._ahead: Ahead | None = None
        """The texts of the last :meth:`insert_many`, under analysis for :meth:`index_text`."""

    def insert_many(self, batch: Sequence[Prepared]) -> list[int]:
        if len(batch) < ANALYSE_AHEAD_ROWS:
            return records.insert_many(self.conn, batch)
        table = self.parts.lexical.aliases(self.conn)

        def analyse() -> None:
            # The insert is one statement without the GIL: the other core analyses meanwhile.
            self._ahead = analyse_ahead(table, [p.content for p in batch])

        return records.insert_many(self.conn, batch, analyse)

    def insert(self, prepared: Prepared) -> int:
        return records.insert(self.conn, prepared)

    def replace(self, key: int, prepared: Prepared, created_at: int) -> None:
        records.replace(self.conn, key, prepared, created_at)

    def index_text(self, docs: Sequence[tuple[int, str]]) -> None:
        ahead, self._ahead = self._ahead, None
        self.parts.lexical.add(self.conn, list(docs), self.version.get(), ahead)

    def unindex_text(self, keys: Sequence[int]) -> None:
        for key in keys:
            self.parts.lexical.remove(self.conn, key, self.version.get())

    def mark_forgotten(self, key: int, now: int) -> None:
        records.mark_forgotten(self.conn, key, now)

    def delete(self, keys: Sequence[int]) -> None:
        version = self.version.get()
        for key in keys:
            self.parts.lexical.remove(self.conn, key, version)
            self._removed(key, vector_rows.remove_memory(self.conn, key))
            vector_rows.remove_memory(self.conn, key, vector_rows.FRAGMENTS)
            fragment_rows.set_source(self.conn, key, None)
            graph_rows.drop_memory(self.conn, key)
            records.delete(self.conn, key)

    def set_content(self, key: int, content: str, fingerprint: str, now: int) -> None:
        records.set_content(self.conn, key, content, fingerprint, now)

    def restore_fields(self, key: int, fields: dict[str, Any]) -> None:
        records.restore_fields(self.conn, key, fields)

    def put_vectors(
        self, key: int, spans: Sequence[tuple[int, int]], blobs: Sequence[bytes],
        space: Space = Space.MEMORY,
    ) -> list[int]:  # fmt: skip
        return vector_rows.add(self.conn, key, spans, blobs, _SPACES[space])

    def put_vectors_many(
        self, items: Sequence[tuple[int, Sequence[tuple[int, int]], Sequence[bytes]]]
    ) -> list[int]:
        return vector_rows.add_many(self.conn, items)

    def remove_vectors(self, key: int, space: Space = Space.MEMORY) -> int:
        removed = vector_rows.remove_memory(self.conn, key, _SPACES[space])
        if space is Space.MEMORY:
            self._removed(key, removed)
        return removed

    def _removed(self, key: int, vectors: int) -> None:
        if self.watch is not None:
            self.watch.removed(key, vectors)


class SqliteGraphWrites(SqliteGraph):
    """:class:`~embedmind.backend.protocol.GraphWrites` over SQLite."""

    def add_entities(self, key: int, names: Sequence[str]) -> None:
        graph_rows.add_entities(self.conn, key, names)

    def add_relations(self, key: int, edges: Sequence[tuple[str, int]], now: int) -> None:
        graph_rows.add_relations(self.conn, key, edges, now)

    def add_relation_rows(self, rows: Sequence[tuple[int, str, int, int]]) -> None:
        graph_rows.add_relation_rows(self.conn, rows)

    def replace_outgoing(self, key: int, keep_kind: str) -> None:
        graph_rows.replace_outgoing(self.conn, key, keep_kind)

    def mark_superseded(self, key: int, by: str, valid_to: int, now: int) -> bool:
        return graph_rows.mark_superseded(self.conn, key, by, valid_to, now)

    def restore(self, key: int, now: int) -> None:
        graph_rows.restore(self.conn, key, now)

    def mark_contradicted(self, key: int, by: str, confidence: float, now: int) -> None:
        graph_rows.mark_contradicted(self.conn, key, by, confidence, now)

    def set_confidence(self, key: int, confidence: float, now: int) -> None:
        graph_rows.set_confidence(self.conn, key, confidence, now)


class SqliteFragmentWrites(SqliteFragments):
    """:class:`~embedmind.backend.protocol.FragmentWrites` over SQLite."""

    def add(
        self, key: int, spans: Sequence[tuple[int, int]], blobs: Sequence[bytes],
        texts: Sequence[str | None],
    ) -> int:  # fmt: skip
        return fragment_rows.add(self.conn, key, spans, blobs, texts)

    def set_source(self, key: int, fingerprint: str | None) -> None:
        fragment_rows.set_source(self.conn, key, fingerprint)


class SqliteLifecycleWrites(SqliteLifecycle):
    """:class:`~embedmind.backend.protocol.LifecycleWrites` over SQLite."""

    def __init__(self, conn: apsw.Connection, parts: Parts, version: _Versioned) -> None:
        super().__init__(conn, parts)
        self.version = version

    def reinforce(self, keys: Sequence[int], now: int, new_expiry: int | None) -> int:
        return lifecycle_rows.reinforce(self.conn, keys, now, new_expiry)

    def retier(self, key: int, tier: str, expires_at: int | None, now: int) -> None:
        lifecycle_rows.retier(self.conn, key, tier, expires_at, now)

    def move(self, keys: Sequence[int], namespace: str, now: int) -> int:
        # A dialog is a (namespace, session_id): a memory that changes namespace
        # leaves its neighbours in the old one and gains new ones, so with
        # session context its postings and theirs are taken out before the move
        # and put back after it.
        leaving = [
            key
            for key, place in session_rows.places(self.conn, keys).items()
            if place.namespace != namespace
        ]
        if not leaving or not session_rows.enabled(self.conn):
            return lifecycle_rows.move(self.conn, keys, namespace, now)
        lexical, version = self.parts.lexical, self.version.get()
        detached = lexical.detach(self.conn, leaving, version)
        moved = lifecycle_rows.move(self.conn, keys, namespace, now)
        lexical.attach(self.conn, detached, version)
        return moved

    def put_link(
        self, src: str, dst: str, tiers: Sequence[str] | None, note: str, created: int
    ) -> None:
        lifecycle_rows.put_link(self.conn, src, dst, tiers, note, created)

    def delete_link(self, src: str, dst: str) -> bool:
        return lifecycle_rows.delete_link(self.conn, src, dst)

    def rename_link_endpoints(self, old: str, new: str) -> None:
        lifecycle_rows.rename_link_endpoints(self.conn, old, new)


class SqliteMetaWrites(SqliteMeta):
    """:class:`~embedmind.backend.protocol.MetaWrites` over SQLite."""

    def set(self, key: str, value: str | None) -> None:
        vector_rows.meta_set(self.conn, key, value)

    def write_identity(self, identity: dict[str, str]) -> None:
        vector_rows.write_identity(self.conn, identity)


class SqliteSessionWrites(SqliteSessions):
    """:class:`~embedmind.backend.protocol.SessionWrites` over SQLite."""

    def __init__(self, conn: apsw.Connection, parts: Parts, version: _Versioned) -> None:
        super().__init__(conn, parts)
        self.version = version

    def set_context(self, on: bool) -> None:
        if session_rows.enabled(self.conn) != on:
            self.parts.lexical.rebuild(self.conn, self.version.get(), session_context=on)

    def set_dates(self, on: bool) -> None:
        if session_rows.enabled(self.conn, session_rows.DATES) != on:
            context = session_rows.enabled(self.conn)
            lexical, version = self.parts.lexical, self.version.get()
            lexical.rebuild(self.conn, version, session_context=context, date_words=on)


class SqliteAliasWrites(SqliteAliases):
    """:class:`~embedmind.backend.protocol.AliasWrites` over SQLite."""

    def __init__(self, conn: apsw.Connection, parts: Parts, version: _Versioned) -> None:
        super().__init__(conn, parts)
        self.version = version

    def put(self, entries: Sequence[tuple[str, str]]) -> None:
        alias_rows.put(self.conn, entries)

    def delete(self, keys: Sequence[str]) -> None:
        alias_rows.delete(self.conn, keys)

    def mark_holding(self, key_terms: Sequence[str]) -> None:
        alias_rows.add_pending(self.conn, sorted(self.parts.lexical.holding(self.conn, key_terms)))

    def pending(self, limit: int) -> list[int]:
        return alias_rows.pending(self.conn, limit)

    def reindex(self, keys: Sequence[int]) -> int:
        done = self.parts.lexical.reindex(self.conn, keys, self.version.get())
        alias_rows.done(self.conn, keys)
        return done


class SqliteWrite(SqliteRead):
    """One write transaction (:class:`~embedmind.backend.protocol.WriteSession`)."""

    def __init__(
        self, conn: apsw.Connection, parts: Parts, watch: WriteWatch | None = None
    ) -> None:
        super().__init__(conn, parts)
        version = _Versioned(conn)
        self.records: SqliteRecordWrites = SqliteRecordWrites(conn, parts, version, watch)
        self.graph: SqliteGraphWrites = SqliteGraphWrites(conn, parts)
        self.fragments: SqliteFragmentWrites = SqliteFragmentWrites(conn, parts)
        self.lifecycle: SqliteLifecycleWrites = SqliteLifecycleWrites(conn, parts, version)
        self.meta: SqliteMetaWrites = SqliteMetaWrites(conn, parts)
        self.sessions: SqliteSessionWrites = SqliteSessionWrites(conn, parts, version)
        self.aliases: SqliteAliasWrites = SqliteAliasWrites(conn, parts, version)

    def forget_caches(self) -> None:
        vector_rows.forget_index_files(self.conn)

    def save_caches(self, *, vector_save_after: int) -> None:
        # The memory-vector index is saved after COMMIT, outside the writer lock
        # (VectorIndex.catch_up, called by the commit path): serialising it here
        # stalled every other writer and reader for seconds.
        fragments = self.parts.fragment_vectors
        if fragments is not None and fragments.file_path is not None:
            unsaved = fragments.unsaved(self.conn)
            # Nothing unsaved: no file, even at a threshold of 0 (a store that
            # never held a fragment keeps no fragment file).
            if unsaved and unsaved >= vector_save_after:
                fragments.save(self.conn)
