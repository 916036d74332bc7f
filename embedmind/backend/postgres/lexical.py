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

**Session context** (as :mod:`embedmind.backend.sqlite.lexical.context`): a memory with a
``session_id`` is indexed as ``WEIGHT_OWN ×`` its terms ``+ WEIGHT_NEIGHBOUR ×``
its previous and next turn's (by ``created_at`` then key within its namespace
and session); a memory alone in its session counts its own terms once. After
any change to a dialog, :func:`sync_dialogs` recomputes the dialog's links
with a window query and re-indexes exactly the memories whose links (or whose
neighbours' text) changed, so the postings always equal a rebuild. Writers of
one dialog take a transaction-scoped advisory lock on it, so two servers
appending turns to the same session cannot both miss each other; writers of
different dialogs never wait for each other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.backend.postgres.schema import LEX_SHARDS

# One copy of the weights: the SQLite backend's (they belong in embedmind.lexical;
# asked for in the report of the PostgreSQL groundwork).
from embedmind.backend.sqlite.lexical.context import WEIGHT_NEIGHBOUR, WEIGHT_OWN
from embedmind.lexical.analyzer import analyze
from embedmind.lexical.bm25 import K1, B

Conn = psycopg.Connection[TupleRow]
Dialog = tuple[str, str]
"""``(namespace, session_id)``."""
_DIALOG_LOCK = 0x6C65_7864
"""First half of the advisory-lock key of a dialog ("lexd"); the second is its hash."""


@dataclass(frozen=True)
class Row:
    """What indexing needs of one memory."""

    key: int
    content: str
    dialog: Dialog | None


def query_terms(text: str) -> list[str]:
    """The distinct analysed terms of a query, in order (as the SQLite backend's)."""
    return list(dict.fromkeys(analyze(text)))


# -- writes --------------------------------------------------------------------


def index(conn: Conn, keys: Sequence[int], *, session_context: bool) -> None:
    """Index memories that are not indexed yet (and re-index their dialog neighbours)."""
    rows = _rows(conn, keys)
    if not session_context:
        _put(conn, [(row.key, Counter(analyze(row.content)), None) for row in rows])
        return
    alone = [row for row in rows if row.dialog is None]
    _put(conn, [(row.key, Counter(analyze(row.content)), None) for row in alone])
    dialogs = {row.dialog for row in rows if row.dialog is not None}
    sync_dialogs(conn, dialogs, new={row.key for row in rows if row.dialog is not None})


def unindex(conn: Conn, keys: Sequence[int], *, session_context: bool) -> None:
    """Drop memories from the index; with session context, re-index their old neighbours."""
    if not keys:
        return
    dialogs = {row.dialog for row in _rows(conn, keys) if row.dialog is not None}
    if session_context and dialogs:
        _lock_dialogs(conn, dialogs)
    _drop(conn, keys)
    if session_context and dialogs:
        sync_dialogs(conn, dialogs)


def sync_dialogs(
    conn: Conn, dialogs: Iterable[Dialog], *, new: Iterable[int] = (), changed: Iterable[int] = ()
) -> None:
    """Bring the postings of ``dialogs`` to what a rebuild would write.

    Args:
        conn: A connection inside the write transaction.
        dialogs: The dialogs whose membership or text changed.
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
    own = {row.key: Counter(analyze(row.content)) for row in _rows(conn, sorted(needed))}
    _drop(conn, [key for key in redo if key not in new_keys])
    _put(conn, [(key, combined(own, key, links), links) for key, links in redo.items()])


def combined(
    own: dict[int, Counter[str]], key: int, links: tuple[int | None, int | None]
) -> Counter[str]:
    """``WEIGHT_OWN × own(key) + WEIGHT_NEIGHBOUR × own(each neighbour)``; alone: own once."""
    weight = WEIGHT_OWN if any(o is not None for o in links) else 1
    counts: Counter[str] = Counter()
    for term, tf in own[key].items():
        counts[term] += weight * tf
    for other in links:
        if other is not None:
            for term, tf in own[other].items():
                counts[term] += WEIGHT_NEIGHBOUR * tf
    return counts


def rebuild(conn: Conn, *, session_context: bool) -> None:
    """Re-derive every posting from the live memories (the definition the increments match)."""
    conn.execute("DELETE FROM lex_docs")  # cascades to the postings
    conn.execute("UPDATE lex_stats SET doc_count = 0, total_length = 0")
    keys = [int(r[0]) for r in conn.execute("SELECT key FROM memories WHERE forgotten_at IS NULL")]
    index(conn, keys, session_context=session_context)


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
        Row(int(key), content, None if session is None else (namespace, session))
        for key, content, namespace, session in conn.execute(
            "SELECT key, content, namespace, session_id FROM memories WHERE key = ANY(%s) "
            "ORDER BY key",
            (list(keys),),
        )
    ]


def _put(
    conn: Conn, entries: Sequence[tuple[int, Counter[str], tuple[int | None, int | None] | None]]
) -> None:
    """Write postings of documents that are not indexed (a sessionless empty one is skipped)."""
    entries = [e for e in entries if e[1] or e[2] is not None]
    if not entries:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO lex_docs (key, length, has_links, prev_key, next_key) "
            "VALUES (%s, %s, %s, %s, %s)",
            [
                (key, sum(counts.values()), links is not None, *(links or (None, None)))
                for key, counts, links in entries
            ],
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

_TOP = sql.SQL(
    """
    WITH stats AS (
        SELECT sum(doc_count)::float8 AS n,
               sum(total_length)::float8 / greatest(sum(doc_count), 1) AS avgdl
        FROM lex_stats
    ),
    postings AS MATERIALIZED (
        SELECT p.term, p.key, p.tf::float8 AS tf, p.length::float8 AS length
        FROM lex_postings p WHERE p.term = ANY(%s)
    ),
    idf AS (
        SELECT p.term, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
        FROM postings p CROSS JOIN stats s GROUP BY p.term, s.n
    ),
    scored AS (
        SELECT p.key, sum(
            i.idf * p.tf * {k1_plus_1} / (p.tf + {k1} * (1 - {b} + {b} * p.length / s.avgdl))
        ) AS score
        FROM postings p JOIN idf i ON i.term = p.term CROSS JOIN stats s
        GROUP BY p.key
    )
    SELECT s.key, s.score FROM scored s JOIN memories m ON m.key = s.key
    WHERE {condition}
    ORDER BY s.score DESC, s.key LIMIT %s
    """
)


def text_top(
    conn: Conn, text: str, condition: sql.Composable, params: Sequence[Any], k: int
) -> list[tuple[int, float]]:
    """The top ``k`` admitted memories by BM25: ``(key, score)`` best first, ties by key.

    Args:
        conn: A connection (one statement: a consistent snapshot).
        text: The query, analysed like the documents.
        condition: SQL over the memory alias ``m`` admitting rows (``%s`` placeholders).
        params: The condition's parameters.
        k: Hits wanted.
    """
    terms = query_terms(text)
    if not terms or k <= 0:
        return []
    query = _TOP.format(k1=_float(K1), k1_plus_1=_float(K1 + 1.0), b=_float(B), condition=condition)
    rows = conn.execute(query, [terms, *params, k])
    return [(int(key), float(score)) for key, score in rows]


def _float(value: float) -> sql.Composable:
    return sql.SQL("{}::float8").format(sql.Literal(value))


def statistics(conn: Conn) -> tuple[int, int]:
    """``(indexed documents, total weighted length)`` summed over the shards."""
    row = conn.execute(
        "SELECT coalesce(sum(doc_count), 0), coalesce(sum(total_length), 0) FROM lex_stats"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)
