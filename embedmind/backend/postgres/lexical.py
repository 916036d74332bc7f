"""The lexical channel in SQL: the engine's analysed terms as postings, BM25 computed by PostgreSQL.

Each indexed memory has a ``lex_docs`` row (its length in weighted terms and
the dialog neighbours its postings were built with) and one ``lex_postings``
row per distinct term: ``(term, key, tf, length)``, the primary key leading
with the term, so a query reads exactly its terms' postings. Terms come from
:func:`embedmind.lexical.analyzer.analyze`, the same analyser the SQLite
backend uses for documents and queries, so tokenisation is identical.

BM25 is the engine's (:mod:`embedmind.lexical.bm25`: Lucene's idf, k1 = 1.2,
b = 0.75). The statistics are never one shared row that every writer updates:

* ``df`` is counted per query term from the postings themselves, in the query;
* ``N`` and the total length live in :data:`~.schema.LEX_SHARDS` counter rows; a
  writer adds to the first row no other open transaction holds (``FOR UPDATE
  SKIP LOCKED``) and a query sums them, so writers on different connections
  do not queue behind one another.

The filter is applied to the scored documents inside the same query, and every
posting of the query terms is scored, so a selective filter can never make the
channel return fewer than ``k`` hits while ``k`` matching memories exist.

**Aliases** (:mod:`embedmind.lexical.aliases`, the table in :mod:`.aliases`):
a memory's postings carry the alias field (the targets of the keys its text
holds) and a query's terms gain the targets of the keys it holds, at the
SQLite backend's weights — the same functions compute both.

**Session context** (as :mod:`embedmind.backend.sqlite.lexical.context`): a memory with a
``session_id`` is indexed as ``WEIGHT_OWN ×`` its terms ``+`` its alias field
``+ WEIGHT_NEIGHBOUR ×`` its previous and next turn's own terms (by
``created_at`` then key within its namespace and session); a memory alone in
its session is indexed as without a session. After
any change to a dialog, :func:`sync_dialogs` recomputes the dialog's links
with a window query and re-indexes exactly the memories whose links (or whose
neighbours' text) changed, so the postings always equal a rebuild. Writers of
one dialog take a transaction-scoped advisory lock on it, so two servers
appending turns to the same session cannot both miss each other; writers of
different dialogs never wait for each other.

**Date words** (:mod:`embedmind.lexical.dates`, the rule both backends share):
when the meta switch :data:`DATES_KEY` is on, a memory's own terms include
the day, month name and year of its ``created_at``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.backend.postgres import alias_rows
from embedmind.backend.postgres.schema import LEX_SHARDS
from embedmind.lexical import bm25

# One copy of the weighting: the SQLite backend's (it belongs in embedmind.lexical;
# asked for in the report of the PostgreSQL groundwork).
from embedmind.lexical.aliases import Fields, Table, fields, query_weights
from embedmind.lexical.analyzer import analyze
from embedmind.lexical.bm25 import K1, B
from embedmind.lexical.dates import dated
from embedmind.lexical.session_context import combined

Conn = psycopg.Connection[TupleRow]
Dialog = tuple[str, str]
"""``(namespace, session_id)``."""
DATES_KEY = "date_words"
"""Meta key of the date-words switch: ``true`` on; absent (an earlier release's store): off."""
_DIALOG_LOCK = 0x6C65_7864
"""First half of the advisory-lock key of a dialog ("lexd"); the second is its hash."""


@dataclass(frozen=True)
class Row:
    """What indexing needs of one memory."""

    key: int
    content: str
    dialog: Dialog | None
    created_at: int


def query_terms(text: str) -> list[str]:
    """The distinct analysed terms of a query, in order (as the SQLite backend's)."""
    return list(dict.fromkeys(analyze(text)))


# -- writes --------------------------------------------------------------------


def index(
    conn: Conn, keys: Sequence[int], *, session_context: bool, table: Table | None = None
) -> None:
    """Index memories that are not indexed yet (and re-index their dialog neighbours).

    ``table`` is the store's alias table (read from ``conn`` when not given),
    as for every function here that analyses a memory.
    """
    table = alias_rows.table(conn) if table is None else table
    rows = _rows(conn, keys)
    if not session_context:
        own = _fields(conn, rows, table)
        _put(conn, [(row.key, own[row.key].alone(), None) for row in rows])
        return
    alone = [row for row in rows if row.dialog is None]
    own = _fields(conn, alone, table)
    _put(conn, [(row.key, own[row.key].alone(), None) for row in alone])
    dialogs = {row.dialog for row in rows if row.dialog is not None}
    new = {row.key for row in rows if row.dialog is not None}
    sync_dialogs(conn, dialogs, table=table, new=new)


def unindex(
    conn: Conn, keys: Sequence[int], *, session_context: bool, table: Table | None = None
) -> None:
    """Drop memories from the index; with session context, re-index their old neighbours."""
    if not keys:
        return
    dialogs = {row.dialog for row in _rows(conn, keys) if row.dialog is not None}
    if session_context:
        # An upsert may have moved a memory to another session before it is
        # unindexed: its row names the new dialog, so the old one is found
        # through the neighbours its postings were linked to.
        linked = conn.execute(
            "SELECT prev_key, next_key FROM lex_docs WHERE key = ANY(%s) AND has_links",
            (list(keys),),
        ).fetchall()
        neighbours = sorted({int(k) for pair in linked for k in pair if k is not None})
        dialogs |= {row.dialog for row in _rows(conn, neighbours) if row.dialog is not None}
    if session_context and dialogs:
        _lock_dialogs(conn, dialogs)
    _drop(conn, keys)
    if session_context and dialogs:
        sync_dialogs(conn, dialogs, table=table)


def reindex(
    conn: Conn, keys: Sequence[int], *, session_context: bool, table: Table | None = None
) -> int:
    """Re-derive the postings of the indexed ``keys`` under ``table``; return how many.

    Their dialog links stay as they are (an alias change moves no memory); a
    forgotten or deleted memory has no postings to redo.
    """
    indexed: dict[int, tuple[int | None, int | None] | None] = {
        int(key): (prev, nxt) if has_links else None
        for key, has_links, prev, nxt in conn.execute(
            "SELECT key, has_links, prev_key, next_key FROM lex_docs WHERE key = ANY(%s) "
            "ORDER BY key",
            (sorted(set(keys)),),
        )
    }
    if not indexed:
        return 0
    table = alias_rows.table(conn) if table is None else table
    needed = set(indexed)
    if session_context:
        needed |= {o for pair in indexed.values() if pair for o in pair if o is not None}
    own = _fields(conn, _rows(conn, sorted(needed)), table)
    entries = [
        (key, combined(own, key, links) if session_context and links else own[key].alone(),
         links if session_context else None)
        for key, links in indexed.items()
    ]  # fmt: skip
    _drop(conn, list(indexed))
    _put(conn, entries)
    return len(indexed)


def sync_dialogs(
    conn: Conn,
    dialogs: Iterable[Dialog],
    *,
    table: Table | None = None,
    new: Iterable[int] = (),
    changed: Iterable[int] = (),
) -> None:
    """Bring the postings of ``dialogs`` to what a rebuild would write.

    Args:
        conn: A connection inside the write transaction.
        dialogs: The dialogs whose membership or text changed.
        table: The store's alias table (read from ``conn`` when not given).
        new: Keys of the dialogs' memories that are not indexed yet.
        changed: Keys whose content changed (their neighbours re-index too).
    """
    dialogs = sorted(set(dialogs))
    if not dialogs:
        return
    _lock_dialogs(conn, dialogs)
    new_keys, changed_keys = set(new), set(changed)
    rows = conn.execute(
        """
        WITH wanted AS (SELECT * FROM unnest(%s::text[], %s::text[]) AS w(namespace, session_id)),
        members AS (
            SELECT m.key, m.created_at, m.namespace, m.session_id,
                   d.key IS NOT NULL AS indexed, d.has_links, d.prev_key, d.next_key
            FROM memories m JOIN wanted w
              ON m.namespace = w.namespace AND m.session_id = w.session_id
            LEFT JOIN lex_docs d ON d.key = m.key
            WHERE m.forgotten_at IS NULL AND (d.key IS NOT NULL OR m.key = ANY(%s))
        )
        SELECT key, indexed, has_links, prev_key, next_key,
               lag(key) OVER w AS prev, lead(key) OVER w AS next
        FROM members
        WINDOW w AS (PARTITION BY namespace, session_id ORDER BY created_at, key)
        """,
        ([d[0] for d in dialogs], [d[1] for d in dialogs], sorted(new_keys)),
    ).fetchall()
    redo: dict[int, tuple[int | None, int | None]] = {}
    for key, indexed, has_links, prev_key, next_key, prev, nxt in rows:
        links = (prev, nxt)
        stale = not indexed or not has_links or (prev_key, next_key) != links
        touched = bool(changed_keys & {key, prev, nxt})
        if stale or touched:
            redo[key] = links
    if not redo:
        return
    needed = set(redo) | {o for pair in redo.values() for o in pair if o is not None}
    table = alias_rows.table(conn) if table is None else table
    own = _fields(conn, _rows(conn, sorted(needed)), table)
    _drop(conn, [key for key in redo if key not in new_keys])
    _put(conn, [(key, combined(own, key, links), links) for key, links in redo.items()])


def rebuild(conn: Conn, *, session_context: bool, table: Table | None = None) -> None:
    """Re-derive every posting from the live memories (the definition the increments match)."""
    conn.execute("DELETE FROM lex_docs")  # cascades to the postings
    conn.execute("UPDATE lex_stats SET doc_count = 0, total_length = 0")
    conn.execute("DELETE FROM alias_pending")  # every posting follows the current table again
    keys = [int(r[0]) for r in conn.execute("SELECT key FROM memories WHERE forgotten_at IS NULL")]
    index(conn, keys, session_context=session_context, table=table)


def _lock_dialogs(conn: Conn, dialogs: Iterable[Dialog]) -> None:
    # In a fixed order, so two writers locking several dialogs cannot deadlock.
    # Namespaces hold no control characters, so the separator is unambiguous; a
    # hash collision only makes two dialogs share a lock.
    for namespace, session in sorted(set(dialogs)):
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
            (_DIALOG_LOCK, f"{namespace}\x1f{session}"),
        )


