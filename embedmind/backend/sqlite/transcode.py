"""Schema 7: rewrite the postings of a schema 1-6 store in the compact encoding.

The fixed-width blocks (int64 keys, uint16 tfs, uint32 lengths: 14 bytes a
posting) become the compact blocks of :mod:`embedmind.backend.sqlite.blocks`,
and each document's term list (int64 ``(term id, count)`` pairs, its dialog
links as pairs with a negative "term id") becomes a LEB128 term list plus
``prev_key`` / ``next_key`` columns. Nothing is re-derived: every posting,
count, length, bound, version and link is carried over as stored, so the
store answers exactly as before — a re-analysis could differ (an alias table
change still pending, session context switched since).

Runs inside the migration's one write transaction
(:func:`embedmind.backend.sqlite.migrations.apply_pending`): a crash leaves the
file at schema 6, untouched, and the next open starts again.
"""

from __future__ import annotations

from typing import Any

import apsw
import numpy as np

from embedmind.backend.sqlite import postings
from embedmind.backend.sqlite.blocks import decode_fixed, encode_many
from embedmind.errors import StorageError

_CHUNK = 20_000
"""Rows rewritten per ``executemany``: bounds the memory a large store needs."""
_PREV, _NEXT = -1, -2


def compact_postings(conn: apsw.Connection) -> None:
    """Rewrite every block and document term list of the store in the compact encoding."""
    conn.execute(
        "ALTER TABLE lex_docs ADD COLUMN prev_key INTEGER;"
        "ALTER TABLE lex_docs ADD COLUMN next_key INTEGER;"
    )
    _docs(conn)
    _blocks(conn)


def _docs(conn: apsw.Connection) -> None:
    last = -1
    while True:
        rows: list[Any] = conn.execute(
            "SELECT key, terms FROM lex_docs WHERE key > ? ORDER BY key LIMIT ?", (last, _CHUNK)
        ).fetchall()
        if not rows:
            return
        keys, per_doc, ids, tfs, links = [], [], [], [], []
        for key, blob in rows:
            if len(blob) % 16:
                raise StorageError(f"the term list of document {key} is damaged")
            pairs = np.frombuffer(blob, dtype="<i8").reshape(-1, 2)
            terms = pairs[:, 0] >= 0
            around = {int(kind): int(other) for kind, other in pairs[~terms].tolist()}
            keys.append(int(key))
            per_doc.append(int(terms.sum()))
            ids.append(pairs[terms, 0])
            tfs.append(pairs[terms, 1])
            links.append((around.get(_PREV), around.get(_NEXT)))
        blobs = postings.pack_terms(
            per_doc,
            np.concatenate(ids).astype(np.int64),
            np.concatenate(tfs).astype(np.int64),
        )
        conn.executemany(
            "UPDATE lex_docs SET terms = ?, prev_key = ?, next_key = ? WHERE key = ?",
            [(b, p, n, k) for b, (p, n), k in zip(blobs, links, keys, strict=True)],
        )
        last = keys[-1]


def _blocks(conn: apsw.Connection) -> None:
    last = -1
    while True:
        rows: list[Any] = conn.execute(
            "SELECT block_id, count, data FROM lex_blocks WHERE block_id > ? "
            "ORDER BY block_id LIMIT ?",
            (last, _CHUNK),
        ).fetchall()
        if not rows:
            return
        parts = [decode_fixed(data, int(count)) for _, count, data in rows]
        kept = [(int(b), p) for (b, _, _), p in zip(rows, parts, strict=True) if len(p)]
        counts = np.asarray([len(p) for _, p in kept], dtype=np.int64)
        stops = np.cumsum(counts)
        encoded = (
            encode_many(
                np.concatenate([p.keys for _, p in kept]).astype(np.int64),
                np.concatenate([p.tfs for _, p in kept]).astype(np.int64),
                np.concatenate([p.lengths for _, p in kept]).astype(np.int64),
                stops - counts,
                stops,
            )
            if kept
            else []
        )
        conn.executemany(
            "UPDATE lex_blocks SET data = ? WHERE block_id = ?",
            [(data, block) for data, (block, _) in zip(encoded, kept, strict=True)],
        )
        last = int(rows[-1][0])
