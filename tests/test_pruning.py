"""The text channel prunes on a skewed query: counted blocks, not timings.

A query of one rare term and one term every document holds is MaxScore's
best case: once θ is known (from the rare term's documents), no document
holding only the common term can reach it, so the common term's blocks are
only looked up for the rare term's documents, never scored. The store's own
tally counts the blocks each text query scored and skipped; if pruning stops
pruning (no θ, no essential/non-essential split, or every query scored
exhaustively), the skipped share falls to 0 and this fails. The hits must be
what exhaustive scoring ranks first, ties and all.
"""

from __future__ import annotations

import numpy as np
import pytest

import embedmind
from embedmind.backend.sqlite import records
from embedmind.backend.sqlite.lexical.index import query_terms
from embedmind.lexical import maxscore

DOCS = 3_000
RARE_EVERY = 60  # 50 documents hold the rare term: more than the channel's m (k + 16)


def _texts() -> list[str]:
    rng = np.random.default_rng(7)
    fillers = [f"filler{i}" for i in range(400)]
    texts = []
    for i in range(DOCS):
        words = ["common", *rng.choice(fillers, size=int(rng.integers(3, 30))).tolist()]
        if i % RARE_EVERY == 0:
            words.append("zebra")
        texts.append(" ".join(words))
    return texts


def test_a_rare_term_with_a_common_one_skips_the_common_terms_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The corpus is kept small for the test: let this query take the pruned path.
    monkeypatch.setattr(maxscore, "SMALL_QUERY", 0)
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many([{"id": str(i), "content": t} for i, t in enumerate(_texts())])
        lexical = store._lexical
        assert lexical is not None
        before = (lexical.tally.queries, lexical.tally.scored, lexical.tally.skipped)
        hits = store.recall("zebra common", mode="text", k=10)
        queries = lexical.tally.queries - before[0]
        scored = lexical.tally.scored - before[1]
        skipped = lexical.tally.skipped - before[2]
        with store._db.read() as conn:
            lists, avgdl = lexical.term_lists(conn, query_terms("zebra common"))
            keys, scores = maxscore.exhaustive(lists, avgdl)
            blocks = sum(len(term.blocks()[0]) for term in lists)
            order = np.lexsort((keys, -scores))[:10]
            memories = records.select_by_keys(conn, keys[order].tolist())
    assert queries == 1 and blocks >= 6
    # Only the rare term's block is scored; every block of the common term is skipped.
    assert skipped >= blocks - 1 and scored + skipped == blocks
    assert [hit.memory.id for hit in hits] == [memories[int(k)].id for k in keys[order]]
    assert [hit.channels["text"].raw for hit in hits] == scores[order].tolist()
