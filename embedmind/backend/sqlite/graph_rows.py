"""SQL for the graph layer: entities, typed relations, supersession and namespace links.

Relations are stored once, ``(src, kind, dst)`` between memory keys, and read
in both directions through two indexes. Entities are deduplicated names
linked to memories. Liveness is never trusted to the graph: every read joins
the memories table and drops forgotten ends. A name or kind that is not UTF-8
in the file is a :class:`~embedmind.errors.DamagedRecordError` naming the
memory it belongs to (:mod:`embedmind.backend.graph_values`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from embedmind.backend import graph_values
from embedmind.backend.graph_values import ENTITY_NOT_UTF8, ID_NOT_UTF8, KIND_NOT_UTF8
from embedmind.backend.sqlite.connection import fetch_one
from embedmind.errors import DamagedRecordError


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
    """Forget a re-authored memory's entities and outgoing relations, except ``keep_kind``.

    Its names no other memory carries go, as a delete's do (:func:`_unlink_entities`).
    """
    _unlink_entities(conn, key)
    conn.execute("DELETE FROM relations WHERE src = ? AND kind <> ?", (key, keep_kind))


def drop_memory(conn: apsw.Connection, key: int) -> None:
    """Remove a memory's entity links and relations (both directions); prune orphan names."""
    _unlink_entities(conn, key)
    conn.execute("DELETE FROM relations WHERE src = ? OR dst = ?", (key, key))


def _unlink_entities(conn: apsw.Connection, key: int) -> None:
    """Detach a memory's entity names and delete those no memory carries any more.

    A name left behind would stay live for ever, out of ``vacuum``'s reach: a
    name written only in a memory that was rewritten or deleted must go with
    it. Only the memory's own names are checked, one index lookup each. The
    same names written again by an upsert come back as new rows.
    """
    named: list[Any] = conn.execute(
        "DELETE FROM memory_entities WHERE key = ? RETURNING entity_id", (key,)
    ).fetchall()
    if not named:
        return
    conn.execute(
        "DELETE FROM entities WHERE entity_id IN (SELECT value FROM json_each(?)) AND NOT EXISTS "
        "(SELECT 1 FROM memory_entities me WHERE me.entity_id = entities.entity_id)",
        (json.dumps([r[0] for r in named]),),
    )


_EDGES = (
    "SELECT r.dst, CAST(r.kind AS {t}), 1, r.src FROM relations r JOIN memories m ON m.key = r.dst "
    "WHERE r.src = ? AND m.forgotten_at IS NULL "
    "UNION ALL "
    "SELECT r.src, CAST(r.kind AS {t}), 0, r.src FROM relations r JOIN memories m ON m.key = r.src "
    "WHERE r.dst = ? AND m.forgotten_at IS NULL"
)


def edges(conn: apsw.Connection, key: int) -> list[Edge]:
    """Relations of ``key`` whose other end is not forgotten, both directions.

    Raises:
        DamagedRecordError: Naming the memory a relation leaves, when its kind
            is not UTF-8.
    """
    rows = _checked(conn, _EDGES, (key, key), lambda row: (row[3], KIND_NOT_UTF8))
    return [Edge(int(o), str(k), bool(d)) for o, k, d, _ in rows]


def entity_names(conn: apsw.Connection, key: int) -> list[str]:
    """The entity names of a memory, sorted.

    Raises:
        DamagedRecordError: Naming the memory, when one of its names is not UTF-8.
    """
    rows = _checked(
        conn,
        "SELECT CAST(e.name AS {t}) FROM memory_entities me JOIN entities e USING (entity_id) "
        "WHERE me.key = ? ORDER BY e.name",
        (key,),
        lambda row: (key, ENTITY_NOT_UTF8),
    )
    return [str(r[0]) for r in rows]


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
    """``(key, id)`` of the memories that ``memory_id`` superseded directly.

    Raises:
        DamagedRecordError: Naming (by key) a predecessor whose id is not UTF-8.
    """
    rows = _checked(
        conn,
        "SELECT key, CAST(id AS {t}) FROM memories WHERE superseded_by = ? "
        "AND forgotten_at IS NULL ORDER BY created_at, key",
        (memory_id,),
        lambda row: (int(row[0]), ID_NOT_UTF8),
    )
    return [(int(k), str(i)) for k, i in rows]


