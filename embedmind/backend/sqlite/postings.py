"""SQL for the BM25 index: the term dictionary, posting blocks, documents, statistics.

Tables (see ``migrations.m0001_initial``):

- ``lex_terms(term_id, term, df, version)`` — the dictionary; a term whose
  last document goes leaves it.
- ``lex_blocks(block_id, term_id, first_key, count, max_tf, min_length,
  version, data)`` — packed postings (:mod:`embedmind.backend.sqlite.blocks`).
  ``first_key`` is a lower bound of the block's keys, so the block holding a
  key is the one with the largest ``first_key`` not above it.
- ``lex_docs(key, length, terms, prev_key, next_key)`` — each document's
  term ids and counts (:func:`pack_terms`), so removing a document touches
  exactly its own postings, and with session context the dialog neighbours
  its postings were built with (NULL: none).
- ``lex_stats`` — document count and total length, for idf and avgdl.

``version`` columns hold the write sequence of the transaction that last
changed the row; readers cache decoded blocks and reload only changed ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite import varint
from embedmind.backend.sqlite.blocks import (
    Head,
    Postings,
    decode,
    decode_many,
    encode,
    heads_of,
    last_keys,
)
from embedmind.backend.sqlite.connection import fetch_one, insert_json_rows
from embedmind.backend.sqlite.pair_order import pair_order
from embedmind.errors import StorageError
from embedmind.lexical import bm25, session_context


@dataclass(frozen=True)
class TermRow:
    """A dictionary entry."""

    term_id: int
    df: int
    version: int


@dataclass(frozen=True)
class BlockRow:
    """A posting block, decoded."""

    block_id: int
    first_key: int
    postings: Postings


@dataclass(frozen=True)
class LastBlock:
    """A term's last block as stored, with its largest key and head (to append to it)."""

    block_id: int
    first_key: int
    count: int
    last_key: int
    data: bytes
    max_tf: int
    min_length: int
    head: Head


def lookup_terms(conn: apsw.Connection, terms: Iterable[str]) -> dict[str, TermRow]:
    """Return the dictionary rows of the given terms that exist."""
    terms = list(terms)
    if not terms:
        return {}
    sql = (
        "SELECT term, term_id, df, version FROM lex_terms "
        "WHERE term IN (SELECT value FROM json_each(?))"
    )
    return {
        row[0]: TermRow(row[1], row[2], row[3])
        for row in conn.execute(sql, (json.dumps(terms, ensure_ascii=False),))
    }


def term_ids(conn: apsw.Connection, terms: Sequence[str]) -> dict[str, int]:
    """The ids of the given terms that exist (a bulk write's lookup: ids only)."""
    if not terms:
        return {}
    sql = "SELECT term, term_id FROM lex_terms WHERE term IN (SELECT value FROM json_each(?))"
    return dict(conn.execute(sql, (json.dumps(terms, ensure_ascii=False),)))


def create_terms(conn: apsw.Connection, terms: Sequence[str], version: int) -> dict[str, int]:
    """Add terms (absent and distinct) with df 0 and return their ids."""
    if not terms:
        return {}
    sql = (
        "INSERT INTO lex_terms (term, df, version) "
        "SELECT value, 0, ? FROM json_each(?) ORDER BY key"
    )
    keys = insert_json_rows(
        conn, sql, (version, json.dumps(list(terms), ensure_ascii=False)), len(terms)
    )
    return dict(zip(terms, keys, strict=True))


def add_dfs(conn: apsw.Connection, deltas: Sequence[tuple[int, int]], version: int) -> None:
    """Raise document frequencies: ``(term_id, positive delta)`` pairs."""
    conn.executemany(
        "UPDATE lex_terms SET df = df + ?, version = ? WHERE term_id = ?",
        [(delta, version, term_id) for term_id, delta in deltas],
    )


def change_df(conn: apsw.Connection, term_id: int, delta: int, version: int) -> int:
    """Adjust a term's document frequency; delete the term when it reaches 0."""
    row = fetch_one(
        conn,
        "UPDATE lex_terms SET df = df + ?, version = ? WHERE term_id = ? RETURNING df",
        (delta, version, term_id),
    )
    df = int(row[0])
    if df <= 0:
        conn.execute("DELETE FROM lex_terms WHERE term_id = ?", (term_id,))
    return df


def _block(row: Sequence[object] | None) -> BlockRow | None:
    if row is None:
        return None
    block_id, first_key, count, data = row
    return BlockRow(int(block_id), int(first_key), decode(data, int(count)))  # type: ignore[call-overload, arg-type]


_BLOCK_COLUMNS = "block_id, first_key, count, data"