def _rows(conn: Conn, keys: Sequence[int]) -> list[Row]:
    return [
        Row(int(key), content, None if session is None else (namespace, session), int(at))
        for key, content, namespace, session, at in conn.execute(
            "SELECT key, content, namespace, session_id, created_at FROM memories "
            "WHERE key = ANY(%s) ORDER BY key",
            (list(keys),),
        )
    ]


def dates_on(conn: Conn) -> bool:
    """Whether this store's postings carry date words (:data:`DATES_KEY`)."""
    row = conn.execute("SELECT value #>> '{}' FROM meta WHERE key = %s", (DATES_KEY,)).fetchone()
    return row is not None and row[0] == "true"


def _fields(conn: Conn, rows: Sequence[Row], table: Table) -> dict[int, Fields]:
    """Each row's fields under ``table``, with its date words when the store's switch is on."""
    if not rows:
        return {}
    dates = dates_on(conn)
    return {
        row.key: dated(fields(row.content, table), row.created_at if dates else None)
        for row in rows
    }


def _put(
    conn: Conn, entries: Sequence[tuple[int, Counter[str], tuple[int | None, int | None] | None]]
) -> None:
    """Write postings of documents that are not indexed (a sessionless empty one is skipped)."""
    entries = [e for e in entries if e[1] or e[2] is not None]
    if not entries:
        return
    with conn.cursor() as cur:
        # COPY for both tables: a batch's documents and postings in two statements.
        with cur.copy(
            "COPY lex_docs (key, length, has_links, prev_key, next_key) FROM STDIN"
        ) as copy:
            for key, counts, links in entries:
                copy.write_row(
                    (key, sum(counts.values()), links is not None, *(links or (None, None)))
                )
        with cur.copy("COPY lex_postings (term, key, tf, length) FROM STDIN") as copy:
            for key, counts, _ in entries:
                length = sum(counts.values())
                for term, tf in counts.items():
                    copy.write_row((term, key, tf, length))
    _add_stats(conn, len(entries), sum(sum(c.values()) for _, c, _ in entries))


