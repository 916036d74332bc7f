# The facets implement the documented methods of embedmind/backend/protocol.py (as the
# SQLite ones, which pyproject exempts the same way).
# ruff: noqa: D102
"""The PostgreSQL backend's graph, fragment and lifecycle facets (aliases: :mod:`.aliases`).

The SQL mirrors the SQLite backend's row modules statement for statement
(``INSERT OR IGNORE`` is ``ON CONFLICT DO NOTHING``, ``INSERT OR REPLACE`` is
``ON CONFLICT ... DO UPDATE``). Two additions PostgreSQL needs: a TTL sweep
takes its rows ``FOR UPDATE SKIP LOCKED``, so sweeps from several servers at
once split the expired rows instead of queueing on them; and a move keeps
session context by taking the moved memories out of the text index before the
namespace changes and putting them back after it. The relation times and
link rows read go through :mod:`embedmind.backend.graph_values`, which names
one changed by hand as damaged.
"""

from __future__ import annotations

from collections.abc import Sequence

from embedmind.backend import graph_values
from embedmind.backend.postgres import alias_rows, lexical, records
from embedmind.backend.postgres.facet import TABLES, Conn, Facet
from embedmind.backend.values import Edge, Link, Space


def drop_unused_entities(conn: Conn, entity_ids: Sequence[int]) -> None:
    """Delete those of the names ``entity_ids`` that no memory carries any more.

    Called once a memory's links to them are gone (a delete, an upsert that
    re-authors its entities): a name left behind would stay live for ever, out
    of ``vacuum``'s reach. Only these names are checked, not every entity of the
    store; the same names written again by an upsert come back as new rows.
    """
    if not entity_ids:
        return
    ids = sorted(set(entity_ids))
    # Locked before the check: a writer that has just linked one of them holds a
    # key-share lock on it (its foreign key), so this waits for its commit and
    # the check then sees its link. Unlocked, the name would be deleted under
    # it and its committed link would go too, by cascade.
    conn.execute(
        "SELECT 1 FROM entities WHERE entity_id = ANY(%s) ORDER BY entity_id FOR UPDATE", (ids,)
    )
    conn.execute(
        "DELETE FROM entities e WHERE e.entity_id = ANY(%s) AND NOT EXISTS "
        "(SELECT 1 FROM memory_entities me WHERE me.entity_id = e.entity_id)",
        (ids,),
    )


