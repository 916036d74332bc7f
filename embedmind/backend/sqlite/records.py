"""SQL for memory rows and their tags.

Each memory row has an integer ``key`` (never reused: ``AUTOINCREMENT``) that
the derived indexes use, and the caller-visible string ``id``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from embedmind.backend import memory_rows
from embedmind.backend.sqlite import integrity
from embedmind.backend.sqlite.connection import fetch_one, insert_json_rows
from embedmind.backend.sqlite.migrations import FINGERPRINT_KEY, fingerprint_key
from embedmind.backend.values import EXPORT_COLUMNS, KEPT_WHEN_SUPERSEDED
from embedmind.drafts import Prepared
from embedmind.errors import DamagedRecordError
from embedmind.model import Memory

_WRITE_COLUMNS = (
    "id, namespace, content, metadata, tags, tier, level, agent, session_id, created_at, "
    "updated_at, valid_from, valid_to, expires_at, confidence, fingerprint"
)


@dataclass(frozen=True)
class Existing:
    """What a write needs to know about a row that already holds an id."""

    key: int
    namespace: str
    content: str
    created_at: int
    forgotten: bool
    superseded_by: str | None = None


def next_write_seq(conn: apsw.Connection) -> int:
    """Bump and return the store's write sequence (one per write transaction)."""
    row = fetch_one(
        conn, "UPDATE counters SET value = value + 1 WHERE name = 'write_seq' RETURNING value"
    )
    return int(row[0])


_FIND_COLUMNS = (
    "key, namespace, CAST(content AS BLOB), created_at, forgotten_at, superseded_by, fingerprint"
)


def _existing(row: Sequence[Any]) -> Existing:
    # Content is read as bytes so that a damaged row can still be forgotten,
    # redacted or overwritten (the repairs). Damaged content comes back as a
    # string that equals no valid content, so a write of the original rewrites it.
    raw = bytes(row[2])
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        content = raw.decode("utf-8", "surrogateescape")
    else:
        if memory_rows.content_problem(content, row[6]) is not None:
            content += "\udcff"  # off its fingerprint: never taken for "unchanged"
    return Existing(row[0], row[1], content, row[3], row[4] is not None, row[5])


