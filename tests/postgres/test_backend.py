"""The PostgreSQL backend's sessions, tested directly (the engine is not wired to it yet)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from backends import open_backend

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
    b = open_backend(pg_server, pg_dsn, "be", DIMS)
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
        hits = r.channels.vector_top(_unit(1, 0.1, 0, 0), Selection.of(NOW + 10), 2, exact_first=2)
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


def _write(backend, drafts: list[Draft], now: int = NOW) -> list[int]:
    with backend.write() as w:
        keys = w.records.insert_many([prepare(d, now + i) for i, d in enumerate(drafts)])
        w.records.index_text([(k, d.content) for k, d in zip(keys, drafts, strict=True)])
    return keys


def test_graph_supersession_and_contradiction(backend) -> None:
    old, new, other = _write(
        backend, [Draft("v1", id="g1", namespace="g"), Draft("v2", id="g2", namespace="g"),
                  Draft("x", id="g3", namespace="g")],
    )  # fmt: skip
    with backend.write() as w:
        w.graph.add_entities(new, ["alice", "paris"])
        w.graph.add_entities(other, ["alice"])
        w.graph.add_relations(new, [("supersedes", old), ("mentions", other)], NOW)
        w.graph.add_relations(new, [("mentions", other)], NOW)  # again: ignored
        w.graph.mark_superseded(old, "g2", NOW + 5, NOW + 5)
        w.graph.mark_contradicted(other, "g2", 0.2, NOW + 6)
    with backend.read() as r:
        assert r.graph.entity_names(new) == ["alice", "paris"]
        assert r.graph.entity_members("alice") == [new, other]
        assert r.graph.outgoing(new) == [("mentions", "g3", NOW), ("supersedes", "g1", NOW)]
        assert {(e.other, e.kind, e.outgoing) for e in r.graph.edges(old)} == {
            (new, "supersedes", False)
        }
        assert r.graph.predecessors("g2") == [(old, "g1")]
        assert r.records.admitted([old, new, other], Selection.of(NOW + 10)) == {new}
        assert r.records.load([other])[other].confidence == 0.2
    with backend.write() as w:
        w.graph.restore(old, NOW + 7)
        w.graph.restore(other, NOW + 7)
        w.graph.replace_outgoing(new, "supersedes")
    with backend.read() as r:
        assert r.records.load([other])[other].confidence == 1.0
        assert r.graph.outgoing(new) == [("supersedes", "g1", NOW)]
        assert r.graph.entity_names(new) == []
        assert r.records.admitted([old, other], Selection.of(NOW + 10)) == {old, other}


def test_two_ttl_sweeps_at_once_take_different_rows(backend, pg_dsn: str) -> None:
    drafts = [Draft(f"ttl {i}", id=f"ttl{i}", namespace="ttl") for i in range(6)]
    keys = _write(backend, drafts)
    with backend.write() as w:
        for key in keys:
            w.lifecycle.retier(key, "working", NOW + 1, NOW)
    with backend.write() as first, backend.write() as second:
        a = first.lifecycle.expired(NOW + 2, 3)
        b = second.lifecycle.expired(NOW + 2, 10)  # does not wait for first's rows
        assert len(a) == 3 and {k for k, _, _ in a}.isdisjoint({k for k, _, _ in b})
        assert {k for k, _, _ in a} | {k for k, _, _ in b} >= set(keys)
        assert first.lifecycle.still_expired(a[0][0], NOW + 2)
    with backend.write() as w:
        assert w.lifecycle.reinforce(keys, NOW + 3, NOW + 100) == len(keys)
    with backend.read() as r:
        assert not r.lifecycle.still_expired(keys[0], NOW + 50)


def test_move_keeps_session_context_equal_to_a_rebuild(backend) -> None:
    keys = _write(backend, [
        Draft("alpha one", id="mv1", namespace="mv/a", session_id="s"),
        Draft("beta two", id="mv2", namespace="mv/a", session_id="s"),
        Draft("gamma three", id="mv3", namespace="mv/a", session_id="s"),
        Draft("delta four", id="mv4", namespace="mv/b", session_id="s"),
    ])  # fmt: skip
    with backend.write() as w:
        assert w.lifecycle.move([keys[1]], "mv/b", NOW + 9) == 1
    with backend.read() as r:
        incremental = set(r.conn.execute("SELECT term, key, tf FROM lex_postings").fetchall())
        assert r.lifecycle.keys_in_namespace("mv/b") == sorted([keys[1], keys[3]])
    with backend.write() as w:
        from embedmind.backend.postgres import lexical

        lexical.rebuild(w.conn, session_context=True)
    with backend.read() as r:
        assert (
            set(r.conn.execute("SELECT term, key, tf FROM lex_postings").fetchall()) == incremental
        )


def test_fragments_and_links(backend) -> None:
    (key,) = _write(backend, [Draft("a long document", id="doc", namespace="f")])
    blobs = [_unit(1, 0, 0, 1).astype("<f4").tobytes(), _unit(0, 1, 1, 0).astype("<f4").tobytes()]
    with backend.write() as w:
        assert w.fragments.add(key, [(0, 6), (7, 15)], blobs, ["a long", "document"]) == 2
        w.fragments.set_source(key, "fp")
    with backend.read() as r:
        assert r.fragments.counts() == (1, 2)
        assert r.fragments.texts_of(key) == [(0, 6, "a long"), (7, 15, "document")]
        assert r.fragments.source(key) == "fp"
        hits = r.channels.vector_top(
            _unit(0, 1, 1, 0), Selection.of(NOW + 1), 1, space=Space.FRAGMENTS
        )
        assert r.fragments.details([hits[0].vec_key]) == {
            hits[0].vec_key: ("doc", 7, 15, "document")
        }
    with backend.write() as w:
        w.lifecycle.put_link("l/a", "l/b", ["semantic"], "shared", NOW)
        w.lifecycle.put_link("l/a", "l/c", None, "all", NOW)
        w.lifecycle.put_link("l/z", "l/b", None, "pre-existing", NOW)
        w.lifecycle.rename_link_endpoints("l/a", "l/z")
    with backend.read() as r:
        links = [(x.src, x.dst, x.tiers, x.note) for x in r.lifecycle.links(None)]
        assert links == [("l/z", "l/b", None, "pre-existing"), ("l/z", "l/c", None, "all")]


def test_the_entry_point_registers_the_factory_for_postgresql_urls() -> None:
    # Through the `embedmind` entry-point group, as a third-party backend would be.
    from embedmind import plugins
    from embedmind.backend.postgres import plugin

    assert plugins.manager().get_name(plugin) == "entrypoint:postgresql"
    assert plugins.backend_for("postgresql://u@h/db?schema=x") is plugin.FACTORY
    assert plugins.backend_for("memories.mind") is not plugin.FACTORY