def last_blocks(conn: apsw.Connection, term_ids: Sequence[int]) -> dict[int, LastBlock]:
    """The block with the largest keys of each of ``term_ids`` that has blocks."""
    sql = (
        "SELECT j.value, b.block_id, b.first_key, b.count, b.data, b.max_tf, b.min_length "
        "FROM json_each(?) AS j JOIN lex_blocks AS b ON b.block_id = (SELECT block_id "
        "FROM lex_blocks WHERE term_id = j.value ORDER BY first_key DESC LIMIT 1)"
    )
    rows: list[Any] = conn.execute(sql, (json.dumps(list(term_ids)),)).fetchall()
    blobs, counts = [row[4] for row in rows], [row[3] for row in rows]
    heads = heads_of(blobs, counts)
    lasts = last_keys(blobs, counts, heads).tolist()
    return {
        row[0]: LastBlock(row[1], row[2], row[3], last, row[4], row[5], row[6], head)
        for row, last, head in zip(rows, lasts, heads, strict=True)
    }


def decode_rows(rows: Sequence[tuple[bytes, int]]) -> list[Postings]:
    """Decode ``(data, count)`` blocks in one pass (:func:`decode_many`), one slice each."""
    whole = decode_many([data for data, _ in rows], [count for _, count in rows])
    out, at = [], 0
    for _, count in rows:
        out.append(whole.slice(at, at + count))
        at += count
    return out


BlockWrite = tuple[int | None, int, int, Postings]
"""``(block_id or None for a new block, term_id, first_key, postings)``."""


def write_blocks(conn: apsw.Connection, writes: Sequence[BlockWrite], version: int) -> None:
    """Insert or overwrite many blocks."""
    write_encoded(
        conn,
        [
            (block, term, first, len(p), int(p.tfs.max()), int(p.lengths.min()), encode(p))
            for block, term, first, p in writes
        ],
        version,
    )


EncodedBlock = tuple[int | None, int, int, int, int, int, bytes]
"""``(block_id or None, term_id, first_key, count, max_tf, min_length, data)``, encoded."""


def write_encoded(conn: apsw.Connection, blocks: Sequence[EncodedBlock], version: int) -> None:
    """Insert or overwrite blocks whose bounds and bytes are computed already."""
    inserts = [(t, f, c, m, n, version, d) for b, t, f, c, m, n, d in blocks if b is None]
    updates = [(t, f, c, m, n, version, d, b) for b, t, f, c, m, n, d in blocks if b is not None]
    # Updates first: a split lowers the old block's first key, and the new upper
    # block takes the old first key, which (term_id, first_key) holds unique.
    if updates:
        conn.executemany(
            "UPDATE lex_blocks SET term_id = ?, first_key = ?, count = ?, max_tf = ?, "
            "min_length = ?, version = ?, data = ? WHERE block_id = ?",
            updates,
        )
    if inserts:
        conn.executemany(
            "INSERT INTO lex_blocks (term_id, first_key, count, max_tf, min_length, version, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            inserts,
        )


def block_for_key(conn: apsw.Connection, term_id: int, key: int) -> BlockRow | None:
    """The block that holds (or would hold) ``key``: the first block when ``key`` precedes all."""
    found = conn.execute(
        f"SELECT {_BLOCK_COLUMNS} FROM lex_blocks WHERE term_id = ? AND first_key <= ? "
        "ORDER BY first_key DESC LIMIT 1",
        (term_id, key),
    ).fetchone()
    if found is None:
        found = conn.execute(
            f"SELECT {_BLOCK_COLUMNS} FROM lex_blocks WHERE term_id = ? ORDER BY first_key LIMIT 1",
            (term_id,),
        ).fetchone()
    return _block(found)


def write_block(
    conn: apsw.Connection,
    block_id: int | None,
    term_id: int,
    first_key: int,
    postings: Postings,
    version: int,
) -> None:
    """Insert a block (``block_id`` None) or overwrite one."""
    write_blocks(conn, [(block_id, term_id, first_key, postings)], version)


def delete_block(conn: apsw.Connection, block_id: int) -> None:
    """Remove an emptied block."""
    conn.execute("DELETE FROM lex_blocks WHERE block_id = ?", (block_id,))


def block_versions(conn: apsw.Connection, term_id: int) -> list[tuple[int, int]]:
    """``(block_id, version)`` of a term's blocks, in key order."""
    return [
        (int(r[0]), int(r[1]))
        for r in conn.execute(
            "SELECT block_id, version FROM lex_blocks WHERE term_id = ? ORDER BY first_key",
            (term_id,),
        )
    ]


def load_blocks(conn: apsw.Connection, block_ids: Sequence[int]) -> dict[int, Postings]:
    """Decode the given blocks."""
    rows: list[Any] = conn.execute(
        "SELECT block_id, count, data FROM lex_blocks "
        "WHERE block_id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(block_ids)),),
    ).fetchall()
    parts = decode_rows([(row[2], int(row[1])) for row in rows])
    return {int(row[0]): part for row, part in zip(rows, parts, strict=True)}


def get_doc(
    conn: apsw.Connection, key: int
) -> tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """A document's length, term ids and term counts, or None when not indexed."""
    entry = get_entry(conn, key)
    return None if entry is None else entry[:3]


Links = session_context.Links


