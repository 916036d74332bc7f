"""The statements a call runs on one SQLite connection, and SQLite's plan for each.

For the tests that pin a query to an index: the store keeps no SQLite
statistics, so an index SQLite could use is not always the one it picks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw


def traced(conn: apsw.Connection, run: Callable[[], object]) -> list[tuple[str, Any]]:
    """The statements ``run()`` executes on ``conn``, with their bindings."""
    seen: list[tuple[str, Any]] = []

    def trace(_cursor: Any, sql: str, bindings: Any) -> bool:
        seen.append((sql, bindings))
        return True

    conn.exec_trace = trace
    try:
        run()
    finally:
        conn.exec_trace = None
    return seen


def plan(conn: apsw.Connection, sql: str, bindings: Any) -> list[str]:
    """SQLite's plan of ``sql``, one step per line (``EXPLAIN QUERY PLAN``)."""
    return [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", bindings)]
