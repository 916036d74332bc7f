"""SQL for the graph layer: entities, typed relations, supersession and namespace links.

Relations are stored once, ``(src, kind, dst)`` between memory keys, and read
in both directions through two indexes. Entities are deduplicated names
linked to memories. Liveness is never trusted to the graph: every read joins
the memories table and drops forgotten ends.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from embedmind.backend.sqlite.connection import fetch_one


@dataclass(frozen=True)
class Edge:
    """One relation seen from a memory."""

    other: int
    kind: str
    outgoing: bool


def add_entities(conn: apsw.Connection, key: int, names: Sequence[str]) -> None:
    """Attach entity names to a memory (creating the names as needed)."""
    if not names:
        return
    conn.executemany("INSERT OR IGNORE INTO entities (name) VALUES (?)", [(n,) for n in names])
    conn.execute(
        "INSERT OR IGNORE INTO memory_entities (entity_id, key) "
        "SELECT entity_id, ? FROM entities WHERE name IN (SELECT value FROM json_each(?))",
        (key, json.dumps(list(names), ensure_ascii=False)),
    )


def add_relations(
    conn: apsw.Connection, key: int, edges: Sequence[tuple[str, int]], now: int
) -> None:
    """Add ``(kind, target key)`` relations from the memory ``key``."""
    conn.executemany(
        "INSERT OR IGNORE INTO relations (src, kind, dst, created_at) VALUES (?, ?, ?, ?)",
        [(key, kind, dst, now) for kind, dst in edges],
    )


def replace_outgoing(conn: apsw.Connection, key: int, keep_kind: str) -> None:
    """Forget a re-authored memory's entities and outgoing relations, except ``keep_kind``."""
    conn.execute("DELETE FROM memory_entities WHERE key = ?", (key,))
    conn.execute("DELETE FROM relations WHERE src = ? AND kind <> ?", (key, keep_kind))


def drop_memory(conn: apsw.Connection, key: int) -> None:
    """Remove a memory's entity links and relations (both directions); prune orphan names."""
    conn.execute("DELETE FROM memory_entities WHERE key = ?", (key,))
    conn.execute("DELETE FROM relations WHERE src = ? OR dst = ?", (key, key))
    conn.execute(
        "DELETE FROM entities WHERE entity_id NOT IN (SELECT entity_id FROM memory_entities)"
    )


def edges(conn: apsw.Connection, key: int) -> list[Edge]:
    """Relations of ``key`` whose other end is not forgotten, both directions."""
    rows = conn.execute(
        "SELECT r.dst, r.kind, 1 FROM relations r JOIN memories m ON m.key = r.dst "
        "WHERE r.src = ? AND m.forgotten_at IS NULL "
        "UNION ALL "
        "SELECT r.src, r.kind, 0 FROM relations r JOIN memories m ON m.key = r.src "
        "WHERE r.dst = ? AND m.forgotten_at IS NULL",
        (key, key),
    )
    return [Edge(int(o), str(k), bool(d)) for o, k, d in rows]


def entity_names(conn: apsw.Connection, key: int) -> list[str]:
    """The entity names of a memory, sorted."""
    return [
        str(r[0])
        for r in conn.execute(
            "SELECT e.name FROM memory_entities me JOIN entities e USING (entity_id) "
            "WHERE me.key = ? ORDER BY e.name",
            (key,),
        )
    ]


def entity_member_keys(conn: apsw.Connection, name: str) -> list[int]:
    """Keys of live memories tagged with ``name``, in time order."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT m.key FROM entities e JOIN memory_entities me USING (entity_id) "
            "JOIN memories m ON m.key = me.key WHERE e.name = ? AND m.forgotten_at IS NULL "
            "ORDER BY m.created_at, m.key",
            (name,),
        )
    ]


def counts(conn: apsw.Connection) -> tuple[int, int]:
    """``(entities, relations)`` stored."""
    entities = int(fetch_one(conn, "SELECT count(*) FROM entities")[0])
    relations = int(fetch_one(conn, "SELECT count(*) FROM relations")[0])
    return entities, relations


def predecessors(conn: apsw.Connection, memory_id: str) -> list[tuple[int, str]]:
    """``(key, id)`` of the memories that ``memory_id`` superseded directly."""
    return [
        (int(k), str(i))
        for k, i in conn.execute(
            "SELECT key, id FROM memories WHERE superseded_by = ? AND forgotten_at IS NULL "
            "ORDER BY created_at, key",
            (memory_id,),
        )
    ]


def mark_superseded(conn: apsw.Connection, key: int, by: str, valid_to: int, now: int) -> None:
    """Flag a memory as replaced by ``by``; its validity ends at ``valid_to``."""
    conn.execute(
        "UPDATE memories SET superseded_by = ?, valid_to = ?, updated_at = ? WHERE key = ?",
        (by, valid_to, now, key),
    )


def restore(conn: apsw.Connection, key: int, now: int) -> None:
    """Clear supersession and contradiction: the memory is current again."""
    conn.execute(
        "UPDATE memories SET superseded_by = NULL, valid_to = NULL, contradicted_by = NULL, "
        "confidence = coalesce(prior_confidence, confidence), prior_confidence = NULL, "
        "updated_at = ? WHERE key = ?",
        (now, key),
    )


def mark_contradicted(
    conn: apsw.Connection, key: int, by: str, confidence: float, now: int
) -> None:
    """End a fact's validity now, keeping the old confidence and the contradicting id."""
    conn.execute(
        "UPDATE memories SET valid_to = coalesce(valid_to, ?), contradicted_by = ?, "
        "prior_confidence = coalesce(prior_confidence, confidence), confidence = ?, "
        "updated_at = ? WHERE key = ?",
        (now, by, confidence, now, key),
    )


def set_confidence(conn: apsw.Connection, key: int, confidence: float, now: int) -> None:
    """Set a memory's confidence in place."""
    conn.execute(
        "UPDATE memories SET confidence = ?, updated_at = ? WHERE key = ?", (confidence, now, key)
    )


def outgoing(conn: apsw.Connection, key: int) -> list[tuple[str, str, int]]:
    """``(kind, target id, created_at)`` of a memory's stored relations, sorted."""
    return [
        (str(k), str(i), int(c))
        for k, i, c in conn.execute(
            "SELECT r.kind, m.id, r.created_at FROM relations r JOIN memories m ON m.key = r.dst "
            "WHERE r.src = ? ORDER BY r.kind, m.id",
            (key,),
        )
    ]


def add_relation_rows(conn: apsw.Connection, rows: Sequence[tuple[int, str, int, int]]) -> None:
    """Insert ``(src, kind, dst, created_at)`` relations, ignoring ones already there."""
    conn.executemany(
        "INSERT OR IGNORE INTO relations (src, kind, dst, created_at) VALUES (?, ?, ?, ?)", rows
    )
