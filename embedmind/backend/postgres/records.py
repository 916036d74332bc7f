"""Memory rows in PostgreSQL: batch inserts with COPY, loads by key.

The engine prepares every field (validated ids, namespaces in NFC, times in
UTC microseconds, the content fingerprint) before a write; this module only
moves rows. ``insert`` is one ``COPY`` per batch (``remember_many`` batches
are one round trip, not one per row), returning the keys PostgreSQL assigned
in the batch's order.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.backend import memory_rows
from embedmind.backend.values import EXPORT_COLUMNS
from embedmind.drafts import Prepared
from embedmind.errors import InvalidInputError

Conn = psycopg.Connection[TupleRow]

COLUMNS = (
    "id", "namespace", "content", "metadata", "metadata_text", "tags", "tier", "level", "agent",
    "session_id", "created_at", "updated_at", "valid_from", "valid_to", "expires_at",
    "confidence", "fingerprint",
)  # fmt: skip
"""The columns a write sets. ``metadata`` is the ``jsonb`` the filters and the GIN index
read; ``metadata_text`` the caller's JSON text exactly as the engine serialised it, so a
memory reads back (and exports) with its keys in the caller's order and every number of
the type it had (``jsonb`` would reorder keys and print ``1e+20`` as an integer)."""


@dataclass(frozen=True)
class NewRow:
    """The stored fields of a memory about to be inserted (times in UTC µs)."""

    id: str
    namespace: str
    content: str
    created_at: int
    fingerprint: str
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: Sequence[str] = ()
    tier: str = "semantic"
    level: str = "explicit"
    agent: str = ""
    session_id: str | None = None
    updated_at: int | None = None
    valid_from: int | None = None
    valid_to: int | None = None
    expires_at: int | None = None
    confidence: float = 1.0

    def values(self) -> tuple[Any, ...]:
        """The row in :data:`COLUMNS` order."""
        text = json.dumps(self.metadata, ensure_ascii=False, separators=(",", ":"))
        return (
            self.id, self.namespace, self.content, text, text, list(self.tags), self.tier,
            self.level, self.agent, self.session_id, self.created_at,
            self.created_at if self.updated_at is None else self.updated_at,
            self.created_at if self.valid_from is None else self.valid_from,
            self.valid_to, self.expires_at, self.confidence, self.fingerprint,
        )  # fmt: skip


def insert(conn: Conn, rows: Sequence[NewRow | Prepared]) -> list[int]:
    """Insert rows in one ``COPY`` (inside the caller's transaction); their keys, in order.

    Ids must be free (the engine checks, and ``memories.id`` is unique: a
    race with another writer ends in a unique violation, which rolls the whole
    batch back).
    """
    if not rows:
        return []
    with conn.cursor() as cur:
        with cur.copy(f"COPY memories ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row.values() if isinstance(row, NewRow) else prepared_values(row))
        found: dict[str, int] = dict(
            cur.execute(
                "SELECT id, key FROM memories WHERE id = ANY(%s)", ([r.id for r in rows],)
            ).fetchall()
        )
    return [int(found[r.id]) for r in rows]


def keys_of(conn: Conn, ids: Sequence[str]) -> dict[str, int]:
    """``id -> key`` of the rows holding any of ``ids``."""
    rows = conn.execute("SELECT id, key FROM memories WHERE id = ANY(%s)", (list(ids),))
    return {str(i): int(k) for i, k in rows}


def prepared_values(p: Prepared) -> tuple[Any, ...]:
    """A prepared record in :data:`COLUMNS` order (its metadata JSON goes in as text).

    Raises:
        InvalidInputError: When its content or a metadata string holds NUL,
            which PostgreSQL's ``text`` and ``jsonb`` cannot store.
    """
    check_no_nul(p)
    return (
        p.id, p.namespace, p.content, p.metadata_json, p.metadata_json, list(p.tags), p.tier,
        p.level, p.agent, p.session_id, p.created_at, p.updated_at, p.valid_from, p.valid_to,
        p.expires_at, p.confidence, p.fingerprint,
    )  # fmt: skip


METADATA = "coalesce(m.metadata_text, m.metadata::text)"
"""The stored metadata as JSON text (rows written before migration 3 have only ``jsonb``)."""


def check_no_nul(p: Prepared) -> None:
    """Refuse what PostgreSQL cannot store: NUL (U+0000) in the content or in metadata strings.

    The engine accepts them (SQLite stores them); in the server the write would
    fail with a driver error, so it fails first, naming the field and the fix.
    The engine calls it through ``PostgresBackend.check_memory`` for every
    memory of a batch or an import before the first write (so a refused one
    writes nothing), and :func:`prepared_values` again at the insert. Ids,
    namespaces, tags, agents, sessions and entity names never hold NUL (the
    engine refuses it everywhere), nor do metadata keys.

    Raises:
        InvalidInputError: Naming ``content`` or the metadata path.
    """
    refuse_nul(p.content, "content")
    # The JSON text escapes NUL as \u0000; only then is a walk of the value needed.
    if "\\u0000" in p.metadata_json:
        path = _nul_path(json.loads(p.metadata_json), "metadata")
        if path is not None:
            raise InvalidInputError(path, NUL_FIX)


NUL_FIX = "PostgreSQL cannot store NUL (U+0000) in text: remove it or replace it"


def refuse_nul(text: str, field: str) -> None:
    """Refuse ``text`` when it holds NUL, which PostgreSQL's ``text`` cannot store.

    Raises:
        InvalidInputError: Naming ``field`` and the fix.
    """
    if "\x00" in text:
        raise InvalidInputError(field, NUL_FIX)


def _nul_path(value: object, path: str) -> str | None:
    if isinstance(value, str):
        return path if "\x00" in value else None
    items: Any = ()
    if isinstance(value, dict):
        items = ((f"{path}[{k!r}]", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    for inner, item in items:
        found = _nul_path(item, inner)
        if found is not None:
            return found
    return None


def _selected(columns: Sequence[str]) -> str:
    return ", ".join(METADATA if c == "metadata" else f"m.{c}" for c in columns)


SELECT = _selected(memory_rows.FIELDS)
"""The columns :func:`to_memory` reads, in order."""

to_memory = memory_rows.to_memory
"""Build a :class:`Memory` from a row selected with :data:`SELECT` (the backends' one decoder:
a damaged value, or content changed by an ``UPDATE`` behind the engine's back, raises
:class:`~embedmind.errors.DamagedRecordError` naming the memory and the field)."""
to_memories = memory_rows.to_memories
""":func:`to_memory` of each row, naming every damaged one among them at once."""


def insert_vectors(
    conn: Conn,
    table: str,
    key: int,
    spans: Sequence[tuple[int, int]],
    blobs: Sequence[bytes],
    texts: Sequence[str | None] | None = None,
) -> list[int]:
    """Store one memory's vectors (little-endian float32 blobs) in ``table``; their vec_keys."""
    if not spans:
        return []
    literals = [_vector_text(np.frombuffer(b, dtype="<f4")) for b in blobs]
    columns = 'key, start, "end", embedding' + (", text" if texts is not None else "")
    query = sql.SQL(
        "INSERT INTO {t} ("
        + columns
        + ") SELECT %s, s, e, v::vector"
        + (", x" if texts is not None else "")
        + " FROM unnest(%s::bigint[], %s::bigint[], %s::text[]"
        + (", %s::text[]" if texts is not None else "")
        + ") WITH ORDINALITY AS u(s, e, v"
        + (", x" if texts is not None else "")
        + ", n) ORDER BY n RETURNING vec_key"
    ).format(t=sql.Identifier(table))
    params: list[Any] = [key, [s for s, _ in spans], [e for _, e in spans], literals]
    if texts is not None:
        params.append(list(texts))
    return sorted(int(r[0]) for r in conn.execute(query, params))


def insert_vectors_many(
    conn: Conn, table: str, items: Sequence[tuple[int, Sequence[tuple[int, int]], Sequence[bytes]]]
) -> list[int]:
    """Store the vectors of several memories (``(key, spans, blobs)`` each) in one binary ``COPY``.

    One round trip for a whole ``remember_many`` batch instead of one per
    memory, and no text: pgvector reads the float32 values in its binary
    form, so neither side prints or parses ~400 decimal numbers per vector
    (which cost more than the rows' HNSW insertion on the client). The
    vec_keys are drawn from the column's identity sequence first (``COPY``
    writes given identity values, as ``OVERRIDING SYSTEM VALUE`` would), so
    no statement reads them back. Returns them in the order of ``items`` and
    of each one's spans, as :func:`insert_vectors` would.
    """
    keys = [key for key, spans, _ in items for _ in spans]
    if not keys:
        return []
    spans = [span for _, item_spans, _ in items for span in item_spans]
    blobs = [blob for _, _, item_blobs in items for blob in item_blobs]
    vec_keys = sorted(
        int(r[0])
        for r in conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'vec_key')) FROM generate_series(1, %s)",
            (table, len(keys)),
        )
    )
    query = sql.SQL(
        'COPY {t} (vec_key, key, start, "end", embedding) FROM STDIN (FORMAT BINARY)'
    ).format(t=sql.Identifier(table))
    wide = _BIGINT_SPANS[table]
    with conn.cursor() as cur, cur.copy(query) as copy:
        copy.write(_binary_rows(vec_keys, keys, spans, blobs, wide=wide))
    return vec_keys


