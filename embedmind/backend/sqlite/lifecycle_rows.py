"""SQL for the memory lifecycle: reinforcement, expiry, tiers, namespaces and their links."""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw

from embedmind.backend import graph_values
from embedmind.backend.values import Link


def reinforce(conn: apsw.Connection, keys: Sequence[int], now: int, new_expiry: int | None) -> int:
    """Bump access counts; slide the TTL of those that expire to ``new_expiry`` if later."""
    conn.execute(
        "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?, "
        "expires_at = CASE WHEN expires_at IS NOT NULL AND ? IS NOT NULL AND ? > expires_at "
        "THEN ? ELSE expires_at END "
        "WHERE key IN (SELECT value FROM json_each(?)) AND forgotten_at IS NULL",
        (now, new_expiry, new_expiry, new_expiry, json.dumps(list(keys))),
    )
    return int(conn.changes())


def expired(conn: apsw.Connection, now: int, limit: int) -> list[tuple[int, str, str]]:
    """``(key, id, tier)`` of memories whose TTL has passed, oldest expiry first."""
    return [
        (int(k), str(i), str(t))
        for k, i, t in conn.execute(
            "SELECT key, id, tier FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ? "
            "ORDER BY expires_at, key LIMIT ?",
            (now, limit),
        )
    ]


def still_expired(conn: apsw.Connection, key: int, cutoff: int) -> bool:
    """Whether ``key`` still expires at or before ``cutoff`` (its TTL was not slid)."""
    row = conn.execute(
        "SELECT 1 FROM memories WHERE key = ? AND expires_at IS NOT NULL AND expires_at <= ?",
        (key, cutoff),
    ).fetchone()
    return row is not None


def retier(conn: apsw.Connection, key: int, tier: str, expires_at: int | None, now: int) -> None:
    """Change a memory's tier and expiry in place."""
    conn.execute(
        "UPDATE memories SET tier = ?, expires_at = ?, updated_at = ? WHERE key = ?",
        (tier, expires_at, now, key),
    )


def namespace_activity(conn: apsw.Connection) -> list[tuple[str, int, int]]:
    """``(namespace, live count, newest updated_at)`` for namespaces with live memories."""
    return [
        (str(n), int(c), int(w))
        for n, c, w in conn.execute(
            "SELECT namespace, count(*), max(updated_at) FROM memories "
            "WHERE forgotten_at IS NULL GROUP BY namespace ORDER BY namespace"
        )
    ]


def keys_in_namespace(conn: apsw.Connection, namespace: str) -> list[int]:
    """Every key (forgotten included) in one namespace."""
    return [
        int(r[0])
        for r in conn.execute("SELECT key FROM memories WHERE namespace = ?", (namespace,))
    ]


def move(conn: apsw.Connection, keys: Sequence[int], namespace: str, now: int) -> int:
    """Move memories to ``namespace``."""
    conn.execute(
        "UPDATE memories SET namespace = ?, updated_at = ? "
        "WHERE key IN (SELECT value FROM json_each(?))",
        (namespace, now, json.dumps(list(keys))),
    )
    return int(conn.changes())


def put_link(
    conn: apsw.Connection, src: str, dst: str, tiers: Sequence[str] | None, note: str, created: int
) -> None:
    """Insert or replace the link ``src -> dst`` (its ``created_at`` is overwritten)."""
    conn.execute(
        "INSERT OR REPLACE INTO namespace_links (src, dst, tiers, note, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (src, dst, None if tiers is None else json.dumps(list(tiers)), note, created),
    )


def delete_link(conn: apsw.Connection, src: str, dst: str) -> bool:
    """Remove a link; whether one existed."""
    conn.execute("DELETE FROM namespace_links WHERE src = ? AND dst = ?", (src, dst))
    return int(conn.changes()) > 0


def links(conn: apsw.Connection, src: str | None) -> list[Link]:
    """Links from ``src`` (or every link), ordered by source then destination.

    Their text is read as bytes, so that one that is not UTF-8 is named, not
    a raw ``UnicodeDecodeError`` (the table holds a few rows).

    Raises:
        DamagedRecordError: Naming the first link with a column that does not
            decode (:func:`embedmind.backend.graph_values.to_link`).
    """
    rows = conn.execute(
        "SELECT CAST(src AS BLOB), CAST(dst AS BLOB), CAST(tiers AS BLOB), CAST(note AS BLOB), "
        "created_at FROM namespace_links WHERE ? IS NULL OR src = ? ORDER BY src, dst",
        (src, src),
    ).fetchall()  # whole: a statement left open would hold its snapshot while an error lives
    return [graph_values.to_link(row) for row in rows]


def rename_link_endpoints(conn: apsw.Connection, old: str, new: str) -> None:
    """Rewrite links of a renamed namespace; on a collision the pre-existing link wins."""
    for column in ("src", "dst"):
        conn.execute(
            f"UPDATE OR IGNORE namespace_links SET {column} = ? WHERE {column} = ?", (new, old)
        )
        # Rows that collided stay under the old name: drop them (never widen a grant).
        conn.execute(f"DELETE FROM namespace_links WHERE {column} = ?", (old,))


def oldest_beyond(conn: apsw.Connection, namespace: str, tier: str | None, cap: int) -> list[int]:
    """Keys of the oldest live memories of a namespace (and tier) beyond the newest ``cap``."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT key FROM memories WHERE namespace = ? AND (? IS NULL OR tier = ?) "
            "AND forgotten_at IS NULL ORDER BY created_at DESC, key DESC LIMIT -1 OFFSET ?",
            (namespace, tier, tier, cap),
        )
    ]
