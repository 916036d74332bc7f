"""SQL for session context: where a memory sits in its dialog, among the indexed memories.

A dialog is the memories of one ``(namespace, session_id)``, ordered by
``created_at`` then key (write order). Only memories the lexical index holds
(rows of ``lex_docs``) take part, so a forgotten memory has no place in it.
The neighbour lookups compare ``(created_at, key)`` as row values, so that
SQLite seeks ``memories_by_session`` to the place instead of scanning the
session (migration 5).
The per-store switch lives in ``meta`` under :data:`SWITCH`; the date-words
switch (:mod:`embedmind.lexical.dates`) under :data:`DATES`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

SWITCH = "lexical.session_context"
"""``meta`` key: ``"on"`` when the lexical postings carry session context."""
DATES = "lexical.date_words"
"""``meta`` key: ``"on"`` when the lexical postings carry each memory's date words."""


@dataclass(frozen=True, order=True)
class Place:
    """A memory's position: its dialog and its order key within it."""

    namespace: str
    session_id: str
    created_at: int
    key: int

    @property
    def dialog(self) -> tuple[str, str]:
        """The ``(namespace, session_id)`` it belongs to."""
        return self.namespace, self.session_id


def enabled(conn: apsw.Connection, switch: str = SWITCH) -> bool:
    """Whether a lexical switch is on (:data:`SWITCH`, :data:`DATES`; absent: off)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (switch,)).fetchone()
    return row is not None and row[0] == "on"


def set_enabled(conn: apsw.Connection, on: bool, switch: str = SWITCH) -> None:
    """Record a lexical switch (the caller rebuilds the postings in the same transaction)."""
    if on:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, 'on')", (switch,))
    else:
        conn.execute("DELETE FROM meta WHERE key = ?", (switch,))


def created(conn: apsw.Connection, keys: Iterable[int]) -> dict[int, int]:
    """The ``created_at`` of each of ``keys`` that exists."""
    sql = "SELECT key, created_at FROM memories WHERE key IN (SELECT value FROM json_each(?))"
    return {int(k): int(at) for k, at in conn.execute(sql, (json.dumps(list(keys)),))}


def places(conn: apsw.Connection, keys: Iterable[int]) -> dict[int, Place]:
    """The places of those ``keys`` whose memory has a session."""
    sql = (
        "SELECT key, namespace, session_id, created_at FROM memories "
        "WHERE key IN (SELECT value FROM json_each(?)) AND session_id IS NOT NULL"
    )
    return {
        int(k): Place(str(ns), str(sid), int(at), int(k))
        for k, ns, sid, at in conn.execute(sql, (json.dumps(list(keys)),))
    }


_INDEXED = "EXISTS (SELECT 1 FROM lex_docs AS d WHERE d.key = m.key)"


def _nearest(side: str, at: int, order: str) -> str:
    """The indexed memory of a ``json_each`` row's dialog nearest its place ``at``, on ``side``.

    The row is ``[namespace, session_id, created_at, key, created_at, key]``;
    ``at`` is where the place's ``created_at`` sits in it, its key next.
    """
    return (
        "(SELECT m.key FROM memories AS m WHERE m.namespace = j.value ->> 0 "
        f"AND m.session_id = j.value ->> 1 AND (m.created_at, m.key) {side} "
        f"(j.value ->> {at}, j.value ->> {at + 1}) AND {_INDEXED} "
        f"ORDER BY m.created_at {order}, m.key {order} LIMIT 1)"
    )


_NEIGHBOURS = (
    f"SELECT j.key, {_nearest('<', 2, 'DESC')}, {_nearest('>', 4, 'ASC')} FROM json_each(?) AS j"
)


def indexed_neighbours(
    conn: apsw.Connection, spans: Sequence[tuple[Place, Place]]
) -> list[tuple[int | None, int | None]]:
    """Per ``(low, high)`` of one dialog: the indexed memories just before and just after them.

    One statement for a whole batch's dialogs: a load where every memory
    opens its own session has as many dialogs as memories, and a statement
    per lookup cost more than the two seeks it runs.
    """
    if not spans:
        return []
    rows = [
        [low.namespace, low.session_id, low.created_at, low.key, high.created_at, high.key]
        for low, high in spans
    ]
    found: dict[int, tuple[int | None, int | None]] = {
        int(i): (None if before is None else int(before), None if after is None else int(after))
        for i, before, after in conn.execute(_NEIGHBOURS, (json.dumps(rows),))
    }
    return [found[i] for i in range(len(rows))]


def indexed_between(conn: apsw.Connection, low: Place, high: Place) -> list[Place]:
    """The indexed memories of the dialog strictly between ``low`` and ``high``."""
    rows = conn.execute(
        "SELECT m.key, m.created_at FROM memories AS m WHERE m.namespace = ? "
        "AND m.session_id = ? AND (m.created_at, m.key) > (?, ?) "
        f"AND (m.created_at, m.key) < (?, ?) AND {_INDEXED}",
        (low.namespace, low.session_id, low.created_at, low.key, high.created_at, high.key),
    )
    return [Place(low.namespace, low.session_id, int(at), int(k)) for k, at in rows]


def contents(conn: apsw.Connection, keys: Iterable[int]) -> dict[int, str]:
    """The current content of each of ``keys`` that exists."""
    sql = "SELECT key, content FROM memories WHERE key IN (SELECT value FROM json_each(?))"
    return {int(k): str(c) for k, c in conn.execute(sql, (json.dumps(list(keys)),))}


def unforgotten(conn: apsw.Connection) -> list[tuple[int, str]]:
    """``(key, content)`` of every memory not forgotten, by key: what the index holds."""
    sql = "SELECT key, content FROM memories WHERE forgotten_at IS NULL ORDER BY key"
    return [(int(k), str(c)) for k, c in conn.execute(sql)]
