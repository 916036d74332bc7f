"""Export and import as JSON Lines: a round trip is exact and idempotent."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


def _populate(store: embedmind.Store) -> None:
    a = store.remember("alice lives in lisbon", namespace="u/alice", metadata={"k": [1, {"x": None}]},
                       tags=["home"], entities=["alice", "lisbon"], now=T0, session_id="s1", agent="cli")  # fmt: skip
    store.remember("alice lives in porto", namespace="u/alice", supersedes=[a.id],
                   now=T0 + dt.timedelta(days=3), ttl=dt.timedelta(days=90))  # fmt: skip
    c = store.remember("the lisbon flat had a blue door", namespace="u/alice",
                       relations=[("about", a.id)], confidence=0.7, now=T0)  # fmt: skip
    store.reinforce([c.id], now=T0 + dt.timedelta(days=1))
    store.mark_contradicted(c.id, by=a.id, confidence=0.2, now=T0 + dt.timedelta(days=2))
    store.remember_many([f"filler memory {i}" for i in range(30)], now=T0)
    store.forget(store.recall("filler", k=1, mode="text").ids[0])
    store.link_namespaces("u/alice", "shared", tiers=["semantic"], note="n",
                          created_at=T0 + dt.timedelta(hours=5))  # fmt: skip


@pytest.mark.parametrize("vectors", [False, True])
def test_export_import_export_is_identical(tmp_path: Path, vectors: bool) -> None:
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    with embedmind.Store.open(tmp_path / "a.mind", embedder=HashingEmbedder(32)) as store:
        _populate(store)
        written = store.export_jsonl(first, include_vectors=vectors)
    assert written == 32
    with embedmind.Store.open(tmp_path / "b.mind", embedder=HashingEmbedder(32)) as copy:
        assert copy.import_jsonl(first) == 32
        copy.export_jsonl(second, include_vectors=vectors)
        assert copy.import_jsonl(first) == 32  # idempotent
        third = tmp_path / "three.jsonl"
        copy.export_jsonl(third, include_vectors=vectors)
        old = copy.recall("alice lives", mode="text", as_of=T0 + dt.timedelta(days=1))
        assert [h.content for h in old] == ["alice lives in lisbon"]
        now = T0 + dt.timedelta(days=10)
        assert [h.content for h in copy.recall("alice lives", mode="text", now=now)] == [
            "alice lives in porto"
        ]
        assert copy.links("u/alice")[0].created_at == T0 + dt.timedelta(hours=5)
    assert first.read_text() == second.read_text() == third.read_text()


def test_import_refuses_another_model_unless_reembedding(tmp_path: Path) -> None:
    dump = tmp_path / "d.jsonl"
    with embedmind.Store.open(tmp_path / "a.mind", embedder=HashingEmbedder(32)) as store:
        store.remember("red apples")
        store.export_jsonl(dump, include_vectors=True)
    with embedmind.Store.open(tmp_path / "b.mind", embedder=HashingEmbedder(64)) as other:
        with pytest.raises(embedmind.EmbedderMismatchError):
            other.import_jsonl(dump)
        assert other.stats().live == 0
        assert other.import_jsonl(dump, reembed=True) == 1
        assert other.recall("apples", mode="vector").ids
    with pytest.raises(embedmind.InvalidInputError):
        embedmind.Store.open(":memory:", embedder=None).import_jsonl(tmp_path / "a.mind-write.lock")
