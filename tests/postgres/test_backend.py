"""The PostgreSQL backend's sessions, tested directly (the engine is not wired to it yet)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from embedmind.backend.postgres.backend import FACTORY, split_location
from embedmind.backend.postgres.testing import ThrowawayServer, free_port
from embedmind.backend.values import OpenOptions, Space
from embedmind.drafts import prepare
from embedmind.errors import FilterTypeError, StorageError
from embedmind.model import Draft
from embedmind.query.selection import Selection

DIMS = 4
NOW = 10**15


@pytest.fixture(scope="module")
def backend(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    b = FACTORY.open(OpenOptions(pg_server.url(str(dbname)) + "?schema=be"))
    with b.write() as w:
        w.meta.write_identity({"model_id": "test", "dims": str(DIMS), "metric": "cosine"})
    with b.read() as r:
        assert r.meta.identity()["dims"] == str(DIMS)
    yield b
    b.close()


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_the_schema_parameter_is_the_backends_own() -> None:
    url, schema = split_location("postgresql://u@h:5/db?schema=app&sslmode=disable")
    assert (url, schema) == ("postgresql://u@h:5/db?sslmode=disable", "app")
    assert FACTORY.claims("postgres://h/db") and not FACTORY.claims("/tmp/x.mind")


def test_write_then_read_through_the_sessions(backend) -> None:
    drafts = [
        Draft("alice drinks green tea", id="a", namespace="u/alice", metadata={"topic": "tea"},
              session_id="s", tags=["pref"]),
        Draft("bob drinks coffee", id="b", namespace="u/bob", metadata={"topic": "coffee"}),
        Draft("alice visits paris", id="c", namespace="u/alice", metadata={"topic": 3},
              session_id="s"),
    ]  # fmt: skip
    vectors = [_unit(1, 0, 0, 0), _unit(0, 1, 0, 0), _unit(1, 1, 0, 0)]
    with backend.write() as w:
        keys = w.records.insert_many([prepare(d, NOW + i) for i, d in enumerate(drafts)])
        for key, v in zip(keys, vectors, strict=True):
            w.channels  # noqa: B018 - a write session reads what it wrote
            w.records.put_vectors(key, [(0, 10)], [v.astype("<f4").tobytes()])
        w.records.index_text([(k, d.content) for k, d in zip(keys, drafts, strict=True)])
    with backend.read() as r:
        assert r.records.find("a").key == keys[0]
        memories = r.records.load(keys)
        assert memories[keys[0]].metadata == {"topic": "tea"}
        assert memories[keys[0]].tags == ("pref",)
        alice = Selection.of(NOW + 10, "u/*", where={"topic": "tea"})
        assert r.records.admitted(keys, alice) == {keys[0]}
        top = r.channels.text_top("alice tea", Selection.of(NOW + 10, "u/alice"), 5)
        assert top[0][0] == keys[0]
        hits = r.channels.vector_top(
            _unit(1, 0.1, 0, 0), Selection.of(NOW + 10), 2, exact_scores=True
        )
        assert [h.key for h in hits] == [keys[0], keys[2]]
        assert r.channels.vector_rows(keys[1])[0][2] == vectors[1].astype("<f4").tobytes()
        page = r.records.page(Selection.of(NOW + 10), None, 2)
        assert [k for _, k, _ in page] == keys[:2]
        assert [k for _, k, _ in r.records.page(Selection.of(NOW + 10), page[-1][:2], 5)] == keys[
            2:
        ]
        # Session context: "alice visits paris" matches "tea" only through its neighbour.
        assert r.channels.lexical_terms(keys[2], drafts[2].content, "green tea") == ("green", "tea")
        with pytest.raises(FilterTypeError):
            r.records.admitted(keys, Selection.of(NOW + 10, where={"topic": {"$gt": 1}}))
    with backend.write() as w:
        w.records.delete([keys[1]])
    with backend.read() as r:
        assert r.records.find("b") is None
        assert r.channels.vector_count(Space.MEMORY) == 2


def test_a_write_is_visible_to_another_connection_at_its_next_call(backend) -> None:
    with backend.read() as r:  # a snapshot taken before the write
        before = r.records.live_count()
    with backend.write() as w:
        key = w.records.insert(prepare(Draft("late arrival", id="late"), NOW))
        w.records.index_text([(key, "late arrival")])
    with backend.read() as r:
        assert r.records.live_count() == before + 1
        assert [k for k, _ in r.channels.text_top("arrival", Selection.of(NOW + 1), 3)] == [key]


def test_a_rolled_back_write_leaves_nothing(backend) -> None:
    def failing_write() -> None:
        with backend.write() as w:
            key = w.records.insert(prepare(Draft("never", id="never"), NOW))
            w.records.index_text([(key, "never")])
            raise RuntimeError("the caller failed")

    with pytest.raises(RuntimeError):
        failing_write()
    with backend.read() as r:
        assert r.records.find("never") is None
        assert r.channels.text_top("never", Selection.of(NOW + 1), 3) == []


def test_no_server_is_a_storage_error() -> None:
    port = free_port()
    with pytest.raises(StorageError, match="server is up"):
        FACTORY.open(OpenOptions(f"postgresql://postgres@127.0.0.1:{port}/x?connect_timeout=2"))