class PgGraph(Facet):
    """:class:`~embedmind.backend.protocol.GraphWrites` over PostgreSQL."""

    def edges(self, key: int) -> list[Edge]:
        rows = self.conn.execute(
            "SELECT r.dst, r.kind, true FROM relations r JOIN memories m ON m.key = r.dst "
            "WHERE r.src = %s AND m.forgotten_at IS NULL "
            "UNION ALL "
            "SELECT r.src, r.kind, false FROM relations r JOIN memories m ON m.key = r.src "
            "WHERE r.dst = %s AND m.forgotten_at IS NULL",
            (key, key),
        )
        return [Edge(int(o), str(k), bool(d)) for o, k, d in rows]

    def entity_names(self, key: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT e.name FROM memory_entities me JOIN entities e USING (entity_id) "
            "WHERE me.key = %s ORDER BY e.name",
            (key,),
        )
        return [str(r[0]) for r in rows]

    def entity_members(self, name: str) -> list[int]:
        rows = self.conn.execute(
            "SELECT m.key FROM entities e JOIN memory_entities me USING (entity_id) "
            "JOIN memories m ON m.key = me.key WHERE e.name = %s AND m.forgotten_at IS NULL "
            "ORDER BY m.created_at, m.key",
            (name,),
        )
        return [int(r[0]) for r in rows]

    def predecessors(self, memory_id: str) -> list[tuple[int, str]]:
        rows = self.conn.execute(
            "SELECT key, id FROM memories WHERE superseded_by = %s AND forgotten_at IS NULL "
            "ORDER BY created_at, key",
            (memory_id,),
        )
        return [(int(k), str(i)) for k, i in rows]

    def outgoing(self, key: int) -> list[tuple[str, str, int]]:
        rows = self.conn.execute(
            "SELECT r.kind, m.id, r.created_at FROM relations r JOIN memories m ON m.key = r.dst "
            "WHERE r.src = %s ORDER BY r.kind, m.id",
            (key,),
        )
        return graph_values.relations(rows.fetchall(), lambda: self._id_of(key))

    def _id_of(self, key: int) -> str:
        row = self.conn.execute("SELECT id FROM memories WHERE key = %s", (key,)).fetchone()
        return f"key:{key}" if row is None else str(row[0])

    def counts(self) -> tuple[int, int]:
        row = self.conn.execute(
            "SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM relations)"
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    # -- writes

    def add_entities(self, key: int, names: Sequence[str]) -> None:
        if not names:
            return
        # DO UPDATE ... WHERE false writes nothing but locks each existing name
        # until commit: a concurrent upsert or delete that prunes unused names
        # (drop_unused_entities) then waits and sees this memory's link, where
        # DO NOTHING let it delete the name between these two statements and the
        # link below silently found no row to point at.
        self.conn.execute(
            "INSERT INTO entities (name) SELECT n FROM unnest(%s::text[]) n ORDER BY n "
            "ON CONFLICT (name) DO UPDATE SET name = excluded.name WHERE false",
            (sorted(set(names)),),
        )
        self.conn.execute(
            "INSERT INTO memory_entities (entity_id, key) "
            "SELECT entity_id, %s FROM entities WHERE name = ANY(%s) ON CONFLICT DO NOTHING",
            (key, list(names)),
        )

    def add_relations(self, key: int, edges: Sequence[tuple[str, int]], now: int) -> None:
        self.add_relation_rows([(key, kind, dst, now) for kind, dst in edges])

    def add_relation_rows(self, rows: Sequence[tuple[int, str, int, int]]) -> None:
        if not rows:
            return
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO relations (src, kind, dst, created_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                list(rows),
            )

    def replace_outgoing(self, key: int, keep_kind: str) -> None:
        named = self.conn.execute(
            "DELETE FROM memory_entities WHERE key = %s RETURNING entity_id", (key,)
        ).fetchall()
        # Its names no other memory carries go, as a delete's do.
        drop_unused_entities(self.conn, [int(r[0]) for r in named])
        self.conn.execute("DELETE FROM relations WHERE src = %s AND kind <> %s", (key, keep_kind))

    def mark_superseded(self, key: int, by: str, valid_to: int, now: int) -> bool:
        # The condition is checked on the row as the last writer committed it
        # (READ COMMITTED re-reads a row it waited for): a check and a write in one.
        return bool(
            self.conn.execute(
                "UPDATE memories SET superseded_by = %s, valid_to = %s, updated_at = %s "
                "WHERE key = %s AND (superseded_by IS NULL OR superseded_by = %s)",
                (by, valid_to, now, key, by),
            ).rowcount
        )

    def restore(self, key: int, now: int) -> None:
        self.conn.execute(
            "UPDATE memories SET superseded_by = NULL, valid_to = NULL, contradicted_by = NULL, "
            "confidence = coalesce(prior_confidence, confidence), prior_confidence = NULL, "
            "updated_at = %s WHERE key = %s",
            (now, key),
        )

    def mark_contradicted(self, key: int, by: str, confidence: float, now: int) -> None:
        self.conn.execute(
            "UPDATE memories SET valid_to = coalesce(valid_to, %s), contradicted_by = %s, "
            "prior_confidence = coalesce(prior_confidence, confidence), confidence = %s, "
            "updated_at = %s WHERE key = %s",
            (now, by, confidence, now, key),
        )

    def set_confidence(self, key: int, confidence: float, now: int) -> None:
        self.conn.execute(
            "UPDATE memories SET confidence = %s, updated_at = %s WHERE key = %s",
            (confidence, now, key),
        )


class PgFragments(Facet):
    """:class:`~embedmind.backend.protocol.FragmentWrites` over PostgreSQL."""

    def details(self, vec_keys: Sequence[int]) -> dict[int, tuple[str, int, int, str | None]]:
        rows = self.conn.execute(
            'SELECT f.vec_key, m.id, f.start, f."end", f.text FROM fragments f '
            "JOIN memories m ON m.key = f.key WHERE f.vec_key = ANY(%s)",
            (list(vec_keys),),
        )
        return {int(v): (str(i), int(s), int(e), t) for v, i, s, e, t in rows}

    def counts(self) -> tuple[int, int]:
        row = self.conn.execute("SELECT count(DISTINCT key), count(*) FROM fragments").fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def source(self, key: int) -> str | None:
        row = self.conn.execute(
            "SELECT fingerprint FROM fragment_sources WHERE key = %s", (key,)
        ).fetchone()
        return None if row is None else str(row[0])

    def texts_of(self, key: int) -> list[tuple[int, int, str | None]]:
        rows = self.conn.execute(
            'SELECT start, "end", text FROM fragments WHERE key = %s ORDER BY vec_key', (key,)
        )
        return [(int(s), int(e), t) for s, e, t in rows]

    def texts_after(
        self, after: int, limit: int
    ) -> list[tuple[int, list[tuple[int, int, str | None]]]]:
        out: dict[int, list[tuple[int, int, str | None]]] = {}
        rows = self.conn.execute(
            'SELECT key, start, "end", text FROM fragments WHERE key > %s '
            "ORDER BY key, vec_key LIMIT %s",
            (after, limit),
        )
        for key, start, end, text in rows:
            out.setdefault(int(key), []).append((int(start), int(end), text))
        if out:
            last = next(reversed(out))  # the LIMIT may have cut the last record: read it whole
            out[last] = self.texts_of(last)
        return list(out.items())

    def given_as_vectors(self) -> tuple[int, int, list[str]]:
        row = self.conn.execute(
            "SELECT count(*), count(DISTINCT key) FROM fragments WHERE text IS NULL"
        ).fetchone()
        ids = self.conn.execute(
            "SELECT DISTINCT m.id FROM fragments f JOIN memories m ON m.key = f.key "
            "WHERE f.text IS NULL ORDER BY m.id LIMIT 5"
        )
        return (int(row[0]), int(row[1]), [str(r[0]) for r in ids]) if row else (0, 0, [])

    def add(
        self,
        key: int,
        spans: Sequence[tuple[int, int]],
        blobs: Sequence[bytes],
        texts: Sequence[str | None],
    ) -> int:
        table = TABLES[Space.FRAGMENTS]
        return len(records.insert_vectors(self.conn, table, key, spans, blobs, texts))

    def set_source(self, key: int, fingerprint: str | None) -> None:
        if fingerprint is None:
            self.conn.execute("DELETE FROM fragment_sources WHERE key = %s", (key,))
        else:
            self.conn.execute(
                "INSERT INTO fragment_sources (key, fingerprint) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint",
                (key, fingerprint),
            )


class PgLifecycle(Facet):
    """:class:`~embedmind.backend.protocol.LifecycleWrites` over PostgreSQL."""

    def expired(self, now: int, limit: int) -> list[tuple[int, str, str]]:
        # SKIP LOCKED: sweeps from several servers at once take different rows.
        lock = "" if self.conn.read_only else " FOR UPDATE SKIP LOCKED"
        rows = self.conn.execute(
            "SELECT key, id, tier FROM memories WHERE expires_at IS NOT NULL AND expires_at <= %s "
            f"ORDER BY expires_at, key LIMIT %s{lock}",
            (now, limit),
        )
        return [(int(k), str(i), str(t)) for k, i, t in rows]

    def still_expired(self, key: int, now: int) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM memories WHERE key = %s AND expires_at IS NOT NULL AND expires_at <= %s",
            (key, now),
        ).fetchone()
        return row is not None

    def namespace_activity(self) -> list[tuple[str, int, int]]:
        rows = self.conn.execute(
            "SELECT namespace, count(*), max(updated_at) FROM memories "
            "WHERE forgotten_at IS NULL GROUP BY namespace ORDER BY namespace"
        )
        return [(str(n), int(c), int(u)) for n, c, u in rows]

    def keys_in_namespace(self, namespace: str) -> list[int]:
        rows = self.conn.execute("SELECT key FROM memories WHERE namespace = %s", (namespace,))
        return [int(r[0]) for r in rows]

    def oldest_beyond(self, namespace: str, tier: str | None, cap: int) -> list[int]:
        rows = self.conn.execute(
            "SELECT key FROM memories WHERE namespace = %s AND (%s::text IS NULL OR tier = %s) "
            "AND forgotten_at IS NULL ORDER BY created_at DESC, key DESC OFFSET %s",
            (namespace, tier, tier, cap),
        )
        return [int(r[0]) for r in rows]

    def links(self, src: str | None) -> list[Link]:
        rows = self.conn.execute(
            "SELECT src, dst, tiers, note, created_at FROM namespace_links "
            "WHERE %s::text IS NULL OR src = %s ORDER BY src, dst",
            (src, src),
        )
        return [graph_values.to_link(row) for row in rows.fetchall()]

    # -- writes

    def reinforce(self, keys: Sequence[int], now: int, new_expiry: int | None) -> int:
        return self.conn.execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s, "
            "expires_at = CASE WHEN expires_at IS NOT NULL AND %s::bigint IS NOT NULL "
            "AND %s::bigint > expires_at THEN %s::bigint ELSE expires_at END "
            "WHERE key = ANY(%s) AND forgotten_at IS NULL",
            (now, new_expiry, new_expiry, new_expiry, list(keys)),
        ).rowcount

    def retier(self, key: int, tier: str, expires_at: int | None, now: int) -> None:
        self.conn.execute(
            "UPDATE memories SET tier = %s, expires_at = %s, updated_at = %s WHERE key = %s",
            (tier, expires_at, now, key),
        )

    def move(self, keys: Sequence[int], namespace: str, now: int) -> int:
        context = self.context_on()
        indexed = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT key FROM lex_docs WHERE key = ANY(%s)", (list(keys),)
            )
        ]
        table = alias_rows.table(self.conn)
        lexical.unindex(self.conn, indexed, session_context=context, table=table)
        moved = self.conn.execute(
            "UPDATE memories SET namespace = %s, updated_at = %s WHERE key = ANY(%s)",
            (namespace, now, list(keys)),
        ).rowcount
        lexical.index(self.conn, indexed, session_context=context, table=table)
        return moved

    def put_link(
        self, src: str, dst: str, tiers: Sequence[str] | None, note: str, created: int
    ) -> None:
        self.conn.execute(
            "INSERT INTO namespace_links (src, dst, tiers, note, created_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (src, dst) DO UPDATE SET "
            "tiers = excluded.tiers, note = excluded.note, created_at = excluded.created_at",
            (src, dst, None if tiers is None else list(tiers), note, created),
        )

    def delete_link(self, src: str, dst: str) -> bool:
        return bool(
            self.conn.execute(
                "DELETE FROM namespace_links WHERE src = %s AND dst = %s", (src, dst)
            ).rowcount
        )

    def rename_link_endpoints(self, old: str, new: str) -> None:
        for column in ("src", "dst"):
            other = "dst" if column == "src" else "src"
            # A pre-existing link wins a collision; the colliding old one is dropped
            # (never widen a grant), as in SQLite's UPDATE OR IGNORE + DELETE.
            collides = (
                f"SELECT 1 FROM namespace_links o WHERE o.{column} = %s AND o.{other} = l.{other}"
            )
            self.conn.execute(
                f"UPDATE namespace_links l SET {column} = %s "
                f"WHERE {column} = %s AND NOT EXISTS ({collides})",
                (new, old, new),
            )
            self.conn.execute(f"DELETE FROM namespace_links WHERE {column} = %s", (old,))
