"""The bulk write path and the one-at-a-time path leave byte-identical logical state.

Oracle: the same drafts written by one ``remember_many`` (any batch size) and
by one ``remember_many([draft])`` per draft, into two fresh stores with the
same alias table. Everything is compared: every memory row, tag, entity and
relation, every vector blob and the vector log, the lexical dictionary (by
term: ids are assigned in a different order), every document's term list and
dialog links, the collection statistics, the posting blocks themselves (first
key, count, max tf, min length and bytes, per term in key order), and the
results of text and vector recall. Blocks are made tiny so batches
split and top them up.

Each term's postings (keys, tfs and lengths, concatenated over its blocks in
key order) are always byte-identical. The blocks themselves are when every
posting is appended (no session context, so no older document re-indexed):
a term's last block is topped up to the block size either way. With session
context, one at a time re-indexes a dialog neighbour at every turn, dropping
and re-inserting its postings between later keys, where a batch writes it
once: the same postings, cut at other block boundaries.

Not compared, because they count transactions rather than state: the write
sequence and the ``version`` columns it stamps, the autoincrement counters of
term and block ids, and the alias table's version token (random per change).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import apsw
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import blocks, bulk_postings, session_writes
from embedmind.backend.sqlite.blocks import decode
from embedmind.backend.sqlite.lexical import index as lexical_index
from embedmind.backend.sqlite.postings import get_entry
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.model import Draft

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
NOW = T0 + dt.timedelta(days=400)
WORDS = ["lisbon", "dog", "cello", "recital", "nyc", "bees", "job", "ceviche", "vet", "york"]
ALIASES = {"nyc": "new york", "vet": "veterinarian"}
QUERIES = ["dog cello", "new york recital", "bees job vet", "lisbon"]
DIMS = 16


def _dump(conn: apsw.Connection) -> dict[str, Any]:
    q = lambda sql: [tuple(r) for r in conn.execute(sql)]  # noqa: E731
    names = {int(i): str(t) for i, t in conn.execute("SELECT term_id, term FROM lex_terms")}
    docs = {}
    for (key,) in q("SELECT key FROM lex_docs ORDER BY key"):
        entry = get_entry(conn, int(key))
        assert entry is not None
        length, term_ids, tfs, links = entry
        # Stored by term id, which depends on the order terms were first met: compare by name.
        pairs = sorted((names[int(t)], int(f)) for t, f in zip(term_ids, tfs, strict=True))
        docs[key] = (length, pairs)
        docs[key] += (links,)
    by_term: dict[str, list[tuple[Any, ...]]] = {}
    for term_id, *block in q(
        "SELECT term_id, first_key, count, max_tf, min_length, data FROM lex_blocks "
        "ORDER BY term_id, first_key"
    ):
        by_term.setdefault(names[int(term_id)], []).append(tuple(block))
    postings = {}
    for term, parts in by_term.items():
        decoded = [decode(data, count) for _, count, _, _, data in parts]
        postings[term] = b"".join(
            np.concatenate([getattr(p, f) for p in decoded]).tobytes()
            for f in ("keys", "tfs", "lengths")
        )
    return {
        "memories": q("SELECT * FROM memories ORDER BY key"),
        "tags": q("SELECT * FROM memory_tags ORDER BY tag, key"),
        "entities": q(
            "SELECT e.name, m.key FROM memory_entities m JOIN entities e USING (entity_id) "
            "ORDER BY 1, 2"
        ),
        "relations": q("SELECT * FROM relations ORDER BY 1, 2, 3"),
        "vectors": q("SELECT * FROM vectors ORDER BY vec_key"),
        "vector_log": q("SELECT * FROM vector_log ORDER BY seq"),
        "terms": sorted(q("SELECT term, df FROM lex_terms")),
        "docs": docs,
        "postings": postings,
        "blocks": by_term,
        "stats": q("SELECT * FROM lex_stats"),
        "counters": q("SELECT * FROM counters WHERE name != 'write_seq' ORDER BY name"),
        "meta": q("SELECT * FROM meta WHERE key != 'lexical.aliases_version' ORDER BY key"),
    }


def _recalls(store: embedmind.Store) -> list[Any]:
    """Text and vector recall of every memory, ties in any order.

    Every memory is returned (k above the batch), sorted by score then id:
    usearch orders equal distances differently from run to run on one and the
    same store, and hybrid fusion inherits that order (its RRF ranks), so
    hybrid is left out: its inputs are these two channels.
    """
    out = []
    for query in QUERIES:
        for mode in ("text", "vector"):
            hits = store.recall(query, k=100, mode=mode, now=NOW).hits
            out.append((query, mode, sorted((-round(h.score, 9), h.id) for h in hits)))
    return out


def _state(drafts: list[Draft], batch_size: int | None) -> tuple[dict[str, Any], list[Any]]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        store.set_aliases(ALIASES)
        if batch_size is None:
            for draft in drafts:
                store.remember_many([draft], now=NOW)
        else:
            store.remember_many(drafts, batch_size=batch_size, now=NOW)
        with store._db.read() as conn:
            return _dump(conn), _recalls(store)


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIMS, max_size=DIMS)


@st.composite
def batches(draw: st.DrawFn) -> list[Draft]:
    n = draw(st.integers(1, 40))
    in_order = draw(st.booleans())  # a history loaded in order, or backfilled at random times
    sessions = [None, "s1", "s2", "s3"] if draw(st.booleans()) else [None]
    drafts = []
    for i in range(n):
        minutes = i if in_order else draw(st.integers(0, 60))
        vector = draw(st.none() | vectors.filter(lambda v: any(v)))
        drafts.append(
            Draft(
                draw(texts),
                id=f"m{i}",
                namespace=draw(st.sampled_from(["a", "b"])),
                session_id=draw(st.sampled_from(sessions)),
                created_at=T0 + dt.timedelta(minutes=minutes),
                tags=draw(st.sampled_from([(), ("x",), ("x", "y")])),
                entities=draw(st.sampled_from([(), ("Alice",)])),
                vector=vector,
            )
        )
    return drafts


@given(batches(), st.integers(1, 40), st.sampled_from([2, 3, 512]), st.sampled_from([1, 10**9]))
def test_bulk_and_one_at_a_time_leave_the_same_state(
    drafts: list[Draft], batch_size: int, block_size: int, ahead_rows: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        for module in (blocks, bulk_postings, lexical_index):
            patch.setattr(module, "BLOCK_SIZE", block_size)
        # Texts analysed beside the row insert (a worker thread) or in line.
        patch.setattr(session_writes, "ANALYSE_AHEAD_ROWS", ahead_rows)
        one_by_one = _state(drafts, None)
        bulk = _state(drafts, batch_size)
    if any(d.session_id is not None for d in drafts):
        del bulk[0]["blocks"], one_by_one[0]["blocks"]  # the layout only (see the docstring)
    assert bulk[0] == one_by_one[0]
    assert bulk[1] == one_by_one[1]
