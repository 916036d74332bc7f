"""SQL specific to the fragment index (the shared vector SQL lives in ``vectors``).

A fragment row carries its record's key, its ``[start, end)`` locator in the
caller's unit, its vector and, when known, its text. ``fragment_sources``
remembers which content fingerprint a record's fragments were derived from,
so fragment-embed-on-write never re-embeds identical content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw

from embedmind.storage.connection import fetch_one
from embedmind.storage.vectors import FRAGMENTS


def add(
    conn: apsw.Connection,
    key: int,
    spans: Sequence[tuple[int, int]],
    blobs: Sequence[bytes],
    texts: Sequence[str | None],
) -> int:
    """Store a record's fragments and log them; return how many."""
    vec_keys = [
        int(row[0])
        for row in conn.executemany(
            "INSERT INTO fragments (key, start, end, data, text) VALUES (?, ?, ?, ?, ?) "
            "RETURNING vec_key",
            [(key, s, e, b, t) for (s, e), b, t in zip(spans, blobs, texts, strict=True)],
        )
    ]
    conn.executemany(
        f"INSERT INTO {FRAGMENTS.log} (vec_key, added) VALUES (?, 1)", [(v,) for v in vec_keys]
    )
    return len(vec_keys)


def details(
    conn: apsw.Connection, vec_keys: Sequence[int]
) -> dict[int, tuple[str, int, int, str | None]]:
    """``vec_key -> (record id, start, end, text)``."""
    rows = conn.execute(
        "SELECT f.vec_key, m.id, f.start, f.end, f.text FROM fragments f "
        "JOIN memories m ON m.key = f.key WHERE f.vec_key IN (SELECT value FROM json_each(?))",
        (json.dumps([int(v) for v in vec_keys]),),
    )
    return {int(v): (str(i), int(s), int(e), t) for v, i, s, e, t in rows}


def counts(conn: apsw.Connection) -> tuple[int, int]:
    """``(records with fragments, fragments)``."""
    row = fetch_one(conn, "SELECT count(DISTINCT key), count(*) FROM fragments")
    return int(row[0]), int(row[1])


def source(conn: apsw.Connection, key: int) -> str | None:
    """The content fingerprint a record's fragments were derived from."""
    row = conn.execute("SELECT fingerprint FROM fragment_sources WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_source(conn: apsw.Connection, key: int, fingerprint: str | None) -> None:
    """Record (or, with ``None``, forget) where a record's fragments came from."""
    if fingerprint is None:
        conn.execute("DELETE FROM fragment_sources WHERE key = ?", (key,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO fragment_sources (key, fingerprint) VALUES (?, ?)",
            (key, fingerprint),
        )
