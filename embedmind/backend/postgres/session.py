# The facets implement the documented methods of embedmind/backend/protocol.py (as the
# SQLite ones, which pyproject exempts the same way).
# ruff: noqa: D102
"""The PostgreSQL backend's sessions: the protocol's facets over one transaction.

Each facet is SQL over the connection of the session's transaction, compiling
a :class:`~embedmind.query.Selection` once per session with
:func:`~embedmind.backend.postgres.selection_sql.compile_selection`. The
recall channels are :mod:`.lexical` (BM25 in SQL) and :mod:`.vector_channel`
(pgvector HNSW without under-return).

Every facet is here or in :mod:`.session_graph` (graph, fragments,
lifecycle); rows move through :mod:`.records`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.backend.postgres import (
    alias_rows,
    lexical,
    records,
    schema,
    vector_channel,
    widening,
)
from embedmind.backend.postgres.aliases import PgAliases
from embedmind.backend.postgres.facet import CONTEXT_KEY, TABLES, Facet
from embedmind.backend.postgres.selection_sql import Condition
from embedmind.backend.postgres.session_graph import (
    PgFragments,
    PgGraph,
    PgLifecycle,
    drop_unused_entities,
)
from embedmind.backend.values import KEPT_WHEN_SUPERSEDED, Identity, RowRef, Space, VectorHit
from embedmind.drafts import Prepared
from embedmind.model import Memory
from embedmind.query.selection import Selection

Conn = psycopg.Connection[TupleRow]


def _ref(row: Sequence[Any]) -> RowRef:
    key, namespace, content, created_at, forgotten_at, superseded_by = row
    return RowRef(int(key), namespace, content, int(created_at), forgotten_at is not None,
                  superseded_by)  # fmt: skip


_REF = "key, namespace, content, created_at, forgotten_at, superseded_by"


def _assignment(column: str) -> sql.Composable:
    name = sql.Identifier(column)
    if column in KEPT_WHEN_SUPERSEDED:
        kept = "{} = CASE WHEN superseded_by IS NULL THEN %s ELSE {} END"
        return sql.SQL(kept).format(name, name)
    return sql.SQL("{} = %s").format(name)


class PgRecords(Facet):
    """:class:`~embedmind.backend.protocol.Records` over PostgreSQL."""

    _held = ""
    """What ends ``find`` and ``find_many``: nothing in a read snapshot."""

    def find(self, memory_id: str) -> RowRef | None:
        return self.find_many([memory_id]).get(memory_id)

    def find_many(self, ids: Sequence[str]) -> dict[str, RowRef]:
        rows = self.conn.execute(
            f"SELECT id, {_REF} FROM memories WHERE id = ANY(%s){self._held}", (list(ids),)
        ).fetchall()
        return {row[0]: _ref(row[1:]) for row in rows}

    def load(self, keys: Sequence[int]) -> dict[int, Memory]:
        rows = self.conn.execute(
            f"SELECT {records.SELECT} FROM memories m WHERE m.key = ANY(%s)", (list(keys),)
        ).fetchall()
        return dict(zip((int(row[0]) for row in rows), records.to_memories(rows), strict=True))

    def load_ids(self, ids: Sequence[str]) -> dict[str, Memory]:
        rows = self.conn.execute(
            f"SELECT {records.SELECT} FROM memories m "
            "WHERE m.id = ANY(%s) AND m.forgotten_at IS NULL",
            (list(ids),),
        ).fetchall()
        return {memory.id: memory for memory in records.to_memories(rows)}

    def identities(self, keys: Sequence[int], *, live: bool = False) -> dict[int, Identity]:
        live_sql = " AND forgotten_at IS NULL" if live else ""
        rows = self.conn.execute(
            f"SELECT key, id, namespace, tier FROM memories WHERE key = ANY(%s){live_sql} "
            "ORDER BY key",
            (list(keys),),
        ).fetchall()
        return {int(k): Identity(i, ns, tier) for k, i, ns, tier in rows}

    def admitted(self, keys: Sequence[int], selection: Selection) -> set[int]:
        condition, params = self.condition(selection)
        query = sql.SQL("SELECT m.key FROM memories m WHERE m.key = ANY(%s) AND {}").format(
            condition
        )
        return {int(r[0]) for r in self.conn.execute(query, [list(keys), *params])}

    def page(
        self, selection: Selection, after: tuple[int, int] | None, limit: int
    ) -> list[tuple[int, int, Memory]]:
        condition, params = self.condition(selection)
        cursor: sql.Composable = sql.SQL("TRUE")
        cursor_params: list[Any] = []
        if after is not None:
            cursor = sql.SQL("(m.created_at, m.key) > (%s, %s)")  # a row-value range seek
            cursor_params = [after[0], after[1]]
        query = sql.SQL(
            "SELECT {cols} FROM memories m WHERE {cursor} AND {cond} "
            "ORDER BY m.created_at, m.key LIMIT %s"
        ).format(cols=sql.SQL(records.SELECT), cursor=cursor, cond=condition)
        rows = self.conn.execute(query, [*cursor_params, *params, limit]).fetchall()
        memories = records.to_memories(rows)
        return [(int(r[10]), int(r[0]), m) for r, m in zip(rows, memories, strict=True)]

    def by_fingerprint(self, fingerprint: str, selection: Selection) -> Memory | None:
        condition, params = self.condition(selection)
        query = sql.SQL(
            "SELECT {cols} FROM memories m WHERE m.fingerprint = %s AND {cond} "
            "ORDER BY m.created_at, m.key LIMIT 1"
        ).format(cols=sql.SQL(records.SELECT), cond=condition)
        row = self.conn.execute(query, [fingerprint, *params]).fetchone()
        return None if row is None else records.to_memory(row)

    def statistics(self, now: int) -> dict[str, Any]:
        # The SQLite backend's keys and shapes: the engine's stats() reads them.
        row = self.conn.execute(
            "SELECT count(*) FILTER (WHERE forgotten_at IS NULL), "
            "count(*) FILTER (WHERE forgotten_at IS NOT NULL), "
            "count(*) FILTER (WHERE forgotten_at IS NULL AND expires_at <= %s), "
            "count(*) FILTER (WHERE forgotten_at IS NULL AND superseded_by IS NOT NULL) "
            "FROM memories",
            (now,),
        ).fetchone()
        live, forgotten, expired, superseded = (int(v) for v in row) if row else (0, 0, 0, 0)
        by_agent: dict[str, tuple[int, list[str]]] = {}
        for agent, count in self.conn.execute(
            "SELECT agent, count(*) FROM memories WHERE forgotten_at IS NULL "
            'GROUP BY agent ORDER BY agent COLLATE "C"'
        ):
            by_agent[agent] = (int(count), [])
        for agent, session in self.conn.execute(
            'SELECT DISTINCT agent COLLATE "C", session_id FROM memories '
            "WHERE forgotten_at IS NULL AND session_id IS NOT NULL ORDER BY 1, 2"
        ):
            by_agent[agent][1].append(session)
        return {
            "live": live, "forgotten": forgotten, "expired": expired, "superseded": superseded,
            "by_agent": by_agent,
            "by_namespace": self._counts("namespace"),
            "by_tier": self._counts("tier"),
        }  # fmt: skip

    def _counts(self, column: str) -> dict[str, int]:
        query = sql.SQL(
            "SELECT {c}, count(*) FROM memories WHERE forgotten_at IS NULL GROUP BY {c} "
            'ORDER BY {c} COLLATE "C"'
        ).format(c=sql.Identifier(column))
        return {str(v): int(n) for v, n in self.conn.execute(query)}

    def live_count(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM memories WHERE forgotten_at IS NULL")
        return int(row.fetchone()[0])  # type: ignore[index]

    def forgotten_keys(self) -> list[int]:
        rows = self.conn.execute("SELECT key FROM memories WHERE forgotten_at IS NOT NULL")
        return [int(r[0]) for r in rows]

    def contents_after(self, after: int, limit: int) -> list[tuple[int, str]]:
        rows = self.conn.execute(
            "SELECT key, content FROM memories WHERE key > %s AND forgotten_at IS NULL "
            "ORDER BY key LIMIT %s",
            (after, limit),
        )
        return [(int(k), c) for k, c in rows]

    def export_page(self, after: int, limit: int) -> list[dict[str, Any]]:
        return records.export_page(self.conn, after, limit)


class PgRecordWrites(PgRecords):
    """:class:`~embedmind.backend.protocol.RecordWrites` over PostgreSQL."""

    _held = " ORDER BY key FOR UPDATE"
    """The rows a write finds are locked until it ends (``RecordWrites.find_many``).

    Writes are READ COMMITTED: without the lock, two writers superseding one
    memory both read it unsuperseded and both went on (a fork), and two
    upserts of one id each re-derived the postings from the content they had
    read, one of them stale. ``FOR UPDATE`` waits for a writer holding the row
    and returns the row as that writer committed it; key order makes two
    writers locking overlapping sets queue rather than deadlock. Row locks live
    in the rows themselves, so a large batch does not fill the lock table.
    """

    def insert_many(self, batch: Sequence[Prepared]) -> list[int]:
        return records.insert(self.conn, batch)

    def insert(self, prepared: Prepared) -> int:
        return records.insert(self.conn, [prepared])[0]

    def replace(self, key: int, prepared: Prepared, created_at: int) -> None:
        values = records.prepared_values(prepared)
        columns = [c for c in records.COLUMNS if c != "created_at"]
        assignments = sql.SQL(", ").join(_assignment(c) for c in columns)
        params = [v for c, v in zip(records.COLUMNS, values, strict=True) if c != "created_at"]
        # As SQLite's: a forgotten row comes back to life, reinforcement restarts,
        # a superseded row stays superseded (KEPT_WHEN_SUPERSEDED).
        self.conn.execute(
            sql.SQL(
                "UPDATE memories SET {}, access_count = 0, "
                "last_accessed_at = NULL, forgotten_at = NULL WHERE key = %s"
            ).format(assignments),
            [*params, key],
        )

    def index_text(self, docs: Sequence[tuple[int, str]]) -> None:
        lexical.index(self.conn, [key for key, _ in docs], session_context=self.context_on())

    def unindex_text(self, keys: Sequence[int]) -> None:
        lexical.unindex(self.conn, keys, session_context=self.context_on())

    def mark_forgotten(self, key: int, now: int) -> None:
        self.conn.execute(
            "UPDATE memories SET forgotten_at = %s, updated_at = %s WHERE key = %s",
            (now, now, key),
        )

    def delete(self, keys: Sequence[int]) -> None:
        # Postings, vectors, fragments, entities and edges go with the row (ON
        # DELETE CASCADE); the lexical statistics and the neighbours' context first.
        lexical.unindex(self.conn, keys, session_context=self.context_on())
        named = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT DISTINCT entity_id FROM memory_entities WHERE key = ANY(%s)", (list(keys),)
            )
        ]
        self.conn.execute("DELETE FROM memories WHERE key = ANY(%s)", (list(keys),))
        drop_unused_entities(self.conn, named)  # as an upsert's re-authored names

    def set_content(self, key: int, content: str, fingerprint: str, now: int) -> None:
        self.conn.execute(
            "UPDATE memories SET content = %s, fingerprint = %s, updated_at = %s WHERE key = %s",
            (content, fingerprint, now, key),
        )

    def restore_fields(self, key: int, fields: dict[str, Any]) -> None:
        records.restore_fields(self.conn, key, fields)

    def put_vectors(
        self, key: int, spans: Sequence[tuple[int, int]], blobs: Sequence[bytes],
        space: Space = Space.MEMORY,
    ) -> list[int]:  # fmt: skip
        return records.insert_vectors(self.conn, TABLES[space], key, spans, blobs)

    def put_vectors_many(
        self, items: Sequence[tuple[int, Sequence[tuple[int, int]], Sequence[bytes]]]
    ) -> list[int]:
        return records.insert_vectors_many(self.conn, TABLES[Space.MEMORY], items)

    def remove_vectors(self, key: int, space: Space = Space.MEMORY) -> int:
        query = sql.SQL("DELETE FROM {} WHERE key = %s").format(sql.Identifier(TABLES[space]))
        return self.conn.execute(query, (key,)).rowcount


class PgChannels(Facet):
    """:class:`~embedmind.backend.protocol.Channels` over PostgreSQL."""

    def text_top(self, text: str, selection: Selection, k: int) -> list[tuple[int, float]]:
        condition, params = self.condition(selection)
        return lexical.text_top(self.conn, text, condition, params, k)

    def vector_top(
        self, query: np.ndarray[Any, Any], selection: Selection, k: int, *,
        cap: int | None = 1, space: Space = Space.MEMORY, ef: int | None = None,
        exact_first: int = 0,
    ) -> list[VectorHit]:  # fmt: skip
        dims = schema.dimensions(self.conn)
        if dims is None:
            return []
        condition, params = self.condition(selection)
        hits, _ = vector_channel.vector_top(
            self.conn, vector_channel.Space(TABLES[space], dims), query, condition, params, k,
            cap=cap, ef=ef,
        )  # fmt: skip
        out = [VectorHit(h.vec_key, h.key, h.cosine) for h in hits]
        if exact_first and out:  # every hit exact: the contract's first ones among them
            vectors = self._vectors(TABLES[space], [h.vec_key for h in out])
            q = np.asarray(query, dtype=np.float32)
            out = [VectorHit(h.vec_key, h.key, float(vectors[h.vec_key] @ q)) for h in out]
            out.sort(key=lambda h: (-h.cosine, h.vec_key))
        return out

    def begin_vector_top(
        self, query: np.ndarray[Any, Any], selection: Selection, k: int, *,
        cap: int | None = 1, space: Space = Space.MEMORY, ef: int | None = None,
        exact_first: int = 0, overlap: bool = True,
    ) -> Callable[[], list[VectorHit]]:  # fmt: skip
        # The search is a statement on this session's connection, which runs
        # one statement at a time: nothing to overlap, so it runs when asked.
        del overlap
        return functools.partial(
            self.vector_top, query, selection, k,
            cap=cap, space=space, ef=ef, exact_first=exact_first,
        )  # fmt: skip

    def _vectors(self, table: str, vec_keys: Sequence[int]) -> dict[int, np.ndarray[Any, Any]]:
        query = sql.SQL("SELECT vec_key, embedding::real[] FROM {} WHERE vec_key = ANY(%s)")
        rows = self.conn.execute(query.format(sql.Identifier(table)), (list(vec_keys),))
        return {int(v): np.asarray(e, dtype=np.float32) for v, e in rows}

    def cosines(self, query: np.ndarray[Any, Any], keys: Sequence[int]) -> dict[int, float]:
        rows = self.conn.execute(
            "SELECT key, max(1 - (embedding <=> %s::vector)) FROM memory_vectors "
            "WHERE key = ANY(%s) GROUP BY key",
            (vector_channel.vector_literal(query), list(keys)),
        )
        return {int(k): float(c) for k, c in rows}

    def text_ceiling(self, text: str) -> float:
        weights = lexical.weighted_terms(text, alias_rows.table(self.conn))
        return lexical.ceiling(self.conn, weights)

    def memory_vectors(self, keys: Sequence[int]) -> tuple[Any, Any]:
        return vector_channel.memory_vectors(self.conn, keys)

    def vector_count(self, space: Space = Space.MEMORY) -> int:
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(TABLES[space]))
        return int(self.conn.execute(query).fetchone()[0])  # type: ignore[index]

    def vector_rows(self, key: int, space: Space = Space.MEMORY) -> list[tuple[int, int, bytes]]:
        query = sql.SQL(
            'SELECT start, "end", embedding::real[] FROM {} WHERE key = %s ORDER BY vec_key'
        ).format(sql.Identifier(TABLES[space]))
        rows = self.conn.execute(query, (key,))
        return [(int(s), int(e), np.asarray(v, dtype="<f4").tobytes()) for s, e, v in rows]

    def lexical_terms(self, key: int, content: str, query: str) -> tuple[str, ...]:
        return lexical.context_terms(self.conn, key, content, query)

    def text_widened(
        self, text: str, selection: Selection, k: int, base: int
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], dict[int, str]]:
        condition, params = self.condition(selection)
        table = alias_rows.table(self.conn)
        return widening.text_widened(self.conn, text, table, condition, params, k, base)

    def text_statistics(self) -> tuple[int, int]:
        docs, _ = lexical.statistics(self.conn)
        row = self.conn.execute("SELECT count(DISTINCT term) FROM lex_postings").fetchone()
        return docs, int(row[0]) if row else 0

    def missing_vectors(self) -> tuple[int, ...]:
        rows = self.conn.execute(f"SELECT m.key FROM memories m WHERE {_MISSING} ORDER BY m.key")
        return tuple(int(r[0]) for r in rows)

    def missing_vector_count(self) -> int:
        row = self.conn.execute(f"SELECT count(*) FROM memories m WHERE {_MISSING}").fetchone()
        return int(row[0]) if row else 0

    def missing_contents(
        self, after: int = 0, limit: int = -1, keys: Sequence[int] | None = None
    ) -> list[tuple[int, str]]:
        only = "" if keys is None else "AND m.key = ANY(%s) "
        params: list[Any] = [after] + ([] if keys is None else [[int(k) for k in keys]])
        rows = self.conn.execute(
            f"SELECT m.key, m.content FROM memories m WHERE m.key > %s {only}AND {_MISSING} "
            "ORDER BY m.key LIMIT %s",
            [*params, None if limit < 0 else limit],
        )
        return [(int(k), str(c)) for k, c in rows]


_MISSING = "m.key = ANY(ARRAY(SELECT key FROM vectorless)) AND m.forgotten_at IS NULL"
"""Live memories without a vector (written with no embedder): the ``vectorless``
table's keys (schema migration 5) read once, then looked up by key, so a store
whose memories all have vectors answers without a scan."""


class PgMeta(Facet):
    """:class:`~embedmind.backend.protocol.MetaWrites` over PostgreSQL."""

    def get(self, key: str) -> str | None:
        return self.meta_value(key)

    def identity(self) -> dict[str, str]:
        value = self.meta_value("embedder")
        return {} if value is None else dict(json.loads(value))

    def set(self, key: str, value: str | None) -> None:
        if value is None:
            self.conn.execute("DELETE FROM meta WHERE key = %s", (key,))
        else:
            self.conn.execute(
                "INSERT INTO meta VALUES (%s, to_jsonb(%s::text)) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def write_identity(self, identity: dict[str, str]) -> None:
        if "dims" in identity:
            schema.record_dimensions(self.conn, int(identity["dims"]))
        self.set("embedder", json.dumps(identity, sort_keys=True))


class PgSessions(Facet):
    """:class:`~embedmind.backend.protocol.SessionWrites` over PostgreSQL."""

    def context_enabled(self) -> bool:
        return self.context_on()

    def dates_enabled(self) -> bool:
        return lexical.dates_on(self.conn)

    def neighbours(self, keys: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        return lexical.dialog_links(self.conn, keys)

    def session_ids(self, keys: Sequence[int]) -> dict[int, str]:
        rows = self.conn.execute(
            "SELECT key, session_id FROM memories WHERE key = ANY(%s) AND session_id IS NOT NULL",
            (list(keys),),
        )
        return {int(k): str(s) for k, s in rows}

    def set_context(self, on: bool) -> None:
        if on == self.context_on():
            return
        PgMeta(self.conn, self._compiled).set(CONTEXT_KEY, "true" if on else "false")
        lexical.rebuild(self.conn, session_context=on)

    def set_dates(self, on: bool) -> None:
        if on == lexical.dates_on(self.conn):
            return
        PgMeta(self.conn, self._compiled).set(lexical.DATES_KEY, "true" if on else "false")
        lexical.rebuild(self.conn, session_context=self.context_on())


class PgRead:
    """A read snapshot (:class:`~embedmind.backend.protocol.ReadSession`)."""

    def __init__(self, conn: Conn) -> None:
        compiled: dict[int, tuple[Selection, Condition]] = {}
        self.conn = conn
        self.records: PgRecords = self._records(conn, compiled)
        self.channels = PgChannels(conn, compiled)
        self.meta = PgMeta(conn, compiled)
        self.sessions = PgSessions(conn, compiled)
        self.graph = PgGraph(conn, compiled)
        self.fragments = PgFragments(conn, compiled)
        self.lifecycle = PgLifecycle(conn, compiled)
        self.aliases = PgAliases(conn, compiled)

    def _records(self, conn: Conn, compiled: dict[int, tuple[Selection, Condition]]) -> PgRecords:
        return PgRecords(conn, compiled)


class PgWrite(PgRead):
    """One write transaction (:class:`~embedmind.backend.protocol.WriteSession`)."""

    records: PgRecordWrites

    def _records(
        self, conn: Conn, compiled: dict[int, tuple[Selection, Condition]]
    ) -> PgRecordWrites:
        return PgRecordWrites(conn, compiled)

    def save_caches(self, *, vector_save_after: int) -> None:
        """Nothing to save: the indexes live in the server, changed in the transaction."""

    def forget_caches(self) -> None:
        """Nothing to forget: no per-process cache files."""