def mark_superseded(conn: apsw.Connection, key: int, by: str, valid_to: int, now: int) -> bool:
    """Flag a memory as replaced by ``by`` unless another replaced it; whether it now is.

    Its validity ends at ``valid_to``. Marking again by the same ``by`` (an
    upsert of the new version) is allowed; by another memory it is not: that
    would leave two current versions of one fact.
    """
    conn.execute(
        "UPDATE memories SET superseded_by = ?, valid_to = ?, updated_at = ? "
        "WHERE key = ? AND (superseded_by IS NULL OR superseded_by = ?)",
        (by, valid_to, now, key, by),
    )
    return bool(conn.changes())


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
    """``(kind, target id, created_at)`` of a memory's stored relations, sorted.

    Raises:
        DamagedRecordError: Naming the memory when a relation's kind is not
            UTF-8 or its time does not decode (the target, by key, when its id
            is not UTF-8).
    """
    rows = _checked(
        conn,
        "SELECT CAST(r.kind AS {t}), CAST(m.id AS {t}), r.created_at, r.dst FROM relations r "
        "JOIN memories m ON m.key = r.dst WHERE r.src = ? ORDER BY r.kind, m.id",
        (key,),
        lambda row: (key, KIND_NOT_UTF8) if _undecodable(row[0]) else (row[3], ID_NOT_UTF8),
    )
    return graph_values.relations([r[:3] for r in rows], lambda: _names(conn, [key])[0])


def add_relation_rows(conn: apsw.Connection, rows: Sequence[tuple[int, str, int, int]]) -> None:
    """Insert ``(src, kind, dst, created_at)`` relations, ignoring ones already there."""
    conn.executemany(
        "INSERT OR IGNORE INTO relations (src, kind, dst, created_at) VALUES (?, ?, ?, ?)", rows
    )


def _checked(
    conn: apsw.Connection,
    template: str,
    params: Sequence[Any],
    blame: Callable[[Sequence[Any]], tuple[int, str]],
) -> list[Any]:
    """The rows of ``template``, its text read as ``{t}``; refuse text that is not UTF-8.

    apsw raises a raw ``UnicodeDecodeError`` for such a value: it is traced to
    its rows by a second, byte-wise read of the same query (``{t}`` = BLOB),
    only then. ``blame`` gives such a row's ``(memory key, reason)``.

    Raises:
        DamagedRecordError: Naming the memories ``blame`` gives, by id.
    """
    try:
        return conn.execute(template.format(t="TEXT"), params).fetchall()
    except UnicodeDecodeError:
        raw = conn.execute(template.format(t="BLOB"), params).fetchall()
    blamed = dict(blame(row) for row in raw if any(_undecodable(v) for v in row))
    names = _names(conn, list(blamed))
    reasons = set(blamed.values())
    reason = (
        reasons.pop()
        if len(reasons) == 1
        else "; ".join(f"{n}: {r}" for n, r in zip(names, blamed.values(), strict=True))
    )
    raise DamagedRecordError(names, reason)


def _undecodable(value: object) -> bool:
    if not isinstance(value, bytes):
        return False
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _names(conn: apsw.Connection, keys: Sequence[int]) -> list[str]:
    """The ids of ``keys``, in order; ``"key:N"`` for one whose id is not UTF-8."""
    rows: list[Any] = conn.execute(
        "SELECT key, CAST(id AS BLOB) FROM memories WHERE key IN (SELECT value FROM json_each(?))",
        (json.dumps([int(k) for k in keys]),),
    ).fetchall()
    ids = dict(rows)
    return [
        f"key:{k}" if ids.get(k) is None or _undecodable(ids[k]) else bytes(ids[k]).decode()
        for k in keys
    ]
