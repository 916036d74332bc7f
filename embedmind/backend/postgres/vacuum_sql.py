"""The PostgreSQL vacuum: rewrite every table of the store so no removed byte stays in its files.

A redaction, a delete or an upsert leaves the old row versions in the heap and
their keys in the indexes (B-tree, GIN): a plain ``VACUUM`` marks the space free
but leaves its bytes in the data files until a later write happens to cover
them. ``VACUUM (FULL, ANALYZE)`` copies the live rows of each table of the
store's schema into new files, rebuilds its indexes (and its TOAST table) from
them and analyses them; the old files are truncated when each table's
transaction commits and unlinked at the next checkpoint. The rewrite is of
every table, not only the ones a redaction touched: which tables hold dead row
versions is not known exactly (the statistics that count them are
approximate), and a delete or upsert leaves them in almost all of them.

``ANALYZE`` samples column values into ``pg_statistic`` (most-common values,
histogram bounds): statistics taken before the removal can hold the removed
words, and replacing them leaves the old statistics rows dead in its file, so
``pg_statistic`` is rewritten last, once every table has been analysed again.
``ANALYZE`` keeps the old statistics of a table left with no row, so those are
cleared first (PostgreSQL 18 or newer: on 17 they stay until a superuser
deletes them).

Each table is rewritten in its own transaction under an ``ACCESS EXCLUSIVE``
lock: readers and writers of that table wait until it is done, and the
rewrite itself waits at most the store's ``lock_timeout`` for the
transactions using it (:class:`~embedmind.errors.StoreBusyError` past it). A
table the store's role may not vacuum is skipped by the server with a
warning, which is logged here; ``pg_statistic`` needs the database's owner or
the ``MAINTAIN`` privilege (role ``pg_maintain``).
"""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

logger = logging.getLogger(__name__)

Conn = psycopg.Connection[TupleRow]
_CLEAR_STATS_VERSION = 180_000
"""The first server version with ``pg_clear_attribute_stats``."""


def store_tables(conn: Conn) -> list[str]:
    """The ordinary tables of the schema first on the search path (the store's), by name."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c "
        "WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relkind = 'r' "
        "ORDER BY c.relname"
    )
    return [str(r[0]) for r in rows]


def rewrite(conn: Conn) -> None:
    """Rewrite and analyse every table of the store, then rewrite ``pg_statistic``.

    Args:
        conn: A connection in autocommit mode (``VACUUM`` cannot run inside a
            transaction block) with the store's schema first on its search path.
    """
    tables = store_tables(conn)
    warnings: list[str] = []

    def note(diagnostic: psycopg.errors.Diagnostic) -> None:
        if diagnostic.severity_nonlocalized == "WARNING" and diagnostic.message_primary:
            warnings.append(diagnostic.message_primary)

    conn.add_notice_handler(note)
    try:
        # One statement: the server commits after each table, so a table's
        # lock is held only while that table is rewritten.
        names = sql.SQL(", ").join(sql.Identifier(t) for t in tables)
        conn.execute(sql.SQL("VACUUM (FULL, ANALYZE) {}").format(names))
        clear_emptied_statistics(conn, tables)
        conn.execute("VACUUM (FULL) pg_catalog.pg_statistic")
    finally:
        conn.remove_notice_handler(note)
    for message in warnings:  # e.g. "permission denied to vacuum ..., skipping it"
        logger.warning("vacuum may have left old bytes in the database's files: %s", message)


def clear_emptied_statistics(conn: Conn, tables: list[str]) -> None:
    """Drop the column statistics of the tables that hold no row (PostgreSQL 18 or newer).

    ``ANALYZE`` of an empty table keeps the statistics sampled while it had
    rows, values included; ``pg_clear_attribute_stats`` (new in 18) is the only
    way to drop them short of a superuser's ``DELETE FROM pg_statistic``.
    """
    if conn.info.server_version < _CLEAR_STATS_VERSION:
        return
    empty = [t for t in tables if _is_empty(conn, t)]
    if empty:
        conn.execute(
            "SELECT pg_clear_attribute_stats(s.schemaname::text, s.tablename::text, "
            "s.attname::text, s.inherited) FROM pg_stats s "
            "WHERE s.schemaname = current_schema() AND s.tablename = ANY(%s)",
            (empty,),
        )


def _is_empty(conn: Conn, table: str) -> bool:
    query = sql.SQL("SELECT NOT EXISTS (SELECT FROM {})").format(sql.Identifier(table))
    row = conn.execute(query).fetchone()
    return bool(row and row[0])
