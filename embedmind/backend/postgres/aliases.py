# The facet implements the documented methods of embedmind/backend/protocol.py (as the
# SQLite ones, which pyproject exempts the same way).
# ruff: noqa: D102
"""The alias facet on PostgreSQL: the table (:mod:`.alias_rows`) and its resumable re-index."""

from __future__ import annotations

from collections.abc import Sequence

from embedmind.backend.postgres import alias_rows, lexical
from embedmind.backend.postgres.facet import Facet


class PgAliases(Facet):
    """:class:`~embedmind.backend.protocol.AliasWrites` over PostgreSQL."""

    def rows(self) -> list[tuple[str, str]]:
        return alias_rows.rows(self.conn)

    def pending_count(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM alias_pending").fetchone()
        return int(row[0]) if row else 0

    # -- writes

    def put(self, entries: Sequence[tuple[str, str]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO aliases (key, target) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET target = excluded.target",
                list(entries),
            )
        alias_rows.bump(self.conn)

    def delete(self, keys: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM aliases WHERE key = ANY(%s)", (list(keys),))
        alias_rows.bump(self.conn)

    def mark_holding(self, key_terms: Sequence[str]) -> None:
        # Postings include the words a memory lends its dialog neighbours and its
        # alias field: a superset of the memories whose text holds the key.
        self.conn.execute(
            "INSERT INTO alias_pending (key) SELECT key FROM lex_postings "
            "WHERE term = ANY(%s) GROUP BY key HAVING count(*) = %s ON CONFLICT DO NOTHING",
            (list(set(key_terms)), len(set(key_terms))),
        )

    def pending(self, limit: int) -> list[int]:
        rows = self.conn.execute("SELECT key FROM alias_pending ORDER BY key LIMIT %s", (limit,))
        return [int(r[0]) for r in rows]

    def reindex(self, keys: Sequence[int]) -> int:
        done = lexical.reindex(self.conn, keys, session_context=self.context_on())
        self.conn.execute("DELETE FROM alias_pending WHERE key = ANY(%s)", (list(keys),))
        return done
