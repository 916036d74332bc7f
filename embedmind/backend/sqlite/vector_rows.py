"""SQL for durable vectors, their change log, the index-file registry and model identity.

Vectors are authoritative here; the HNSW index files are caches rebuilt from
them. Every vector added or removed appends ``(seq, vec_key, added)`` to
``vector_log`` in the same transaction, so any process can bring its
in-memory index up to date by replaying the log past the sequence it has
applied. ``index_files`` records, per index file, the log sequence it
reflects, its size and its checksum, written only after the file is safely
in place.

Blob format: little-endian float32, ``dims`` values, no header —
``numpy.frombuffer(blob, dtype="<f4")`` reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite.connection import fetch_one
from embedmind.backend.values import check_blobs


@dataclass(frozen=True)
class Space:
    """A family of vectors with its own table, change log and index file."""

    table: str
    log: str
    index_name: str


MEMORY = Space("vectors", "vector_log", "memory-vectors")
"""The memories' own vectors (one per chunk)."""
FRAGMENTS = Space("fragments", "fragment_log", "fragments")
"""The fragment index (many located vectors per record)."""

IDENTITY_KEYS = ("model_id", "dims", "metric", "fingerprint")


@dataclass(frozen=True)
class IndexFile:
    """What the registry says about one index file."""

    seq: int
    checksum: str
    size: int


def read_identity(conn: apsw.Connection) -> dict[str, str]:
    """The embedding model recorded in the store (empty for a store without one)."""
    rows = conn.execute(
        "SELECT key, value FROM meta WHERE key IN (SELECT value FROM json_each(?))",
        (json.dumps([f"embedder.{k}" for k in IDENTITY_KEYS]),),
    )
    return {str(k).removeprefix("embedder."): str(v) for k, v in rows}


def write_identity(conn: apsw.Connection, identity: dict[str, str]) -> None:
    """Record the embedding model the store's vectors come from."""
    conn.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [(f"embedder.{k}", identity[k]) for k in IDENTITY_KEYS],
    )


def add(
    conn: apsw.Connection,
    key: int,
    spans: Sequence[tuple[int, int]],
    blobs: Sequence[bytes],
    space: Space = MEMORY,
) -> list[int]:
    """Store a memory's vectors (one per span) and log them; return their vec_keys."""
    return add_many(conn, [(key, spans, blobs)], space)


def add_many(
    conn: apsw.Connection,
    items: Sequence[tuple[int, Sequence[tuple[int, int]], Sequence[bytes]]],
    space: Space = MEMORY,
) -> list[int]:
    """:func:`add` for many memories in two statements; their vec_keys in order.

    A bulk load's batch of 10,000 made 20,000 ``executemany`` calls one
    memory at a time; the rows and their log entries are the same.
    """
    rows = [
        (key, start, end, blob)
        for key, spans, blobs in items
        for (start, end), blob in zip(spans, blobs, strict=True)
    ]
    if not rows:
        return []
    vec_keys = [
        int(row[0])
        for row in conn.executemany(
            f"INSERT INTO {space.table} (key, start, end, data) VALUES (?, ?, ?, ?) "
            "RETURNING vec_key",
            rows,
        )
    ]
    conn.executemany(
        f"INSERT INTO {space.log} (vec_key, added) VALUES (?, 1)", [(v,) for v in vec_keys]
    )
    return vec_keys


def remove_memory(conn: apsw.Connection, key: int, space: Space = MEMORY) -> int:
    """Drop a memory's vectors and log their removal; return how many there were."""
    vec_keys = [
        int(r[0]) for r in conn.execute(f"SELECT vec_key FROM {space.table} WHERE key = ?", (key,))
    ]
    if vec_keys:
        conn.execute(f"DELETE FROM {space.table} WHERE key = ?", (key,))
        conn.executemany(
            f"INSERT INTO {space.log} (vec_key, added) VALUES (?, 0)", [(v,) for v in vec_keys]
        )
    return len(vec_keys)


def last_seq(conn: apsw.Connection, space: Space = MEMORY) -> int:
    """The newest change-log sequence ever assigned (trimming never lowers it)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (space.log,)).fetchone()
    return 0 if row is None else int(row[0])


def last_key(conn: apsw.Connection, space: Space = MEMORY) -> int:
    """The newest vec_key ever assigned in this snapshot (0 before the first vector)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (space.table,)).fetchone()
    return 0 if row is None else int(row[0])


def first_seq(conn: apsw.Connection, space: Space = MEMORY) -> int | None:
    """The oldest change-log sequence still kept (None when the log is empty)."""
    row = fetch_one(conn, f"SELECT min(seq) FROM {space.log}")
    return None if row[0] is None else int(row[0])


