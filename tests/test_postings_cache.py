"""The text channel's cache of decoded postings: bounded by bytes, refreshed block by block.

The cache holds each term's whole decoded list once (``LexicalIndex``);
it must stay within :data:`CACHE_BYTES` (past it the least recently read
terms go) without changing a single hit, and a term changed by a write must
be refreshed by reading only its changed blocks, not its whole list again.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import embedmind
from embedmind.backend.sqlite import postings
from embedmind.backend.sqlite.blocks import Postings
from embedmind.backend.sqlite.lexical import index

TEXTS = [f"common word{i % 37} other{i % 11} item{i}" for i in range(2_000)]
QUERIES = ["common word3", "other5 word7", "item17 common", "word1 other2 other3"]


def _answers(store: embedmind.Store) -> list[list[tuple[str, float]]]:
    return [
        [(hit.memory.id, hit.score) for hit in store.recall(q, mode="text", k=10)] for q in QUERIES
    ]


def test_a_tiny_byte_bound_keeps_the_cache_small_and_the_hits_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many([{"id": str(i), "content": t} for i, t in enumerate(TEXTS)])
        expected = _answers(store)
        assert store._lexical is not None
        assert 0 < store._lexical.cached_bytes() <= index.CACHE_BYTES
    monkeypatch.setattr(index, "CACHE_BYTES", 4_096)
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many([{"id": str(i), "content": t} for i, t in enumerate(TEXTS)])
        assert _answers(store) == expected
        assert _answers(store) == expected  # again, from what the bound let it keep
        assert store._lexical is not None
        # The last query's terms are small (about 3 KB each): only they fit.
        assert store._lexical.cached_bytes() <= 4_096


def test_a_write_refreshes_only_the_blocks_it_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many([{"id": str(i), "content": t} for i, t in enumerate(TEXTS)])
        before = _answers(store)  # every query term is cached now
        asked: list[int] = []
        load = postings.load_blocks

        def counting(conn: object, block_ids: Sequence[int]) -> dict[int, Postings]:
            asked.extend(block_ids)
            return load(conn, block_ids)  # type: ignore[arg-type]

        monkeypatch.setattr(postings, "load_blocks", counting)
        store.remember_many([{"id": "fresh", "content": "common word3 fresh"}])
        after = _answers(store)
        with store._db.read() as conn:
            row = postings.lookup_terms(conn, ["common"])["common"]
            blocks = len(postings.block_versions(conn, row.term_id))
    # "common" has several blocks; the write changed only its last one (and word3's).
    assert blocks >= 4 and 1 <= len(asked) <= 2
    assert after != before
    # The refreshed cache answers as a store that never cached anything.
    with embedmind.Store.open(":memory:", embedder=None) as fresh:
        fresh.remember_many([{"id": str(i), "content": t} for i, t in enumerate(TEXTS)])
        fresh.remember_many([{"id": "fresh", "content": "common word3 fresh"}])
        assert _answers(fresh) == after
