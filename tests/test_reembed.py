"""Re-embedding a store with a new model, including resuming after a crash."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

reembed_module = importlib.import_module("embedmind.reembed")


def _store(path: Path, n: int) -> None:
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"memory number {i} about topic{i % 7}" for i in range(n)])
        store.forget(store.recall("memory", k=1).ids[0])


def test_reembed_switches_the_model(tmp_path: Path) -> None:
    path = tmp_path / "r.mind"
    _store(path, 50)
    assert embedmind.reembed(path, HashingEmbedder(64), batch_size=8) == 49
    with pytest.raises(embedmind.EmbedderMismatchError):
        embedmind.Store.open(path, embedder=HashingEmbedder(32))
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        assert store.stats().vectors == 49
        assert store.stats().embedder == "hashing-64"
        hit = store.recall("topic3", k=1, mode="vector")
        assert hit[0].memory.content.endswith("topic3")


def test_reembed_resumes_after_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.mind"
    _store(path, 40)
    calls = {"n": 0}
    real = reembed_module.embed_contents

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("killed mid-way")
        return real(*args, **kwargs)

    monkeypatch.setattr(reembed_module, "embed_contents", flaky)
    with pytest.raises(RuntimeError):
        embedmind.reembed(path, HashingEmbedder(64), batch_size=10)
    with pytest.raises(embedmind.ConflictError):  # another target while one is unfinished
        embedmind.reembed(path, HashingEmbedder(16), batch_size=10)
    monkeypatch.setattr(reembed_module, "embed_contents", real)
    assert embedmind.reembed(path, HashingEmbedder(64), batch_size=10) == 19  # the rest only
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        assert store.stats().vectors == 39