def changes_since(
    conn: apsw.Connection, seq: int, space: Space = MEMORY
) -> list[tuple[int, int, int]]:
    """``(seq, vec_key, added)`` after ``seq``, oldest first."""
    return [
        (int(a), int(b), int(c))
        for a, b, c in conn.execute(
            f"SELECT seq, vec_key, added FROM {space.log} WHERE seq > ? ORDER BY seq", (seq,)
        )
    ]


def load(
    conn: apsw.Connection,
    vec_keys: Sequence[int],
    dims: int,
    space: Space = MEMORY,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """``(vec_keys, memory keys, vectors)`` of the given vec_keys that still exist."""
    return _rows_where_in(conn, "vec_key", vec_keys, dims, space)


def load_all(
    conn: apsw.Connection,
    dims: int,
    after: int = 0,
    limit: int = 50_000,
    space: Space = MEMORY,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """One page of every stored vector, in vec_key order, after ``after``."""
    rows = conn.execute(
        f"SELECT vec_key, key, data FROM {space.table} WHERE vec_key > ? ORDER BY vec_key LIMIT ?",
        (after, limit),
    ).fetchall()
    return _arrays(rows, dims)


def of_memories(
    conn: apsw.Connection,
    condition: str,
    params: Sequence[object],
    dims: int,
    space: Space = MEMORY,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Every vector of the memories matching ``condition`` (over ``memories m``)."""
    rows = conn.execute(
        f"SELECT v.vec_key, v.key, v.data FROM memories m JOIN {space.table} v ON v.key = m.key "
        f"WHERE {condition}",
        params,
    ).fetchall()
    return _arrays(rows, dims)


def _arrays(
    rows: Sequence[Sequence[object]], dims: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    vec_keys = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))  # type: ignore[call-overload]
    keys = np.fromiter((int(r[1]) for r in rows), dtype=np.int64, count=len(rows))  # type: ignore[call-overload]
    check_blobs([r[2] for r in rows], dims)  # type: ignore[misc]
    data = b"".join(r[2] for r in rows)  # type: ignore[misc]
    vectors = np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(len(rows), dims)
    return vec_keys, keys, vectors


def count(conn: apsw.Connection, space: Space = MEMORY) -> int:
    """Number of stored vectors."""
    return int(fetch_one(conn, f"SELECT count(*) FROM {space.table}")[0])


def index_file(conn: apsw.Connection, name: str) -> IndexFile | None:
    """The registry entry of an index file."""
    row = conn.execute(
        "SELECT seq, checksum, size FROM index_files WHERE name = ?", (name,)
    ).fetchone()
    return None if row is None else IndexFile(int(row[0]), str(row[1]), int(row[2]))


def record_index_file(conn: apsw.Connection, name: str, entry: IndexFile) -> None:
    """Register an index file that is safely in place."""
    conn.execute(
        "INSERT OR REPLACE INTO index_files (name, seq, checksum, size) VALUES (?, ?, ?, ?)",
        (name, entry.seq, entry.checksum, entry.size),
    )


def trim_log(conn: apsw.Connection, up_to: int, space: Space = MEMORY) -> None:
    """Drop change-log entries an index file already reflects."""
    conn.execute(f"DELETE FROM {space.log} WHERE seq <= ?", (up_to,))


def of_keys(
    conn: apsw.Connection,
    keys: Sequence[int],
    dims: int,
    space: Space = MEMORY,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Every vector of the given memories."""
    return _rows_where_in(conn, "key", keys, dims, space)


def _rows_where_in(
    conn: apsw.Connection, column: str, values: Sequence[int], dims: int, space: Space
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """``(vec_keys, memory keys, vectors)`` whose ``column`` is one of ``values``."""
    rows = conn.execute(
        f"SELECT vec_key, key, data FROM {space.table} "
        f"WHERE {column} IN (SELECT value FROM json_each(?))",
        (json.dumps([int(v) for v in values]),),
    ).fetchall()
    return _arrays(rows, dims)


def forget_index_files(conn: apsw.Connection) -> None:
    """Unregister every index file (their content no longer matches the vectors)."""
    conn.execute("DELETE FROM index_files")


def meta_get(conn: apsw.Connection, key: str) -> str | None:
    """One bookkeeping value."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def meta_set(conn: apsw.Connection, key: str, value: str | None) -> None:
    """Set (or, with ``None``, delete) one bookkeeping value."""
    if value is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def rows_of(conn: apsw.Connection, key: int, space: Space = MEMORY) -> list[tuple[int, int, bytes]]:
    """``(start, end, blob)`` of one memory's vectors, in order."""
    return [
        (int(s), int(e), bytes(d))
        for s, e, d in conn.execute(
            f"SELECT start, end, data FROM {space.table} WHERE key = ? ORDER BY start, vec_key",
            (key,),
        )
    ]


# -- memories without vectors ------------------------------------------------------
# A store with an embedder gives every memory at least one vector, so a live
# memory without one was written while the store was open without an embedder
# (or before it had one): vector recall cannot find it. Derived, not recorded:
# every write path that could make one already leaves these rows as they are.

_NO_VECTOR = "NOT EXISTS (SELECT 1 FROM vectors v WHERE v.key = m.key)"


def change_marks(conn: apsw.Connection) -> tuple[int, int, int]:
    """``(write_seq, vector log's newest seq, newest memory key)``, read in one statement.

    Every change to which memories lack vectors moves one of them: a memory
    written, forgotten, deleted or revived bumps ``write_seq`` (new rows also
    the key), vectors added or removed extend the log.
    """
    row = fetch_one(
        conn,
        "SELECT (SELECT value FROM counters WHERE name = 'write_seq'), "
        "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'), 0), "
        "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0)",
    )
    return int(row[0]), int(row[1]), int(row[2])


def log_removals(conn: apsw.Connection, seq: int) -> tuple[int | None, int, int]:
    """``(first seq, entries, removals)`` of the vector log after ``seq``."""
    row = fetch_one(
        conn,
        "SELECT min(seq), count(*), coalesce(sum(added = 0), 0) FROM vector_log WHERE seq > ?",
        (seq,),
    )
    return (None if row[0] is None else int(row[0])), int(row[1]), int(row[2])


def rows_without_vectors(conn: apsw.Connection, after: int = 0) -> list[int]:
    """Keys above ``after`` of memory rows, live or forgotten, that have no vector."""
    if after == 0:
        # The whole table: its narrow time index against the set of keys with a
        # vector is the cheapest full scan (1.5 ms per 10,000 rows; probing the
        # vectors once per row, or a range condition on the key, is 6x slower).
        sql = (
            "SELECT key FROM memories INDEXED BY memories_by_time "
            "WHERE key NOT IN (SELECT key FROM vectors)"
        )
        return [int(row[0]) for row in conn.execute(sql)]
    # The rows written since a known key: a range of the table itself.
    sql = f"SELECT m.key FROM memories m WHERE m.key > ? AND {_NO_VECTOR}"
    return [int(row[0]) for row in conn.execute(sql, (after,))]


def vector_status(conn: apsw.Connection, keys: Sequence[int]) -> list[tuple[int, bool, bool]]:
    """``(key, live, has a vector)`` of the memory rows among ``keys`` that still exist."""
    sql = (
        "SELECT m.key, m.forgotten_at IS NULL, NOT " + _NO_VECTOR + " "
        "FROM json_each(?) AS j CROSS JOIN memories AS m WHERE m.key = j.value"
    )
    return [
        (int(k), bool(live), bool(has))
        for k, live, has in conn.execute(sql, (json.dumps([int(k) for k in keys]),))
    ]


def missing_count(conn: apsw.Connection) -> int:
    """Live memories without a vector (one scan of the table)."""
    sql = f"SELECT count(*) FROM memories m WHERE m.forgotten_at IS NULL AND {_NO_VECTOR}"
    return int(fetch_one(conn, sql)[0])


def missing_contents(
    conn: apsw.Connection, after: int = 0, limit: int = -1, keys: Sequence[int] | None = None
) -> list[tuple[int, str]]:
    """``(key, content)`` of live memories without a vector, in key order.

    Args:
        conn: A connection inside a transaction.
        after: Only keys above this one.
        limit: At most this many (``-1``: all).
        keys: Only these keys (to check again what was read earlier).
    """
    only = "" if keys is None else "AND m.key IN (SELECT value FROM json_each(?)) "
    params: list[object] = [after]
    if keys is not None:
        params.append(json.dumps([int(k) for k in keys]))
    sql = (
        f"SELECT m.key, m.content FROM memories m WHERE m.key > ? {only}"
        f"AND m.forgotten_at IS NULL AND {_NO_VECTOR} ORDER BY m.key LIMIT ?"
    )
    return [(int(k), str(c)) for k, c in conn.execute(sql, (*params, limit))]


def by_memory(
    conn: apsw.Connection, keys: Sequence[int], dims: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The given memories' vectors as ``(owners, rows)``, sorted by key then chunk (``vec_key``)."""
    vec_keys, owners, vectors = of_keys(conn, keys, dims)
    order = np.lexsort((vec_keys, owners))
    return owners[order], vectors[order]