def _drop(conn: Conn, keys: Sequence[int]) -> None:
    if not keys:
        return
    row = conn.execute(
        "WITH gone AS (DELETE FROM lex_docs WHERE key = ANY(%s) RETURNING length) "
        "SELECT count(*), coalesce(sum(length), 0) FROM gone",
        (list(keys),),
    ).fetchone()
    if row and row[0]:
        _add_stats(conn, -int(row[0]), -int(row[1]))


def _add_stats(conn: Conn, docs: int, length: int) -> None:
    # The first shard no other transaction holds, starting from this backend's
    # own: concurrent writers never wait on each other's counter row (a
    # transaction's own locked row is not skipped, so it keeps using it).
    updated = conn.execute(
        """
        UPDATE lex_stats SET doc_count = doc_count + %s, total_length = total_length + %s
        WHERE shard = (
            SELECT shard FROM lex_stats
            ORDER BY (shard - pg_backend_pid() %% %s + %s) %% %s
            LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        """,
        (docs, length, LEX_SHARDS, LEX_SHARDS, LEX_SHARDS),
    ).rowcount
    if not updated:  # every shard is held right now: wait for this backend's own
        conn.execute(
            "UPDATE lex_stats SET doc_count = doc_count + %s, total_length = total_length + %s "
            "WHERE shard = pg_backend_pid() %% %s",
            (docs, length, LEX_SHARDS),
        )