def get_entry(
    conn: apsw.Connection, key: int
) -> tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64], Links] | None:
    """A document's length, term ids (ascending), term counts and dialog links, or None."""
    row = conn.execute(
        "SELECT length, terms, prev_key, next_key FROM lex_docs WHERE key = ?", (key,)
    ).fetchone()
    if row is None:
        return None
    term_ids, tfs = unpack_terms(row[1], key)
    return int(row[0]), term_ids, tfs, (row[2], row[3])


def unpack_terms(blob: bytes, key: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A ``lex_docs.terms`` blob's term ids (ascending) and their counts.

    Raises:
        StorageError: When the blob is not a term list (a damaged row).
    """
    try:
        values = varint.decode_all(blob)
    except StorageError as exc:
        raise StorageError(f"the term list of document {key} is damaged: {exc}") from None
    if len(values) % 2:
        raise StorageError(f"the term list of document {key} is damaged")
    n = len(values) // 2
    return np.cumsum(values[:n]), values[n:]


def pack_terms(
    per_doc: Sequence[int], term_ids: npt.NDArray[np.int64], tfs: npt.NDArray[np.int64]
) -> list[bytes]:
    """The ``lex_docs.terms`` blob of each document; doc ``i`` owns ``per_doc[i]`` pairs.

    A blob is LEB128 (:mod:`embedmind.backend.sqlite.varint`): the document's
    term ids in ascending order as gaps (the first one whole), then each
    one's count — a dozen terms cost about 30 bytes (they cost 16 a term as
    int64 pairs before schema 7). The whole batch is encoded at once.
    """
    counts = np.asarray(per_doc, dtype=np.int64)
    if not len(counts):
        return []
    doc_of = np.repeat(np.arange(len(counts)), counts)
    order = pair_order(doc_of, term_ids)
    ids, counted = term_ids[order], tfs[order]
    starts = np.cumsum(counts) - counts
    gaps = np.empty_like(ids)
    if len(ids):
        gaps[0] = ids[0]
        gaps[1:] = np.diff(ids)
    nonempty = starts[counts > 0]
    gaps[nonempty] = ids[nonempty]  # each document's first id is whole
    offset = np.arange(len(ids), dtype=np.int64) - starts[doc_of]
    values = np.empty(2 * len(ids), dtype=np.int64)
    values[2 * starts[doc_of] + offset] = gaps
    values[2 * starts[doc_of] + counts[doc_of] + offset] = counted
    nbytes = varint.sizes(values)
    data = varint.encode(values, nbytes).tobytes()
    cum = np.concatenate([[0], np.cumsum(nbytes)]).tolist()
    bounds = (2 * starts).tolist()
    return [data[cum[a] : cum[a + 2 * n]] for a, n in zip(bounds, counts.tolist(), strict=True)]


def put_packed_docs(
    conn: apsw.Connection, docs: Sequence[tuple[int, int, bytes, int | None, int | None]]
) -> None:
    """Record documents: ``(key, length, terms blob, previous, next)`` (:func:`pack_terms`)."""
    conn.executemany(
        "INSERT INTO lex_docs (key, length, terms, prev_key, next_key) VALUES (?, ?, ?, ?, ?)",
        docs,
    )


def delete_doc(conn: apsw.Connection, key: int) -> None:
    """Forget a document's term list."""
    conn.execute("DELETE FROM lex_docs WHERE key = ?", (key,))


def stats(conn: apsw.Connection) -> tuple[int, int]:
    """``(document count, total length)`` of the index."""
    row = fetch_one(conn, "SELECT doc_count, total_length FROM lex_stats WHERE id = 1")
    return int(row[0]), int(row[1])


def add_stats(conn: apsw.Connection, docs: int, length: int) -> None:
    """Adjust the collection statistics."""
    conn.execute(
        "UPDATE lex_stats SET doc_count = doc_count + ?, total_length = total_length + ? "
        "WHERE id = 1",
        (docs, length),
    )


def term_count(conn: apsw.Connection) -> int:
    """Number of terms in the dictionary."""
    return int(fetch_one(conn, "SELECT count(*) FROM lex_terms")[0])


def ceiling(conn: apsw.Connection, weights: dict[str, float]) -> float:
    """:func:`embedmind.lexical.bm25.ceiling` of weighted query terms, from this index."""
    rows = lookup_terms(conn, weights)
    doc_count, _ = stats(conn)
    return bm25.ceiling(weights, {term: row.df for term, row in rows.items()}, doc_count)


def dialog_links(conn: apsw.Connection, keys: Sequence[int]) -> dict[int, Links]:
    """The dialog links the postings of each of ``keys`` were built with (none: omitted)."""
    sql = (
        "SELECT key, prev_key, next_key FROM lex_docs "
        "WHERE key IN (SELECT value FROM json_each(?)) "
        "AND (prev_key IS NOT NULL OR next_key IS NOT NULL)"
    )
    return {
        int(k): (None if p is None else int(p), None if n is None else int(n))
        for k, p, n in conn.execute(sql, (json.dumps([int(k) for k in keys]),))
    }
