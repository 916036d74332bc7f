"""Memory rows in PostgreSQL: batch inserts with COPY, loads by key.

The engine prepares every field (validated ids, namespaces in NFC, times in
UTC microseconds, the content fingerprint) before a write; this module only
moves rows. ``insert`` is one ``COPY`` per batch (``remember_many`` batches
are one round trip, not one per row), returning the keys PostgreSQL assigned
in the batch's order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.drafts import Prepared
from embedmind.model import Level, Memory, Tier
from embedmind.timestamps import from_micros, optional_from_micros

Conn = psycopg.Connection[TupleRow]

COLUMNS = (
    "id", "namespace", "content", "metadata", "tags", "tier", "level", "agent", "session_id",
    "created_at", "updated_at", "valid_from", "valid_to", "expires_at", "confidence",
    "fingerprint",
)  # fmt: skip


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
        return (
            self.id, self.namespace, self.content, json.dumps(self.metadata), list(self.tags),
            self.tier, self.level, self.agent, self.session_id, self.created_at,
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
    """A prepared record in :data:`COLUMNS` order (its metadata JSON goes in as text)."""
    return (
        p.id, p.namespace, p.content, p.metadata_json, list(p.tags), p.tier, p.level, p.agent,
        p.session_id, p.created_at, p.updated_at, p.valid_from, p.valid_to, p.expires_at,
        p.confidence, p.fingerprint,
    )  # fmt: skip


SELECT = (
    "m.key, m.id, m.namespace, m.content, m.metadata, m.tags, m.tier, m.level, m.agent, "
    "m.session_id, m.created_at, m.updated_at, m.valid_from, m.valid_to, m.expires_at, "
    "m.superseded_by, m.confidence, m.access_count, m.last_accessed_at, m.fingerprint, "
    "m.forgotten_at"
)
"""The columns :func:`to_memory` reads, in order."""


def to_memory(row: Sequence[Any]) -> Memory:
    """Build a :class:`Memory` from a row selected with :data:`SELECT`."""
    return Memory(
        id=row[1], namespace=row[2], content=row[3], metadata=row[4], tags=tuple(row[5]),
        tier=Tier(row[6]), level=Level(row[7]), agent=row[8], session_id=row[9],
        created_at=from_micros(row[10]), updated_at=from_micros(row[11]),
        valid_from=from_micros(row[12]), valid_to=optional_from_micros(row[13]),
        expires_at=optional_from_micros(row[14]), superseded_by=row[15], confidence=row[16],
        access_count=row[17], last_accessed_at=optional_from_micros(row[18]),
        fingerprint=row[19], forgotten=row[20] is not None,
    )  # fmt: skip


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


def _vector_text(vector: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
