"""Behaviour of the store through its public API."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import apsw
import pytest

import embedmind
from embedmind import Draft, Level, Tier
from embedmind.backend.sqlite import migrations
from embedmind.embedders.hashing import HashingEmbedder

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


def test_remember_get_round_trip(store: embedmind.Store) -> None:
    metadata = {"topic": "drinks", "n": 3, "x": 1.5, "nested": {"a": [1, "two", None]}, "ü": "ß"}
    m = store.remember(
        "Alice prefers green tea",
        namespace="user/alice",
        metadata=metadata,
        tags=["pref", "pref", "tea"],
        tier="episodic",
        level=Level.DEDUCED,
        agent="cli",
        session_id="s1",
        ttl=dt.timedelta(days=1),
        confidence=0.5,
        now=T0,
    )
    got = store.get(m.id)
    assert got == m
    assert got.metadata == metadata
    assert got.tags == ("pref", "tea")
    assert got.tier is Tier.EPISODIC and got.level is Level.DEDUCED
    assert got.created_at == got.updated_at == got.valid_from == T0
    assert got.expires_at == T0 + dt.timedelta(days=1)
    assert got.valid_to is None and got.superseded_by is None and not got.forgotten
    assert len(m.id) == 26  # a ULID
    assert store.get("missing") is None


def test_ulids_are_time_ordered(store: embedmind.Store) -> None:
    ids = [store.remember(f"memory {i}").id for i in range(50)]
    assert ids == sorted(ids)


def test_defaults(store: embedmind.Store) -> None:
    m = store.remember("plain")
    assert (m.namespace, m.tier, m.level, m.agent, m.session_id, m.confidence) == (
        "default", Tier.SEMANTIC, Level.EXPLICIT, "", None, 1.0,
    )  # fmt: skip
    assert m.metadata == {} and m.tags == ()


def test_upsert_same_namespace_keeps_created_at_and_reindexes(store: embedmind.Store) -> None:
    first = store.remember("the quick fox", id="a", now=T0)
    later = T0 + dt.timedelta(hours=1)
    second = store.remember("a lazy dog", id="a", metadata={"v": 2}, now=later)
    assert second.created_at == first.created_at and second.updated_at == later
    assert store.get("a").content == "a lazy dog"
    assert store.recall("fox", mode="text").ids == []
    assert store.recall("dog", mode="text").ids == ["a"]
    assert store.stats().live == 1


def test_id_reused_in_another_namespace_is_a_conflict(store: embedmind.Store) -> None:
    store.remember("one", id="x", namespace="a")
    with pytest.raises(embedmind.ConflictError) as info:
        store.remember("two", id="x", namespace="b")
    assert info.value.id == "x"
    assert store.get("x").content == "one"
    assert store.stats().live == 1


def test_forget_is_a_tombstone(store: embedmind.Store) -> None:
    m = store.remember("forget me", id="f", now=T0)
    keep = store.remember("keep me")
    assert store.forget("f") is True
    assert store.forget("f") is False
    assert store.forget("never") is False
    assert store.get("f") is None
    assert [x.id for x in store.iter()] == [keep.id]
    tomb = [x for x in store.iter(include_forgotten=True) if x.id == m.id]
    assert tomb and tomb[0].forgotten
    assert store.recall("forget", mode="text").ids == []
    stats = store.stats()
    assert (stats.live, stats.forgotten, stats.lexical_documents) == (1, 1, 1)
    with pytest.raises(embedmind.ConflictError):
        store.remember("elsewhere", id="f", namespace="other")
    revived = store.remember("forget me not", id="f")
    assert revived.content == "forget me not" and store.get("f") is not None


def test_delete_is_immediate_and_frees_the_id(store: embedmind.Store) -> None:
    store.remember("gone soon", id="d", namespace="a")
    assert store.delete("d") is True
    assert store.delete("d") is False
    assert list(store.iter(include_forgotten=True)) == []
    assert store.stats().lexical_terms == 0
    store.remember("reborn", id="d", namespace="b")
    assert store.get("d").namespace == "b"


def test_remember_many_accepts_drafts_strings_and_dicts(store: embedmind.Store) -> None:
    out = store.remember_many(
        ["a string", Draft("a draft", id="d1"), {"content": "a dict", "namespace": "x/y"}],
        batch_size=2,
    )
    assert [m.content for m in out] == ["a string", "a draft", "a dict"]
    assert out[1].id == "d1" and out[2].namespace == "x/y"
    assert store.get_many([out[2].id, "nope", "d1"]) == [out[2], out[1]]


def test_remember_many_bad_item_applies_nothing(store: embedmind.Store) -> None:
    items = [Draft(f"ok {i}") for i in range(10)] + [Draft("bad", metadata={"x": float("nan")})]
    with pytest.raises(embedmind.InvalidInputError):
        store.remember_many(items, batch_size=3)
    assert store.stats().live == 0


def test_remember_many_duplicate_ids_apply_in_order(store: embedmind.Store) -> None:
    store.remember_many([Draft("first apple", id="a"), Draft("second banana", id="a")])
    assert store.get("a").content == "second banana"
    assert store.recall("apple", mode="text").ids == []
    assert store.recall("banana", mode="text").ids == ["a"]


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("a/b", {"ab"}),
        ("a/b/*", {"ab", "abc", "abd"}),
        ("a/bc", {"a_bc"}),
        (["a/bc", "z"], {"a_bc", "z"}),
        (None, {"ab", "abc", "abd", "a_bc", "z"}),
        ("a", set()),
        ("a/*", {"ab", "abc", "abd", "a_bc"}),
    ],
)
def test_namespace_scopes_match_exact_segments(
    store: embedmind.Store, scope: object, expected: set[str]
) -> None:
    for memory_id, namespace in [
        ("ab", "a/b"), ("abc", "a/b/c"), ("abd", "a/b/d/e"), ("a_bc", "a/bc"), ("z", "z"),
    ]:  # fmt: skip
        store.remember("shared words here", id=memory_id, namespace=namespace)
    assert {m.id for m in store.iter(scope)} == expected  # type: ignore[arg-type]
    assert set(store.recall("shared words", k=10, namespace=scope, mode="text").ids) == expected  # type: ignore[arg-type]


def test_ttl_expiry_follows_now(store: embedmind.Store) -> None:
    store.remember("short lived fact", id="t", ttl=dt.timedelta(minutes=5), now=T0)
    before = T0 + dt.timedelta(minutes=4)
    after = T0 + dt.timedelta(minutes=6)
    assert store.recall("fact", mode="text", now=before).ids == ["t"]
    assert store.recall("fact", mode="text", now=after).ids == []
    assert store.recall("fact", mode="text", now=after, include_expired=True).ids == ["t"]
    assert store.stats(now=after).expired == 1
    assert [m.id for m in store.iter(now=after, include_expired=True)] == ["t"]


def test_iter_is_time_ordered_and_pages(store: embedmind.Store) -> None:
    rng = random.Random(7)
    times = [T0 + dt.timedelta(seconds=rng.randrange(10_000)) for _ in range(700)]
    store.remember_many(
        [Draft(f"m{i}", id=f"m{i}", created_at=t) for i, t in enumerate(times)], batch_size=500
    )
    listed = list(store.iter())
    assert len(listed) == 700
    assert [m.created_at for m in listed] == sorted(times)


def test_stats_breaks_down_live_memories(store: embedmind.Store) -> None:
    store.remember("a", agent="cli", session_id="s1", namespace="n1")
    store.remember("b", agent="cli", session_id="s2", namespace="n1", tier="working")
    store.remember("c", agent="bot", namespace="n2")
    gone = store.remember("d", agent="bot", session_id="s9")
    store.forget(gone.id)
    stats = store.stats()
    assert stats.live == 3 and stats.forgotten == 1
    assert stats.by_agent["cli"].live == 2 and stats.by_agent["cli"].sessions == ("s1", "s2")
    assert stats.by_agent["bot"].live == 1 and stats.by_agent["bot"].sessions == ()
    assert stats.by_namespace == {"n1": 2, "n2": 1}
    assert stats.by_tier == {"semantic": 2, "working": 1}
    assert stats.schema_version == migrations.LATEST


def test_filters_tags_tiers_agent_session(store: embedmind.Store) -> None:
    store.remember("apple pie", id="1", tags=["food", "sweet"], agent="a", session_id="s")
    store.remember("apple juice", id="2", tags=["drink", "sweet"], tier="working", agent="b")
    store.remember("apple tree", id="3", tags=["plant"], level="deduced")
    query = "apple"
    assert set(store.recall(query, mode="text", tags=["sweet"]).ids) == {"1", "2"}
    assert store.recall(query, mode="text", tags=["sweet", "food"]).ids == ["1"]
    assert store.recall(query, mode="text", tiers=["working"]).ids == ["2"]
    assert store.recall(query, mode="text", levels=["deduced"]).ids == ["3"]
    assert store.recall(query, mode="text", agent="b").ids == ["2"]
    assert store.recall(query, mode="text", session_id="s").ids == ["1"]
    with pytest.raises(embedmind.InvalidInputError):
        store.recall(query, tiers=["nope"])


def test_reopen_persists(store_path: Path) -> None:
    with embedmind.Store.open(store_path, embedder=None) as s:
        m = s.remember("durable words", metadata={"k": [1, 2]})
    with embedmind.Store.open(store_path, embedder=None) as s:
        assert s.get(m.id) == m
        assert s.recall("durable", mode="text").ids == [m.id]
    assert (store_path.stat().st_mode & 0o777) == 0o600


def test_newer_schema_is_refused(store_path: Path) -> None:
    embedmind.Store.open(store_path, embedder=None).close()
    conn = apsw.Connection(str(store_path))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(embedmind.SchemaVersionError) as info:
        embedmind.Store.open(store_path, embedder=None)
    assert info.value.found == 99


def test_closed_store_refuses_calls(store_path: Path) -> None:
    s = embedmind.Store.open(store_path, embedder=None)
    s.close()
    with pytest.raises(embedmind.StoreClosedError):
        s.remember("late")
    s.close()  # a second close is a no-op, as for files


def test_closing_twice_with_vectors_is_a_no_op(store_path: Path) -> None:
    s = embedmind.Store.open(store_path, embedder=HashingEmbedder(dims=16))
    s.remember("alpha beta")
    s.close()
    s.close()
    with embedmind.Store.open(store_path, embedder=HashingEmbedder(dims=16)) as again:
        assert again.recall("alpha", mode="vector", k=1).ids == [again.iter().__next__().id]


def test_file_uri_is_a_literal_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with embedmind.Store.open("file:odd.mind?mode=memory", embedder=None) as s:
        s.remember("x")
    assert (tmp_path / "file:odd.mind?mode=memory").exists()


def test_recall_edge_cases(store: embedmind.Store) -> None:
    assert list(store.recall("anything")) == []
    store.remember("only one memory about cats", id="c")
    assert store.recall("cats", k=50, mode="text").ids == ["c"]
    for text in ['"', "*", "NEAR(a b)", "a OR b", "-x", "^y", '"unbalanced', "", "   "]:
        store.recall(text, mode="text")


def test_hybrid_without_embedder_degrades_and_says_so(store: embedmind.Store) -> None:
    store.remember("green tea", id="g")
    result = store.recall("tea")
    assert result.ids == ["g"] and result.channels == ("text",)
    assert result.degraded and "vector" in result.degraded[0]
    assert result[0].channels["text"].rank == 1
    assert 0.0 < result[0].score < 1.0  # the text channel's probability (embedmind.evidence)
    explained = store.recall("tea", explain=True)
    assert explained.timings is not None and "text" in explained.timings


def test_text_mode_is_bm25_order_scored_as_probabilities(store: embedmind.Store) -> None:
    store.remember_many(["tea tea tea", "tea and cake", "coffee"])
    result = store.recall("tea", mode="text")
    assert len(result) == 2
    assert 1.0 > result[0].score > result[1].score > 0
    raw = [h.channels["text"].raw for h in result]  # the BM25 itself
    assert raw[0] > raw[1] > 0


def test_selective_filter_never_under_returns(store: embedmind.Store) -> None:
    # 30k candidates: enough to pass the batch-by-batch checks and reach the
    # switch to fetching every admitted key at once.
    rng = random.Random(3)
    flagged = set(rng.sample(range(30_000), 15))
    store.remember_many(
        [
            Draft(f"apple {'apple ' * rng.randrange(3)}item {i}", metadata={"x": int(i in flagged)})
            for i in range(30_000)
        ],
        batch_size=10_000,
    )
    every_flagged = store.recall("apple", mode="text", k=100, where={"x": 1})
    assert len(every_flagged) == 15
    scores = [h.channels["text"].raw for h in every_flagged]
    assert scores == sorted(scores, reverse=True)
    top = store.recall("apple", mode="text", k=10, where={"x": 1})
    assert [h.channels["text"].raw for h in top] == scores[:10]
    assert all(h.memory.metadata == {"x": 1} for h in top)


def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(embedmind.StorageError, match="did not create"):
        embedmind.Store.open(path, embedder=None)
    assert path.read_bytes() == before  # not switched to WAL, no tables added
    assert not Path(f"{path}-wal").exists()


def test_a_store_another_process_creates_meanwhile_is_not_taken_for_a_foreign_file(
    tmp_path: Path,
) -> None:
    # The foreign-file check reads the schema version and the tables; another
    # process committing the store's first migration between two such reads
    # would show version 0 beside tables. Its commit lands right after each
    # statement the check runs, so only a check that reads both at once passes.
    path = tmp_path / "new.mind"
    other = apsw.Connection(str(path))

    class CreatedMeanwhile:
        def __init__(self, conn: apsw.Connection) -> None:
            self._conn, self._created = conn, False

        def execute(self, statement: str) -> CreatedMeanwhile:
            self.rows = self._conn.execute(statement).fetchall()  # the statement is done
            if not self._created:
                self._created = True
                other.execute("BEGIN; CREATE TABLE memories (x); PRAGMA user_version = 1; COMMIT")
            return self

        def fetchall(self) -> list[tuple[int, ...]]:
            return self.rows

    from embedmind.backend.sqlite import connection

    conn = apsw.Connection(str(path))
    connection._refuse_foreign_database(CreatedMeanwhile(conn), str(path))  # type: ignore[arg-type]
    conn.close()
    other.close()


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    apsw.Connection(str(path)).close()
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember("fine")