_BIGINT_SPANS = {"memory_vectors": False, "fragments": True}
"""Whether a vector table's ``start``/``end`` are ``bigint`` (binary COPY sends each
column in its own type's width)."""
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
"""A binary COPY stream's header: the signature, no flags, no header extension."""
_TRAILER = struct.pack(">h", -1)


def _binary_rows(
    vec_keys: Sequence[int],
    keys: Sequence[int],
    spans: Sequence[tuple[int, int]],
    blobs: Sequence[bytes],
    *,
    wide: bool,
) -> bytes:
    """The binary COPY stream of ``(vec_key, key, start, end, embedding)`` rows.

    Each row is five fields, each its length then its bytes in network
    order; a pgvector ``vector`` is its dimension (int16), an unused int16,
    then the float32 values big-endian (pgvector's ``vector_recv``).
    """
    span = "iqiq" if wide else "iiii"
    width = 8 if wide else 4
    parts = [_SIGNATURE]
    for vec_key, key, (start, end), blob in zip(vec_keys, keys, spans, blobs, strict=True):
        values = np.frombuffer(blob, dtype="<f4")
        dims = len(values)
        head = (5, 8, vec_key, 8, key, width, start, width, end, 4 + 4 * dims, dims, 0)
        parts.append(struct.pack(f">hiqiq{span}ihh", *head))
        parts.append(values.astype(">f4").tobytes())
    parts.append(_TRAILER)
    return b"".join(parts)