def find(conn: apsw.Connection, memory_id: str) -> Existing | None:
    """Look up the row holding ``memory_id``, forgotten or not."""
    row = conn.execute(
        f"SELECT {_FIND_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()
    return None if row is None else _existing(row)


def find_many(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, Existing]:
    """Look up the rows holding any of ``ids``, forgotten or not."""
    sql = f"SELECT id, {_FIND_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))"
    return {
        row[0]: _existing(row[1:])
        for row in conn.execute(sql, (json.dumps(list(ids), ensure_ascii=False),))
    }


def _values(p: Prepared) -> tuple[Any, ...]:
    # Most memories have no tags: skip the encoder (a bulk batch is 10,000 rows).
    tags = json.dumps(list(p.tags), ensure_ascii=False) if p.tags else "[]"
    return (
        p.id, p.namespace, p.content, p.metadata_json, tags, p.tier, p.level, p.agent,
        p.session_id, p.created_at, p.updated_at, p.valid_from, p.valid_to, p.expires_at,
        p.confidence, p.fingerprint,
    )  # fmt: skip


def insert(conn: apsw.Connection, p: Prepared) -> int:
    """Insert a new row and its tags; return its key."""
    row = fetch_one(
        conn,
        f"INSERT INTO memories ({_WRITE_COLUMNS}) VALUES ({', '.join('?' * 16)}) RETURNING key",
        _values(p),
    )
    key = int(row[0])
    _write_tags(conn, key, p.tags)
    return key


def insert_many(
    conn: apsw.Connection, batch: Sequence[Prepared], beside: Callable[[], object] | None = None
) -> list[int]:
    """Insert new rows (ids known to be free and distinct) and their tags; return their keys.

    The rows travel as JSON arrays (:func:`~embedmind.backend.sqlite.connection.insert_json_rows`),
    each one statement that holds no GIL while a thread running Python goes on beside it.
    ``beside`` is called once the first array is encoded (which needs the GIL),
    just before its statement: where to start such a thread's work.
    """
    keys: list[int] = []
    for i, chunk in enumerate(_json_chunks(batch)):
        sql, params = _insert_from_json([_values(p) for p in chunk])
        if i == 0 and beside is not None:
            beside()
        keys += insert_json_rows(conn, sql, params, len(chunk))
    tags = [(tag, key) for p, key in zip(batch, keys, strict=True) for tag in p.tags]
    if tags:
        conn.executemany("INSERT INTO memory_tags (tag, key) VALUES (?, ?)", tags)
    return keys


def _insert_from_json(rows: Sequence[tuple[Any, ...]]) -> tuple[str, tuple[Any, ...]]:
    """The ``INSERT`` of :func:`_values` rows, in their order, and its parameters.

    A column whose value every row shares is bound once; the others travel
    as one JSON array of arrays (``?1``). Extracting a value from a row's
    array costs SQLite about 1 µs, and a bulk load's rows mostly differ only
    in their id, content and fingerprint: extracting all 16 columns took
    half of the statement's time.
    """
    columns = list(zip(*rows, strict=True))
    params: list[Any] = [None]  # ?1, the JSON array, encoded below
    picks: list[str] = []
    varying: list[int] = []
    for i, column in enumerate(columns):
        if _shared(column):
            params.append(column[0])
            picks.append(f"?{len(params)}")
        else:
            picks.append(f"value ->> {len(varying)}")
            varying.append(i)
    params[0] = json.dumps([[row[i] for i in varying] for row in rows], ensure_ascii=False)
    sql = (
        f"INSERT INTO memories ({_WRITE_COLUMNS}) "
        f"SELECT {', '.join(picks)} FROM json_each(?1) ORDER BY key"
    )
    return sql, tuple(params)


def _shared(column: Sequence[Any]) -> bool:
    """Whether every value of ``column`` is its first, and of its type (``1 == 1.0 == True``)."""
    first = column[0]
    kind = type(first)
    return column.count(first) == len(column) and all(type(v) is kind for v in column)


JSON_CHUNK_CHARS = 4_000_000
"""Characters of content and metadata per insert statement.

JSON escapes a control character in six bytes, so a chunk's array stays
far below SQLite's limit on a bound string (a billion bytes), whatever the
text; a chunk always holds at least one row. A batch of chat messages is one chunk.
"""


def _json_chunks(batch: Sequence[Prepared]) -> Iterator[Sequence[Prepared]]:
    start, chars = 0, 0
    for i, p in enumerate(batch):
        size = len(p.content) + len(p.metadata_json)
        if i > start and chars + size > JSON_CHUNK_CHARS:
            yield batch[start:i]
            start, chars = i, 0
        chars += size
    if start < len(batch):
        yield batch[start:]


def replace(conn: apsw.Connection, key: int, p: Prepared, created_at: int) -> None:
    """Overwrite the row ``key`` in place (an upsert), keeping its original ``created_at``.

    A forgotten row comes back to life; reinforcement counters restart. A
    superseded row stays superseded, its validity window as the supersede
    closed it (:data:`~embedmind.backend.values.KEPT_WHEN_SUPERSEDED`).
    """
    values = list(_values(p))
    values[9] = created_at
    assignments = ", ".join(_assignment(c) for c in _WRITE_COLUMNS.split(", "))
    conn.execute(
        f"UPDATE memories SET {assignments}, access_count = 0, "
        "last_accessed_at = NULL, forgotten_at = NULL WHERE key = ?",
        (*values, key),
    )
    conn.execute("DELETE FROM memory_tags WHERE key = ?", (key,))
    _write_tags(conn, key, p.tags)


def _assignment(column: str) -> str:
    if column in KEPT_WHEN_SUPERSEDED:
        return f"{column} = CASE WHEN superseded_by IS NULL THEN ? ELSE {column} END"
    return f"{column} = ?"


def _write_tags(conn: apsw.Connection, key: int, tags: Sequence[str]) -> None:
    if tags:
        conn.executemany(
            "INSERT INTO memory_tags (tag, key) VALUES (?, ?)", [(t, key) for t in tags]
        )


def mark_forgotten(conn: apsw.Connection, key: int, now: int) -> None:
    """Tombstone the row ``key``."""
    conn.execute(
        "UPDATE memories SET forgotten_at = ?, updated_at = ? WHERE key = ?", (now, now, key)
    )


def delete(conn: apsw.Connection, key: int) -> None:
    """Remove the row ``key`` and its tags."""
    conn.execute("DELETE FROM memory_tags WHERE key = ?", (key,))
    conn.execute("DELETE FROM memories WHERE key = ?", (key,))


def checked_rows(
    conn: apsw.Connection,
    template: str,
    params: Sequence[Any],
    columns: tuple[str, ...] = memory_rows.FIELDS,
) -> list[Any]:
    """Run ``template`` (``{columns}``: ``columns`` of ``m``); refuse text that is not UTF-8.

    A TEXT value that is not UTF-8 (apsw's raw ``UnicodeDecodeError``) is
    traced to its rows by a second, byte-wise read of the same query, only
    then. ``columns`` begins with ``key, id``.

    Raises:
        DamagedRecordError: Naming every such memory among the rows.
    """
    try:
        return conn.execute(template.format(columns=_listed(columns)), params).fetchall()
    except UnicodeDecodeError:
        raw = conn.execute(template.format(columns=_listed(columns, raw=True)), params)
        raise DamagedRecordError(
            [_name(row) for row in raw if not _decodes(row)], "a text value is not valid UTF-8"
        ) from None


@functools.cache
def _listed(columns: tuple[str, ...], *, raw: bool = False) -> str:
    return ", ".join(
        f"CAST(m.{c} AS BLOB)" if raw and c in integrity.TEXT_COLUMNS else f"m.{c}" for c in columns
    )


def _decodes(row: Sequence[Any]) -> bool:
    try:
        for value in row:
            if isinstance(value, bytes):
                value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _name(row: Sequence[Any]) -> str:
    try:
        return bytes(row[1]).decode("utf-8")
    except UnicodeDecodeError:  # even the id is damaged: name the row by its key
        return f"key:{row[0]}"


def memories(
    conn: apsw.Connection, template: str, params: Sequence[Any]
) -> list[tuple[int, int, Memory]]:
    """``(created_at, key, memory)`` of each row :func:`checked_rows` reads, decoded.

    Raises:
        DamagedRecordError: Naming every damaged memory among the rows (text
            that is not UTF-8, content off its fingerprint, a value that does
            not decode: :mod:`embedmind.backend.memory_rows`).
    """
    rows = checked_rows(conn, template, params)
    decoded = memory_rows.to_memories(rows)
    return [(row[10], row[0], memory) for row, memory in zip(rows, decoded, strict=True)]


def select_by_ids(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, Memory]:
    """Load live (not forgotten) memories by id.

    Raises:
        DamagedRecordError: When one of them is damaged in the file.
    """
    return {
        memory.id: memory
        for _, _, memory in memories(
            conn,
            "SELECT {columns} FROM memories m WHERE m.id IN (SELECT value FROM json_each(?)) "
            "AND m.forgotten_at IS NULL",
            (json.dumps(list(ids), ensure_ascii=False),),
        )
    }


def select_by_keys(conn: apsw.Connection, keys: Sequence[int]) -> dict[int, Memory]:
    """Load memories by internal key.

    Raises:
        DamagedRecordError: When one of them is damaged in the file.
    """
    return {
        key: memory
        for _, key, memory in memories(
            conn,
            "SELECT {columns} FROM memories m WHERE m.key IN (SELECT value FROM json_each(?))",
            (json.dumps([int(k) for k in keys]),),
        )
    }


def keys_passing(
    conn: apsw.Connection, keys: Sequence[int], condition: str, params: Sequence[Any]
) -> set[int]:
    """Return the subset of ``keys`` whose rows satisfy ``condition``.

    Each key's row is read by its key and the condition checked on it, whatever
    the condition says. The statement is written so the planner cannot choose
    otherwise (measured on a store of 1M memories in one namespace):

    - ``CROSS JOIN`` fixes the join order, from the keys to their rows. With
      ``m.key IN (...)``, a namespace in the condition let the planner walk
      that namespace's index instead: 112-132 ms for 20 keys, against 0.5-0.7.
    - The condition is one opaque term, ``+(...)``. Split into its terms, a
      namespace term made each call cost what preparing the statement afresh
      does, though apsw's cache held it and SQLite counted no re-preparation
      (cause not found; the bytecode is the same): one key 34 µs, against
      28 µs prepared each time and 9 µs as one term; 14 keys 67 against 31 µs.
    """
    if not keys:
        return set()
    sql = (
        "SELECT m.key FROM json_each(?) AS j CROSS JOIN memories AS m "
        f"WHERE m.key = j.value AND +({condition})"
    )
    return {row[0] for row in conn.execute(sql, (json.dumps([int(k) for k in keys]), *params))}


def all_keys_passing(conn: apsw.Connection, condition: str, params: Sequence[Any]) -> list[int]:
    """Return every key whose row satisfies ``condition``."""
    return [
        row[0] for row in conn.execute(f"SELECT m.key FROM memories m WHERE {condition}", params)
    ]


def page(
    conn: apsw.Connection,
    condition: str,
    params: Sequence[Any],
    after: tuple[int, int] | None,
    limit: int,
) -> list[tuple[int, int, Memory]]:
    """One page of matching rows in (created_at, key) order, after the cursor ``after``."""
    cursor_sql, cursor_params = "1", []
    if after is not None:
        cursor_sql = "(m.created_at > ? OR (m.created_at = ? AND m.key > ?))"
        cursor_params = [after[0], after[0], after[1]]
    sql = (
        f"SELECT {{columns}} FROM memories m WHERE {cursor_sql} AND {condition} "
        "ORDER BY m.created_at, m.key LIMIT ?"
    )
    return memories(conn, sql, (*cursor_params, *params, limit))


def statistics(conn: apsw.Connection, now: int) -> dict[str, Any]:
    """Counts for :meth:`embedmind.Store.stats` in one snapshot."""
    live = "forgotten_at IS NULL"
    one = fetch_one(
        conn,
        f"SELECT sum({live}), sum(NOT ({live})), "
        f"sum({live} AND expires_at IS NOT NULL AND expires_at <= ?), "
        f"sum({live} AND superseded_by IS NOT NULL) FROM memories",
        (now,),
    )
    by_agent: dict[str, tuple[int, list[str]]] = {}
    for agent, count in conn.execute(
        f"SELECT agent, count(*) FROM memories WHERE {live} GROUP BY agent ORDER BY agent"
    ):
        by_agent[agent] = (count, [])
    for agent, session in conn.execute(
        f"SELECT DISTINCT agent, session_id FROM memories WHERE {live} "
        "AND session_id IS NOT NULL ORDER BY agent, session_id"
    ):
        by_agent[agent][1].append(session)
    return {
        "live": one[0] or 0,
        "forgotten": one[1] or 0,
        "expired": one[2] or 0,
        "superseded": one[3] or 0,
        "by_agent": by_agent,
        "by_namespace": {
            row[0]: row[1]
            for row in conn.execute(
                f"SELECT namespace, count(*) FROM memories WHERE {live} "
                "GROUP BY namespace ORDER BY namespace"
            )
        },
        "by_tier": {
            row[0]: row[1]
            for row in conn.execute(
                f"SELECT tier, count(*) FROM memories WHERE {live} GROUP BY tier ORDER BY tier"
            )
        },
    }


def contents_after(conn: apsw.Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """``(key, content)`` of live memories with keys above ``after``, in key order."""
    return [
        (int(key), str(content))
        for key, content in conn.execute(
            "SELECT key, content FROM memories WHERE key > ? AND forgotten_at IS NULL "
            "ORDER BY key LIMIT ?",
            (after, limit),
        )
    ]


def live_count(conn: apsw.Connection) -> int:
    """Number of memories that are not forgotten."""
    return int(fetch_one(conn, "SELECT count(*) FROM memories WHERE forgotten_at IS NULL")[0])


def by_fingerprint(
    conn: apsw.Connection, fingerprint: str, condition: str, params: Sequence[Any]
) -> Memory | None:
    """The oldest memory with this content fingerprint that ``condition`` admits.

    One seek of the fingerprint index (SQLite would otherwise walk the
    namespace in time order), then the whole fingerprint is compared.
    """
    found = memories(
        conn,
        "SELECT {columns} FROM memories m INDEXED BY memories_by_fingerprint "
        f"WHERE {FINGERPRINT_KEY} = ? AND m.fingerprint = ? AND {condition} "
        "ORDER BY m.created_at, m.key LIMIT 1",
        (fingerprint_key(fingerprint), fingerprint, *params),
    )
    return found[0][2] if found else None


def set_content(conn: apsw.Connection, key: int, content: str, fingerprint: str, now: int) -> None:
    """Replace a memory's content in place (redaction)."""
    conn.execute(
        "UPDATE memories SET content = ?, fingerprint = ?, updated_at = ? WHERE key = ?",
        (content, fingerprint, now, key),
    )


def forgotten_keys(conn: apsw.Connection) -> list[int]:
    """Keys of tombstoned memories."""
    return [
        int(r[0]) for r in conn.execute("SELECT key FROM memories WHERE forgotten_at IS NOT NULL")
    ]


_RESTORED = (
    "updated_at", "superseded_by", "access_count", "last_accessed_at", "contradicted_by",
    "prior_confidence", "valid_to",
)  # fmt: skip


def export_page(conn: apsw.Connection, after: int, limit: int) -> list[dict[str, Any]]:
    """Live memories after key ``after``, in key order, every stored field (times in µs).

    Raises:
        DamagedRecordError: Naming every damaged memory among them (an export
            never carries a damaged memory as if it were sound).
    """
    rows = checked_rows(
        conn,
        "SELECT {columns} FROM memories m WHERE m.key > ? AND m.forgotten_at IS NULL "
        "ORDER BY m.key LIMIT ?",
        (after, limit),
        EXPORT_COLUMNS,
    )
    return memory_rows.export_items(rows)


def restore_fields(conn: apsw.Connection, key: int, fields: dict[str, Any]) -> None:
    """Write back the fields an import carries beyond a fresh write."""
    assignments = ", ".join(f"{name} = ?" for name in _RESTORED)
    conn.execute(
        f"UPDATE memories SET {assignments} WHERE key = ?",
        (*(fields.get(name) for name in _RESTORED), key),
    )