# -- reads ---------------------------------------------------------------------

# Each term's contribution is rounded to float4 before the float8 sum. A sum
# of a few float4 values is exact in float8, so a memory's score does not
# depend on the order the plan feeds its terms in (the same words in another
# order tie exactly, and rank by key); it keeps the float32 precision of the
# SQLite backend's impacts. Summing in term order (ORDER BY in the sum) would
# do the same at the cost of sorting every matching posting row.
_SCORE = """
    WITH stats AS (
        SELECT sum(doc_count)::float8 AS n,
               sum(total_length)::float8 / greatest(sum(doc_count), 1) AS avgdl
        FROM lex_stats
    ),
    wanted AS (SELECT * FROM unnest(%s::text[], %s::float8[]) AS w(term, weight)),
    postings AS MATERIALIZED (
        SELECT p.term, p.key, p.tf::float8 AS tf, p.length::float8 AS length
        FROM lex_postings p WHERE p.term = ANY(%s){only}
    ),
    idf AS (
        SELECT d.term, w.weight * ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5)) AS idf
        FROM ({df}) d JOIN wanted w ON w.term = d.term CROSS JOIN stats s
    ),
    scored AS (
        SELECT p.key, sum((
            i.idf * p.tf * {k1_plus_1} / (p.tf + {k1} * (1 - {b} + {b} * p.length / s.avgdl))
        )::float4::float8) AS score
        FROM postings p JOIN idf i ON i.term = p.term CROSS JOIN stats s
        GROUP BY p.key
    )
"""
_TOP = sql.SQL(
    _SCORE.format(
        only="", df="SELECT term, count(*)::float8 AS df FROM postings GROUP BY term",
        k1_plus_1="{k1_plus_1}", k1="{k1}", b="{b}",
    )
    + """
    SELECT s.key, s.score FROM scored s JOIN memories m ON m.key = s.key
    WHERE {condition}
    ORDER BY s.score DESC, s.key LIMIT %s
    """
)  # fmt: skip
"""The top ``k`` admitted: every posting of the query terms scored, then the filter."""
_OF_KEYS = sql.SQL(
    _SCORE.format(
        only=" AND p.key = ANY(%s)",
        df="SELECT term, count(*)::float8 AS df FROM lex_postings "
        "WHERE term = ANY(%s) GROUP BY term",
        k1_plus_1="{k1_plus_1}", k1="{k1}", b="{b}",
    )
    + "SELECT key, score FROM scored"
)  # fmt: skip
"""The scores of given keys (document frequencies over every posting)."""


def weighted_terms(text: str, table: Table) -> dict[str, float]:
    """The query's scoring terms: its own at 1, its alias expansions at the reduced weight."""
    return query_weights(query_terms(text), table)


