"""SQL for the alias table and its pending re-index (migration 6).

Tables:

- ``aliases(key, target)`` — one row per alias, both strings as the caller
  wrote them. Two spellings that analyse alike ("NYC", "nyc") are one alias:
  :mod:`embedmind.aliases` replaces the row of the old spelling. The
  analysed form is not stored, so it always follows the running analyzer
  (and no term derived from a key sits in this table).
- ``alias_pending(key)`` — memory keys whose postings were built with an
  earlier table and are still to be re-indexed. A table change and the
  pending rows it creates commit together; each re-index batch deletes its
  rows in the transaction that re-indexes them, so a crash resumes where it
  stopped.

The table's version is kept in ``meta`` under :data:`VERSION`, so a process
caches the compiled table and reloads it only after a change. It is a random
token, not the write sequence: a rolled-back change reuses its sequence
number, and a cache keyed by it would keep the rolled-back table.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence

import apsw

from embedmind.backend.sqlite.connection import fetch_one

VERSION = "lexical.aliases_version"
"""``meta`` key: a token naming the alias table's last change (absent: never changed)."""


def version(conn: apsw.Connection) -> str:
    """The alias table's version: ``""`` when it never changed."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (VERSION,)).fetchone()
    return "" if row is None else str(row[0])


def rows(conn: apsw.Connection) -> list[tuple[str, str]]:
    """Every alias as ``(key, target)``, as given."""
    return [(str(k), str(t)) for k, t in conn.execute("SELECT key, target FROM aliases")]


def count(conn: apsw.Connection) -> int:
    """How many aliases the table holds."""
    return int(fetch_one(conn, "SELECT count(*) FROM aliases")[0])


def put(conn: apsw.Connection, entries: Sequence[tuple[str, str]]) -> None:
    """Insert or replace ``(key, target)`` rows and bump the version."""
    conn.executemany("INSERT OR REPLACE INTO aliases (key, target) VALUES (?, ?)", entries)
    _bump(conn)


def delete(conn: apsw.Connection, keys: Iterable[str]) -> None:
    """Delete the aliases of these keys (as stored) and bump the version."""
    conn.execute(
        "DELETE FROM aliases WHERE key IN (SELECT value FROM json_each(?))",
        (json.dumps(list(keys), ensure_ascii=False),),
    )
    _bump(conn)


def _bump(conn: apsw.Connection) -> None:
    token = uuid.uuid4().hex
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (VERSION, token))


def add_pending(conn: apsw.Connection, keys: Iterable[int]) -> None:
    """Mark memories for re-indexing with the current table."""
    conn.executemany("INSERT OR IGNORE INTO alias_pending (key) VALUES (?)", [(k,) for k in keys])


def pending(conn: apsw.Connection, limit: int) -> list[int]:
    """Up to ``limit`` pending memory keys, smallest first."""
    sql = "SELECT key FROM alias_pending ORDER BY key LIMIT ?"
    return [int(r[0]) for r in conn.execute(sql, (limit,))]


def pending_count(conn: apsw.Connection) -> int:
    """How many memories wait for their re-index."""
    return int(fetch_one(conn, "SELECT count(*) FROM alias_pending")[0])


def done(conn: apsw.Connection, keys: Iterable[int]) -> None:
    """Clear the pending mark of re-indexed memories."""
    conn.execute(
        "DELETE FROM alias_pending WHERE key IN (SELECT value FROM json_each(?))",
        (json.dumps(list(keys)),),
    )


def clear_pending(conn: apsw.Connection) -> None:
    """Clear every pending mark (a rebuild re-derived every posting)."""
    conn.execute("DELETE FROM alias_pending")
