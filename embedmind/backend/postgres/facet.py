"""What every PostgreSQL facet shares: the session's connection and its compiled selections."""

from __future__ import annotations

import psycopg
from psycopg.rows import TupleRow

from embedmind.backend.postgres.selection_sql import Condition, compile_selection
from embedmind.backend.values import Space
from embedmind.query.selection import Selection

Conn = psycopg.Connection[TupleRow]
TABLES = {Space.MEMORY: "memory_vectors", Space.FRAGMENTS: "fragments"}
"""The vector table of each space."""
CONTEXT_KEY = "session_context"
"""The meta key of the session-context switch (absent: on, as for a new SQLite store)."""


class Facet:
    """A facet of one session: its connection, and selections compiled once per session."""

    def __init__(self, conn: Conn, compiled: dict[int, tuple[Selection, Condition]]) -> None:
        self.conn = conn
        self._compiled = compiled

    def condition(self, selection: Selection) -> Condition:
        """The compiled selection, compiled once per session and selection."""
        cached = self._compiled.get(id(selection))
        if cached is None or cached[0] is not selection:
            cached = (selection, compile_selection(selection))
            self._compiled[id(selection)] = cached
        return cached[1]

    def meta_value(self, key: str) -> str | None:
        """One meta value as text, or ``None``."""
        row = self.conn.execute("SELECT value #>> '{}' FROM meta WHERE key = %s", (key,)).fetchone()
        return None if row is None else str(row[0])

    def context_on(self) -> bool:
        """Whether the text index carries session context."""
        return self.meta_value(CONTEXT_KEY) != "false"  # on for a new store, as in SQLite
