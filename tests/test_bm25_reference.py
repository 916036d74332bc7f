"""Text recall scores against a textbook BM25 (tests/oracles.py).

Documents carry a ``created_at`` from a few days (one given in another time
zone, on the previous day in UTC), so the date words a new store indexes
(:mod:`embedmind.lexical.dates`) are in the oracle's documents too, and the
queries include dates; one run keeps them off.

Random sequences of writes (remember, remember_many with repeated ids,
upserts, forgets, deletes, re-remembering after forget or delete) over a small
vocabulary; after every step ``recall(q, mode="text")`` must return exactly
the documents the oracle scores above zero, with the oracle's scores, best
first, and the term dictionary must hold exactly the live vocabulary. A larger
test pushes one term past the 512-posting block size and exercises the block
split, emptying and middle-insertion paths.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
import zlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import BM25Oracle

from embedmind.lexical.analyzer import analyze
from embedmind.model import Draft
from embedmind.store import Store

VOCAB = [
    "apple", "apples", "banana", "cherry", "grape", "lemon", "mango", "melon",
    "running", "runs", "Über", "ÜBER", "the", "of", "x1", "zebra!",
]  # fmt: skip
QUERIES = [
    *VOCAB,
    "apple banana",
    "apple apple banana",  # a repeated query term counts once
    "cherry grape lemon mango melon",
    "the of",  # stop words only: no hits
    "unknownword apple",
    "7 May 2023",  # date words
    "what happened in January 2024",
    "apple on 31 december",
]
DAYS = [
    dt.datetime(2023, 5, 7, 9, 30, tzinfo=dt.timezone.utc),
    # 7 May 2023 in UTC: the date words are the UTC day's.
    dt.datetime(2023, 5, 8, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.datetime(2024, 1, 31, 12, 0, tzinfo=dt.timezone.utc),
    dt.datetime(2023, 12, 31, 23, 59, tzinfo=dt.timezone.utc),
]
IDS = [f"id{i}" for i in range(8)]
MAX_K = 10_000


class Model:
    """The store under test, the oracle, and which ids have a row (live or forgotten)."""

    def __init__(self, *, date_words: bool = True) -> None:
        # A new store has date words on: ``date_words=False`` turns them off.
        self.store = Store.open(":memory:", embedder=None, date_words=None if date_words else False)
        self.oracle = BM25Oracle(dates=date_words)
        self.rows: set[str] = set()

    def remember_many(self, items: list[tuple[str, str]], batch_size: int) -> None:
        drafts = [Draft(content, id=mid, created_at=day(content)) for mid, content in items]
        self.store.remember_many(drafts, batch_size=batch_size)
        for mid, content in items:
            # An upsert keeps the memory's created_at: the stored one is indexed.
            memory = self.store.get(mid)
            assert memory is not None
            self.oracle.put(mid, content, memory.created_at)
            self.rows.add(mid)

    def forget(self, mid: str) -> None:
        assert self.store.forget(mid) is (mid in self.oracle.docs)
        self.oracle.drop(mid)

    def delete(self, mid: str) -> None:
        assert self.store.delete(mid) is (mid in self.rows)
        self.oracle.drop(mid)
        self.rows.discard(mid)

    def check(self, queries: list[str]) -> None:
        for query in queries:
            check_query(self.store, self.oracle, query)
        stats = self.store.stats()
        assert stats.lexical_terms == len(self.oracle.vocabulary())
        assert stats.lexical_documents == self.oracle.indexed_count()
        assert stats.live == len(self.oracle.docs)


def day(content: str) -> dt.datetime:
    """A document's created_at: one of :data:`DAYS`, by its content."""
    return DAYS[zlib.crc32(content.encode()) % len(DAYS)]


def check_query(store: Store, oracle: BM25Oracle, query: str) -> None:
    hits = store.recall(query, mode="text", k=MAX_K)
    expected = oracle.scores(query)
    # The channel's raw score is BM25 (``Hit.score`` maps it to a probability).
    got = {hit.memory.id: hit.channels["text"].raw for hit in hits}
    assert len(got) == len(hits), "a memory was returned twice"
    assert got.keys() == expected.keys(), (query, sorted(got.keys() ^ expected.keys()))
    for mid, score in got.items():
        assert math.isclose(score, expected[mid], rel_tol=1e-5), (query, mid, score, expected[mid])
    scores = [hit.channels["text"].raw for hit in hits]
    assert all(a >= b for a, b in itertools.pairwise(scores)), (query, scores)
    # A small k returns the best k of the same ranking.
    if len(expected) > 3:
        top = [hit.channels["text"].raw for hit in store.recall(query, mode="text", k=3)]
        best = sorted(expected.values(), reverse=True)[:3]
        assert all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(top, best, strict=True)), (
            query,
            top,
        )


# -- random operation sequences ----------------------------------------------------------