def text_top(
    conn: Conn,
    text: str,
    condition: sql.Composable,
    params: Sequence[Any],
    k: int,
    *,
    table: Table | None = None,
) -> list[tuple[int, float]]:
    """The top ``k`` admitted memories by BM25: ``(key, score)`` best first, ties by key.

    Args:
        conn: A connection (one statement: a consistent snapshot).
        text: The query, analysed like the documents.
        condition: SQL over the memory alias ``m`` admitting rows (``%s`` placeholders).
        params: The condition's parameters.
        k: Hits wanted.
        table: The store's alias table (the query gains its keys' targets; read
            from ``conn`` when not given).
    """
    table = alias_rows.table(conn) if table is None else table
    return top(conn, weighted_terms(text, table), condition, params, k)


def top(
    conn: Conn, weights: dict[str, float], condition: sql.Composable, params: Sequence[Any], k: int
) -> list[tuple[int, float]]:
    """:func:`text_top` of already weighted query terms."""
    if not weights or k <= 0:
        return []
    terms = list(weights)
    query = _compose(_TOP, condition=condition)
    rows = conn.execute(query, [terms, list(weights.values()), terms, *params, k])
    return [(int(key), float(score)) for key, score in rows]


def scores_of(conn: Conn, weights: dict[str, float], keys: Sequence[int]) -> dict[int, float]:
    """The BM25 score of each of ``keys`` under the weighted query (absent: no term matches)."""
    if not weights or not keys:
        return {}
    terms = list(weights)
    rows = conn.execute(
        _compose(_OF_KEYS), [terms, list(weights.values()), terms, list(keys), terms]
    )
    return {int(key): float(score) for key, score in rows}


def _compose(query: sql.SQL, **parts: sql.Composable) -> sql.Composed:
    return query.format(k1=_float(K1), k1_plus_1=_float(K1 + 1.0), b=_float(B), **parts)


def context_terms(conn: Conn, key: int, content: str, query: str) -> tuple[str, ...]:
    """The query terms a memory matches only through its neighbours' text (for explain).

    As the SQLite backend's: empty when its own words and its alias field hold
    every query term it matches, or when its postings carry no context.
    """
    mine = fields(content, alias_rows.table(conn))
    if dates_on(conn):
        row = conn.execute("SELECT created_at FROM memories WHERE key = %s", (key,)).fetchone()
        mine = dated(mine, None if row is None else int(row[0]))
    own = {*mine.own, *mine.alias}
    wanted = [t for t in query_terms(query) if t not in own]
    if not wanted:
        return ()
    rows = conn.execute(
        "SELECT p.term FROM lex_postings p JOIN lex_docs d ON d.key = p.key "
        "WHERE p.key = %s AND p.term = ANY(%s) AND d.has_links "
        "AND (d.prev_key IS NOT NULL OR d.next_key IS NOT NULL)",
        (key, wanted),
    )
    held = {r[0] for r in rows}
    return tuple(t for t in wanted if t in held)


def _float(value: float) -> sql.Composable:
    return sql.SQL("{}::float8").format(sql.Literal(value))


def statistics(conn: Conn) -> tuple[int, int]:
    """``(indexed documents, total weighted length)`` summed over the shards."""
    row = conn.execute(
        "SELECT coalesce(sum(doc_count), 0), coalesce(sum(total_length), 0) FROM lex_stats"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def ceiling(conn: Conn, weights: dict[str, float]) -> float:
    """:func:`embedmind.lexical.bm25.ceiling` of weighted query terms, from these postings."""
    if not weights:
        return 0.0
    rows = conn.execute(
        "SELECT term, count(*) FROM lex_postings WHERE term = ANY(%s) GROUP BY term",
        (list(weights),),
    )
    dfs = {str(term): int(df) for term, df in rows}
    docs, _ = statistics(conn)
    return bm25.ceiling(weights, dfs, docs)


def dialog_links(conn: Conn, keys: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
    """The dialog links the postings of each of ``keys`` were built with (none: omitted)."""
    rows = conn.execute(
        "SELECT key, prev_key, next_key FROM lex_docs WHERE key = ANY(%s) AND has_links "
        "AND (prev_key IS NOT NULL OR next_key IS NOT NULL)",
        (list(keys),),
    )
    return {
        int(k): (None if p is None else int(p), None if n is None else int(n)) for k, p, n in rows
    }
