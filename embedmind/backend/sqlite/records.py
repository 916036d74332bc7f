"""SQL for memory rows and their tags.

Each memory row has an integer ``key`` (never reused: ``AUTOINCREMENT``) that
the derived indexes use, and the caller-visible string ``id``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from embedmind.backend.sqlite import integrity
from embedmind.backend.sqlite.connection import fetch_one, insert_json_rows
from embedmind.backend.sqlite.migrations import FINGERPRINT_KEY, fingerprint_key
from embedmind.backend.values import EXPORT_COLUMNS
from embedmind.drafts import Prepared, decode_metadata
from embedmind.errors import DamagedRecordError
from embedmind.model import Level, Memory, Tier
from embedmind.timestamps import from_micros, optional_from_micros

COLUMNS = (
    "m.key, m.id, m.namespace, m.content, m.metadata, m.tags, m.tier, m.level, m.agent, "
    "m.session_id, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, "
    "m.superseded_by, m.confidence, m.access_count, m.last_accessed_at, m.fingerprint, "
    "m.forgotten_at"
)
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
        if integrity.content_problem(content, row[6]) is not None:
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

    A forgotten row comes back to life; reinforcement counters restart.
    """
    values = list(_values(p))
    values[9] = created_at
    assignments = ", ".join(f"{c} = ?" for c in _WRITE_COLUMNS.split(", "))
    conn.execute(
        f"UPDATE memories SET {assignments}, superseded_by = NULL, access_count = 0, "
        "last_accessed_at = NULL, forgotten_at = NULL WHERE key = ?",
        (*values, key),
    )
    conn.execute("DELETE FROM memory_tags WHERE key = ?", (key,))
    _write_tags(conn, key, p.tags)


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


def to_memory(row: Sequence[Any]) -> Memory:
    """Build a :class:`Memory` from a row selected with :data:`COLUMNS`."""
    return Memory(
        id=row[1],
        namespace=row[2],
        content=row[3],
        metadata=decode_metadata(row[4]),
        tags=tuple(json.loads(row[5])),
        tier=Tier(row[6]),
        level=Level(row[7]),
        agent=row[8],
        session_id=row[9],
        created_at=from_micros(row[10]),
        updated_at=from_micros(row[11]),
        valid_from=from_micros(row[12]),
        valid_to=optional_from_micros(row[13]),
        expires_at=optional_from_micros(row[14]),
        superseded_by=row[15],
        confidence=row[16],
        access_count=row[17],
        last_accessed_at=optional_from_micros(row[18]),
        fingerprint=row[19],
        forgotten=row[20] is not None,
    )


_TEXT_POSITIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 19)
"""Positions of the TEXT columns in :data:`COLUMNS` (the ones a damaged byte breaks)."""
_BLOB_COLUMNS = ", ".join(
    f"CAST({c} AS BLOB)" if i in _TEXT_POSITIONS else c for i, c in enumerate(COLUMNS.split(", "))
)


def checked_rows(conn: apsw.Connection, template: str, params: Sequence[Any]) -> list[Any]:
    """Run ``template`` (``{columns}`` standing for :data:`COLUMNS`); refuse damaged rows.

    Every row's content is checked against its fingerprint; a TEXT value that is
    not UTF-8 (apsw's raw ``UnicodeDecodeError``) is traced to its rows by a
    second, byte-wise read of the same query, only then.

    Raises:
        DamagedRecordError: Naming every damaged memory among the rows.
    """
    try:
        rows = conn.execute(template.format(columns=COLUMNS), params).fetchall()
    except UnicodeDecodeError:
        raw = conn.execute(template.format(columns=_BLOB_COLUMNS), params).fetchall()
        raise DamagedRecordError(
            [_name(row) for row in raw if not _decodes(row)], "a text value is not valid UTF-8"
        ) from None
    damaged = [str(row[1]) for row in rows if integrity.content_problem(row[3], row[19])]
    if damaged:
        raise DamagedRecordError(damaged, "content no longer matches its fingerprint")
    return rows


def _decodes(row: Sequence[Any]) -> bool:
    try:
        for i in _TEXT_POSITIONS:
            if row[i] is not None:
                bytes(row[i]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _name(row: Sequence[Any]) -> str:
    try:
        return bytes(row[1]).decode("utf-8")
    except UnicodeDecodeError:  # even the id is damaged: name the row by its key
        return f"key:{row[0]}"


def select_by_ids(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, Memory]:
    """Load live (not forgotten) memories by id.

    Raises:
        DamagedRecordError: When one of them is damaged in the file.
    """
    found: dict[str, Memory] = {}
    for row in checked_rows(
        conn,
        "SELECT {columns} FROM memories m WHERE m.id IN (SELECT value FROM json_each(?)) "
        "AND m.forgotten_at IS NULL",
        (json.dumps(list(ids), ensure_ascii=False),),
    ):
        memory = to_memory(row)
        found[memory.id] = memory
    return found


def select_by_keys(conn: apsw.Connection, keys: Sequence[int]) -> dict[int, Memory]:
    """Load memories by internal key.

    Raises:
        DamagedRecordError: When one of them is damaged in the file.
    """
    return {
        row[0]: to_memory(row)
        for row in checked_rows(
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
    return [
        (row[10], row[0], to_memory(row))
        for row in checked_rows(conn, sql, (*cursor_params, *params, limit))
    ]


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
    rows = checked_rows(
        conn,
        "SELECT {columns} FROM memories m INDEXED BY memories_by_fingerprint "
        f"WHERE {FINGERPRINT_KEY} = ? AND m.fingerprint = ? AND {condition} "
        "ORDER BY m.created_at, m.key LIMIT 1",
        (fingerprint_key(fingerprint), fingerprint, *params),
    )
    return to_memory(rows[0]) if rows else None


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
    """Live memories after key ``after``, in key order, every stored field (times in µs)."""
    sql = (
        f"SELECT {', '.join(EXPORT_COLUMNS)} FROM memories "
        "WHERE key > ? AND forgotten_at IS NULL ORDER BY key LIMIT ?"
    )
    try:
        rows = conn.execute(sql, (after, limit)).fetchall()
    except UnicodeDecodeError:
        # Traced through the memory columns (the same rows): it raises, naming them.
        checked_rows(
            conn,
            "SELECT {columns} FROM memories m WHERE m.key > ? AND m.forgotten_at IS NULL "
            "ORDER BY m.key LIMIT ?",
            (after, limit),
        )
        raise  # pragma: no cover - the trace above always finds the row
    # An export never carries a damaged memory as if it were sound.
    damaged = [str(row[1]) for row in rows if integrity.content_problem(row[3], row[19])]
    if damaged:
        raise DamagedRecordError(damaged, "content no longer matches its fingerprint")
    out = []
    for row in rows:
        item = dict(zip(EXPORT_COLUMNS, row, strict=True))
        item["metadata"] = json.loads(str(item["metadata"]))
        item["tags"] = json.loads(str(item["tags"]))
        out.append(item)
    return out


def restore_fields(conn: apsw.Connection, key: int, fields: dict[str, Any]) -> None:
    """Write back the fields an import carries beyond a fresh write."""
    assignments = ", ".join(f"{name} = ?" for name in _RESTORED)
    conn.execute(
        f"UPDATE memories SET {assignments} WHERE key = ?",
        (*(fields.get(name) for name in _RESTORED), key),
    )