ids = st.sampled_from(IDS)
contents = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8).map(
    " ".join
)  # empty is refused
operations = st.one_of(
    st.tuples(st.just("remember"), ids, contents),
    st.tuples(
        st.just("many"),
        st.lists(st.tuples(ids, contents), min_size=1, max_size=6),  # ids may repeat
        st.integers(min_value=1, max_value=3),
    ),
    st.tuples(st.just("forget"), ids),
    st.tuples(st.just("delete"), ids),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(operations, min_size=1, max_size=20))
def test_scores_match_oracle_after_every_write(ops: list[tuple[Any, ...]]) -> None:
    model = Model()
    try:
        for op in ops:
            if op[0] == "remember":
                model.remember_many([(op[1], op[2])], batch_size=1)
            elif op[0] == "many":
                model.remember_many(op[1], batch_size=op[2])
            elif op[0] == "forget":
                model.forget(op[1])
            else:
                model.delete(op[1])
            model.check(QUERIES)
    finally:
        model.store.close()


def test_seeded_churn() -> None:
    """A longer seeded run over more ids than the hypothesis test uses."""
    rng = random.Random(20240611)
    model = Model(date_words=False)  # a store without date words scores its text alone
    pool = [f"doc{i}" for i in range(60)]
    for step in range(120):
        roll = rng.random()
        if roll < 0.45:
            items = [
                (rng.choice(pool), " ".join(rng.choices(VOCAB, k=rng.randint(1, 12))))
                for _ in range(rng.randint(1, 15))
            ]
            model.remember_many(items, batch_size=rng.randint(1, 10))
        elif roll < 0.7:
            model.forget(rng.choice(pool))
        else:
            model.delete(rng.choice(pool))
        if step % 4 == 0:
            model.check(QUERIES)
    model.check(QUERIES)
    model.store.close()


# -- posting blocks: more than 512 postings per term -----------------------------------------


def _doc(rng: random.Random, *words: str) -> str:
    return " ".join(
        [*words, *rng.choices(["cherry", "grape", "lemon", "the"], k=rng.randint(0, 4))]
    )


def test_block_boundaries() -> None:
    rng = random.Random(7)
    model = Model()
    n = 1_200
    big = ["alpha", "beta", "gamma apple"]
    queries = [*big, "alpha beta", "cherry", "grape lemon", "omega"]

    # Every doc has "alpha" (3 blocks); odd docs have "beta" (2 blocks); every
    # tenth has a unique word, so the dictionary shrinks when it goes.
    def content(i: int, *extra: str) -> str:
        words = ["alpha", *(["beta"] if i % 2 else []), *([f"uniq{i}"] if i % 10 == 0 else [])]
        return _doc(rng, *words, *extra)

    model.remember_many([(f"d{i}", content(i)) for i in range(n)], batch_size=1_000)
    model.check(queries)

    # Delete a run in the middle and a scattering elsewhere.
    for i in [*range(300, 420), *range(700, n, 7)]:
        model.delete(f"d{i}")
    model.check(queries)

    # Upsert even docs in the middle so they gain "beta": their OLD keys land in
    # the middle of beta's full blocks, which must split.
    model.remember_many(
        [(f"d{i}", content(i, "beta", "gamma")) for i in range(40, 640, 2) if not 300 <= i < 420],
        batch_size=1_000,
    )
    model.check(queries)

    # Forget the first 560 docs (alpha's first block empties) and bring some
    # back: re-remembering a forgotten id re-indexes its old, smallest key.
    for i in range(560):
        if f"d{i}" in model.oracle.docs:
            model.forget(f"d{i}")
    model.check(queries)
    model.remember_many(
        [(f"d{i}", content(i, "omega")) for i in range(0, 560, 3)], batch_size=1_000
    )
    model.check(queries)

    # Re-remember deleted ids: they get new keys at the end.
    model.remember_many([(f"d{i}", content(i)) for i in range(300, 420)], batch_size=1_000)
    model.check(queries)

    # A term whose last document goes leaves the dictionary.
    before = model.store.stats().lexical_terms
    model.remember_many([("lonely", "singleton")], batch_size=1)
    assert model.store.stats().lexical_terms == before + 1
    model.delete("lonely")
    assert model.store.stats().lexical_terms == before
    model.check(queries)
    model.store.close()


def test_oracle_is_textbook() -> None:
    # Two documents, hand-computed: guards the oracle against silly mistakes.
    oracle = BM25Oracle()
    oracle.put("a", "apple apple banana")
    oracle.put("b", "banana")
    oracle.put("empty", "the of")  # no terms: not indexed, not counted in N
    assert analyze("apple apple banana") == ["appl", "appl", "banana"]
    n, avgdl = 2, (3 + 1) / 2
    idf_apple = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf_banana = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))

    def w(tf: int, dl: int, idf: float) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    scores = oracle.scores("apple banana apple")
    assert math.isclose(scores["a"], w(2, 3, idf_apple) + w(1, 3, idf_banana))
    assert math.isclose(scores["b"], w(1, 1, idf_banana))
    assert set(scores) == {"a", "b"}
    assert oracle.vocabulary() == {"appl", "banana"}
