"""The alias table on PostgreSQL (migration 4): its rows, its version and the compiled table.

The tables mirror the SQLite backend's (:mod:`embedmind.backend.sqlite.alias_rows`):

- ``aliases(key, target)``, both as the caller wrote them; the analysed form
  is not stored, so it always follows the running analyser;
- ``alias_pending(key)``, the memories whose postings were built with an
  earlier table. A table change and the marks it creates commit together; each
  re-index batch deletes its marks in the transaction that re-indexes them, so
  a crash resumes where it stopped.

Every change writes a fresh random token to ``meta`` under :data:`VERSION`.
The compiled table (:class:`embedmind.lexical.aliases.Table`) is cached in
this process by that token: a token names one change of one store, so the
cache needs no store key, and a rolled-back change takes its token with it
(a write-sequence number would be reused and serve the rolled-back table).
Reading the token costs one indexed ``meta`` lookup per recall or write.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict

import psycopg
from psycopg.rows import TupleRow

from embedmind.lexical import aliases
from embedmind.lexical.aliases import Table

Conn = psycopg.Connection[TupleRow]
VERSION = "lexical.aliases_version"
"""``meta`` key: a token naming the alias table's last change (absent: never changed)."""
_CACHED = 8
"""Compiled tables kept (one per store this process has open, in practice)."""
_cache: OrderedDict[str, Table] = OrderedDict()
_lock = threading.Lock()


def table(conn: Conn) -> Table:
    """The store's compiled alias table as of ``conn``'s transaction (cached by version)."""
    row = conn.execute("SELECT value #>> '{}' FROM meta WHERE key = %s", (VERSION,)).fetchone()
    if row is None:
        return aliases.EMPTY
    version = str(row[0])
    with _lock:
        cached = _cache.get(version)
        if cached is not None:
            _cache.move_to_end(version)
            return cached
    compiled = Table.compile(rows(conn))
    with _lock:
        _cache[version] = compiled
        while len(_cache) > _CACHED:
            _cache.popitem(last=False)
    return compiled


def rows(conn: Conn) -> list[tuple[str, str]]:
    """Every alias as ``(key, target)``, as given."""
    return [(str(k), str(t)) for k, t in conn.execute("SELECT key, target FROM aliases")]


def bump(conn: Conn) -> None:
    """Record a change of the table: a fresh version token."""
    conn.execute(
        "INSERT INTO meta VALUES (%s, to_jsonb(%s::text)) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (VERSION, uuid.uuid4().hex),
    )
