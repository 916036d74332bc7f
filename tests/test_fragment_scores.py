"""Fragment scores are exact float32 cosines, not the HNSW graph's float16 estimates.

The oracle is a brute-force numpy cosine over the vectors as stored in SQLite
(little-endian float32 rows), with the per-record cap applied greedily.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import hnsw
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.fragments import FragmentHit

DIMS = 32
RECORDS = 300
EXACT = 1e-6  # float32 round-off of a 32-dim dot product is ~1e-7; float16 is ~1e-4 off

Id = tuple[str, int]
"""``(record id, locator start)``: one fragment."""


class Stored:
    """A store full of clustered fragments and every one of them as stored.

    A plain class: hypothesis prints a dataclass argument field by field with a
    failure, and 4,000 vectors make a repr too large to print.
    """

    def __init__(self, store: embedmind.Store, rows: list[tuple[Any, ...]]) -> None:
        self.store = store
        self.ids: list[Id] = [(str(i), int(s)) for i, s, _, _ in rows]
        self.records = [str(i) for i, _, _, _ in rows]
        self.namespaces = [str(ns) for _, _, ns, _ in rows]
        # (n, DIMS) float32, as read back from SQLite.
        self.vectors = np.stack([np.frombuffer(d, dtype="<f4") for _, _, _, d in rows])

    def __repr__(self) -> str:
        return f"Stored({len(self.ids)} fragments of {RECORDS} records)"


@pytest.fixture(scope="module")
def stored() -> Iterator[Stored]:
    rng = np.random.default_rng(11)
    # Clustered, as embeddings are: many near neighbours, where float16 blurs the order.
    centres = rng.normal(size=(24, DIMS))
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        store.remember_many(
            [
                embedmind.Draft(f"record {r}", id=f"r{r}", namespace="a" if r % 3 else "b")
                for r in range(RECORDS)
            ]
        )
        for r in range(RECORDS):
            n = int(rng.integers(1, 16))
            mix = centres[rng.integers(0, len(centres), n)] + 0.2 * rng.normal(size=(n, DIMS))
            store.fragments.put(f"r{r}", [((j, j + 1), row.tolist()) for j, row in enumerate(mix)])
        with store._db.read() as conn:
            rows = conn.execute(
                "SELECT m.id, f.start, m.namespace, f.data FROM fragments f "
                "JOIN memories m ON m.key = f.key ORDER BY f.vec_key"
            ).fetchall()
        yield Stored(store, rows)


def brute_force(
    stored: Stored, query: np.ndarray, k: int, cap: int | None, namespace: str | None
) -> tuple[dict[Id, float], list[tuple[Id, float]]]:
    """Every fragment's exact cosine, and the greedy capped top ``k``."""
    unit = (query / np.linalg.norm(query)).astype(np.float32)  # as the engine normalizes
    sims = stored.vectors.astype(np.float64) @ unit.astype(np.float64)
    exact = dict(zip(stored.ids, sims.tolist(), strict=True))
    taken: dict[str, int] = {}
    top: list[tuple[Id, float]] = []
    for i in np.argsort(-sims, kind="stable").tolist():
        record = stored.records[i]
        if namespace is not None and stored.namespaces[i] != namespace:
            continue
        if cap is not None and taken.get(record, 0) >= cap:
            continue
        taken[record] = taken.get(record, 0) + 1
        top.append((stored.ids[i], float(sims[i])))
        if len(top) == k:
            break
    return exact, top


def ids(hits: list[FragmentHit]) -> list[Id]:
    return [(h.record_id, h.locator.start) for h in hits]


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 30),
    cap=st.one_of(st.none(), st.integers(1, 3)),
    namespace=st.sampled_from([None, "a", "b"]),
    graph=st.booleans(),
)
def test_scores_are_the_exact_cosines_of_the_stored_vectors(
    stored: Stored, seed: int, k: int, cap: int | None, namespace: str | None, graph: bool
) -> None:
    rng = np.random.default_rng(seed)
    # Near a stored fragment (a realistic query) or anywhere (a hard one).
    base = stored.vectors[int(rng.integers(len(stored.ids)))] if seed % 2 else np.zeros(DIMS)
    query = base + 0.3 * rng.normal(size=DIMS)
    exact, expected = brute_force(stored, query, k, cap, namespace)
    # graph: the HNSW graph proper; otherwise usearch's exact float16 scan (small indexes).
    with mock.patch.object(hnsw, "EXACT_BELOW", 0 if graph else hnsw.EXACT_BELOW):
        got = stored.store.fragments.query(
            query.tolist(), k=k, max_per_record=cap, namespace=namespace
        )
    for hit in got:
        assert hit.score == pytest.approx(exact[(hit.record_id, hit.locator.start)], abs=EXACT)
    scores = [h.score for h in got]
    assert scores == sorted(scores, reverse=True)
    assert len(got) == len(expected)
    if set(ids(got)) == {i for i, _ in expected}:
        # Same set: same order, up to fragments whose cosines tie within round-off.
        for hit, (want, score) in zip(got, expected, strict=True):
            tie = abs(exact[(hit.record_id, hit.locator.start)] - score) <= EXACT
            assert (hit.record_id, hit.locator.start) == want or tie
    else:
        note(f"the search found another set: {sorted(ids(got))} vs {expected}")


def float16_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The graph's view of a cosine: both vectors rounded to float16 first."""
    x, y = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def swapped_pair(rng: np.random.Generator, dims: int) -> tuple[np.ndarray, ...]:
    """``(query, better, worse)``: unit vectors whose float16 cosines rank them the other way."""
    while True:
        q, v = rng.normal(size=(2, dims))
        w = v + 1e-4 * rng.normal(size=dims)
        q, v, w = (x / np.linalg.norm(x) for x in (q, v, w))
        q, v, w = (x.astype(np.float32) for x in (q, v, w))
        gap = float(v.astype(np.float64) @ q) - float(w.astype(np.float64) @ q)
        if gap > 1e-5 and float16_cosine(q, v) < float16_cosine(q, w) - 1e-5:
            return q, v, w


@pytest.mark.parametrize("same_record", [False, True])
def test_a_near_tie_the_float16_graph_reverses_is_ranked_exactly(same_record: bool) -> None:
    q, better, worse = swapped_pair(np.random.default_rng(5), 8)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(8)) as store:
        store.remember("one", id="one")
        store.remember("two", id="two")
        if same_record:
            store.fragments.put("one", [((0, 1), better.tolist()), ((1, 2), worse.tolist())])
        else:
            store.fragments.put("one", [((0, 1), better.tolist())])
            store.fragments.put("two", [((0, 1), worse.tolist())])
        index = store.fragments.index
        assert index is not None
        with store._db.read() as conn:
            index.sync(conn)
        # The swap this test is about is really there: the graph ranks the
        # fragment written second (the worse one, a higher vec_key) first.
        vec_keys, _ = index.search(q, 2, 16)
        assert vec_keys[0] > vec_keys[1]
        hits = store.fragments.query(q.tolist(), k=1, max_per_record=1)
        # With one record the cap keeps its best fragment by the exact cosine.
        assert [(h.record_id, h.locator.start) for h in hits] == [("one", 0)]
        assert hits[0].score == pytest.approx(float(better.astype(np.float64) @ q), abs=EXACT)
        both = store.fragments.query(q.tolist(), k=2)
        assert [h.locator.start for h in both] == ([0, 1] if same_record else [0, 0])
        assert [h.record_id for h in both] == (["one", "one"] if same_record else ["one", "two"])
