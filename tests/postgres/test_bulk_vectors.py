"""``remember_many``'s vector rows on PostgreSQL: one binary COPY, read back bit for bit.

``put_vectors_many`` sends pgvector's binary form with vec_keys drawn from the
identity sequence beforehand; these tests hold it to what the one-row path
(``put_vectors``, text literals) stores: the same float32 values exactly, the
same spans, vec_keys in the order of the memories and their spans, and a
recall that finds each memory by its own vector.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from backends import open_backend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.drafts import prepare
from embedmind.model import Draft
from embedmind.query.selection import Selection

DIMS = 5
NOW = 10**15


@pytest.fixture(scope="module")
def backend(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator:
    b = open_backend(pg_server, pg_dsn, "bulk", DIMS)
    yield b
    b.close()


_counter = iter(range(10**9))

finite = st.floats(
    width=32, allow_nan=False, allow_infinity=False, min_value=-(2.0**60), max_value=2.0**60
)
vector = st.lists(finite, min_size=DIMS, max_size=DIMS).filter(lambda v: any(v))
memory = st.lists(vector, min_size=1, max_size=3)  # one memory's vectors (its spans)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(memories=st.lists(memory, min_size=1, max_size=6))
def test_bulk_vectors_read_back_exactly_with_keys_in_order(backend, memories) -> None:
    drafts = [Draft(f"memory {next(_counter)}", id=f"m{next(_counter)}") for _ in memories]
    with backend.write() as w:
        keys = w.records.insert_many([prepare(d, NOW) for d in drafts])
        items = [
            (key, [(10 * i, 10 * i + 9) for i in range(len(vs))],
             [np.asarray(v, dtype="<f4").tobytes() for v in vs])
            for key, vs in zip(keys, memories, strict=True)
        ]  # fmt: skip
        vec_keys = w.records.put_vectors_many(items)
    # One vec_key per span, increasing in the order of the memories and their spans.
    assert len(vec_keys) == sum(len(vs) for vs in memories)
    assert vec_keys == sorted(vec_keys) and len(set(vec_keys)) == len(vec_keys)
    with backend.read() as r:
        at = 0
        for key, spans, blobs in items:
            rows = r.channels.vector_rows(key)
            assert [(s, e) for s, e, _ in rows] == list(spans)
            assert [b for _, _, b in rows] == list(blobs)  # float32 bit for bit
            stored = r.conn.execute(
                "SELECT vec_key FROM memory_vectors WHERE key = %s ORDER BY vec_key", (key,)
            ).fetchall()
            assert [int(v) for (v,) in stored] == vec_keys[at : at + len(spans)]
            at += len(spans)


@pytest.fixture
def twins(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator:
    # A schema of its own: in the one the property test above fills, its random
    # vectors (many parallel, some huge) shared the HNSW graph, and the graph
    # search once returned one of them instead of a twin (make test, 2026-12-05).
    b = open_backend(pg_server, pg_dsn, "bulk_twins", DIMS)
    yield b
    b.close()


def test_bulk_and_one_row_paths_store_the_same_vector(twins) -> None:
    backend = twins
    v = np.asarray([0.1, -2.5e-8, 3.0, -0.0, 1e-30], dtype="<f4")
    drafts = [Draft("bulk one", id="bulk-1"), Draft("single one", id="single-1")]
    with backend.write() as w:
        bulk, single = w.records.insert_many([prepare(d, NOW) for d in drafts])
        w.records.put_vectors_many([(bulk, [(0, 8)], [v.tobytes()])])
        w.records.put_vectors(single, [(0, 10)], [v.tobytes()])
    with backend.read() as r:
        ((_, _, a),) = r.channels.vector_rows(bulk)
        ((_, _, b),) = r.channels.vector_rows(single)
        assert a == b == v.tobytes()
        same = r.conn.execute(
            "SELECT (SELECT embedding FROM memory_vectors WHERE key = %s) = "
            "(SELECT embedding FROM memory_vectors WHERE key = %s)",
            (bulk, single),
        ).fetchone()
        assert same == (True,)
        # The HNSW index holds the bulk row: the nearest to its own vector is itself
        # or its twin (equal cosine).
        hits = r.channels.vector_top(v, Selection(now=NOW), 2)
        assert {h.key for h in hits} == {bulk, single}
        assert all(abs(h.cosine - 1.0) < 1e-6 for h in hits)