def _vector_text(vector: npt.NDArray[np.float32]) -> str:
    # tolist() yields the float32 values as Python floats; repr keeps every digit.
    return "[" + ",".join(map(repr, vector.tolist())) + "]"


RESTORED = (
    "updated_at", "superseded_by", "access_count", "last_accessed_at", "contradicted_by",
    "prior_confidence", "valid_to",
)  # fmt: skip
"""What an import writes back beyond a fresh write (``RecordWrites.restore_fields``)."""


def export_page(conn: Conn, after: int, limit: int) -> list[dict[str, Any]]:
    """Live memories after key ``after``, in key order, every stored field (times in µs).

    Raises:
        DamagedRecordError: Naming every damaged memory among them (an export
            never carries a damaged memory as if it were sound).
    """
    rows = conn.execute(
        f"SELECT {_selected(EXPORT_COLUMNS)} FROM memories m "
        "WHERE m.key > %s AND m.forgotten_at IS NULL ORDER BY m.key LIMIT %s",
        (after, limit),
    ).fetchall()
    return memory_rows.export_items(rows)


def restore_fields(conn: Conn, key: int, fields: dict[str, Any]) -> None:
    """Write back the fields an import carries beyond a fresh write (absent ones: NULL)."""
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = %s").format(sql.Identifier(name)) for name in RESTORED
    )
    conn.execute(
        sql.SQL("UPDATE memories SET {} WHERE key = %s").format(assignments),
        [*(fields.get(name) for name in RESTORED), key],
    )
