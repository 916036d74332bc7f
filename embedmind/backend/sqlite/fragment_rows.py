"""SQL specific to the fragment index (the shared vector SQL lives in ``vectors``).

A fragment row carries its record's key, its ``[start, end)`` locator in the
caller's unit, its vector and, when known, its text. ``fragment_sources``
remembers which content fingerprint a record's fragments were derived from,
so fragment-embed-on-write never re-embeds identical content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from embedmind.backend.sqlite.connection import fetch_one
from embedmind.backend.sqlite.vector_rows import FRAGMENTS
from embedmind.errors import DamagedRecordError


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


_DETAILS = (
    "SELECT f.vec_key, {id}, f.start, f.end, {text}, f.key FROM fragments f "
    "JOIN memories m ON m.key = f.key WHERE f.vec_key IN (SELECT value FROM json_each(?))"
)


def details(
    conn: apsw.Connection, vec_keys: Sequence[int]
) -> dict[int, tuple[str, int, int, str | None]]:
    """``vec_key -> (record id, start, end, text)``.

    Raises:
        DamagedRecordError: When a fragment's text (or its record's id) is not
            UTF-8 in the file, naming the records (apsw raised a raw
            ``UnicodeDecodeError``); traced by a byte-wise read, only then.
    """
    params = (json.dumps([int(v) for v in vec_keys]),)
    try:
        rows: list[Any] = conn.execute(_DETAILS.format(id="m.id", text="f.text"), params).fetchall()
    except UnicodeDecodeError:
        raw = conn.execute(
            _DETAILS.format(id="CAST(m.id AS BLOB)", text="CAST(f.text AS BLOB)"), params
        )
        damaged = sorted({name for row in raw if (name := _damaged_record(row)) is not None})
        raise DamagedRecordError(damaged, "fragment text (or its id) is not valid UTF-8") from None
    return {int(v): (str(i), int(s), int(e), t) for v, i, s, e, t, _ in rows}


def _damaged_record(row: Sequence[Any]) -> str | None:
    """The record of a byte-wise details row whose id or text is not UTF-8, else ``None``."""
    _, memory_id, _, _, text, key = row
    name = _utf8(memory_id)
    if name is not None and _utf8(text) is not None:
        return None
    return f"key:{key}" if name is None else name  # even the id is damaged: its key


def _utf8(raw: bytes | None) -> str | None:
    """``raw`` decoded (``""`` for NULL), or ``None`` when it is not UTF-8."""
    try:
        return "" if raw is None else bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


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


def texts_after(
    conn: apsw.Connection, after: int, limit: int
) -> list[tuple[int, list[tuple[int, int, str | None]]]]:
    """Records holding fragments with keys above ``after``, in key order, and their fragments.

    Each record comes whole, as ``(key, [(start, end, text), ...])`` in the
    order its fragments were stored: about ``limit`` fragments in all, and
    more when the last record has more (re-embedding replaces a record's
    fragments in one transaction).
    """
    out: dict[int, list[tuple[int, int, str | None]]] = {}
    for key, start, end, text in conn.execute(
        "SELECT key, start, end, text FROM fragments WHERE key > ? ORDER BY key, vec_key LIMIT ?",
        (after, limit),
    ):
        out.setdefault(int(key), []).append((int(start), int(end), text))
    if out:
        last = next(reversed(out))  # the LIMIT may have cut it: read all of it
        out[last] = texts_of(conn, last)
    return list(out.items())


def texts_of(conn: apsw.Connection, key: int) -> list[tuple[int, int, str | None]]:
    """``(start, end, text)`` of one record's fragments, in the order they were stored."""
    return [
        (int(start), int(end), text)
        for start, end, text in conn.execute(
            "SELECT start, end, text FROM fragments WHERE key = ? ORDER BY vec_key", (key,)
        )
    ]


def given_as_vectors(conn: apsw.Connection) -> tuple[int, int, list[str]]:
    """Fragments without text (given as vectors): how many, of how many records, 5 record ids."""
    row = fetch_one(conn, "SELECT count(*), count(DISTINCT key) FROM fragments WHERE text IS NULL")
    ids = conn.execute(
        "SELECT DISTINCT m.id FROM fragments f JOIN memories m ON m.key = f.key "
        "WHERE f.text IS NULL ORDER BY m.id LIMIT 5"
    ).fetchall()
    return int(row[0]), int(row[1]), [str(r[0]) for r in ids]
