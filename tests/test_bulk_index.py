"""The vector index after a bulk load: current when ``remember_many`` returns, saved outside the lock."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind.backend.sqlite import fileio, hnsw, vector_rows
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import commit


def _open(path: Path) -> embedmind.Store:
    return embedmind.Store.open(path, embedder=HashingEmbedder(16))


def test_the_index_holds_every_batch_when_remember_many_returns(tmp_path: Path) -> None:
    with _open(tmp_path / "s.mind") as store:
        store.remember_many([f"memory number {i}" for i in range(700)], batch_size=100)
        # (700 memories: enough to load the index from the first batch on)
        index = store._vectors
        assert index is not None and index.loaded
        with store._db.read() as conn:
            # Nothing left for the first search to replay: it is as fast as after a reopen.
            assert index._applied == vector_rows.last_seq(conn)
        assert len(index) == 700


def test_one_batch_leaves_the_search_to_catch_up_lazily(tmp_path: Path) -> None:
    # A single small write is not worth loading a large index for.
    path = tmp_path / "s.mind"
    with _open(path) as store:
        store.remember_many([f"m {i}" for i in range(50)])
    with _open(path) as store:
        store.remember("one more")
        assert store._vectors is not None and not store._vectors.loaded


@pytest.mark.parametrize("bulk", [True, False])
def test_a_due_save_holds_neither_the_writer_lock_nor_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk: bool
) -> None:
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 1)  # every commit saves
    seen: dict[str, bool] = {}

    with _open(tmp_path / "s.mind") as store:
        store.remember_many(["first memory", "second memory"])

        def meanwhile(temp: str) -> None:
            # Runs while the index file is being written: a writer and a reader
            # in other threads must both get through.
            if seen:
                return
            seen["saving"] = True
            writer = threading.Thread(target=lambda: seen.update(wrote=bool(store.remember("x"))))
            reader = threading.Thread(
                target=lambda: seen.update(read=bool(store.recall("first", mode="vector").ids))
            )
            for t in (writer, reader):
                t.start()
            for t in (writer, reader):
                t.join(10)

        monkeypatch.setattr(fileio, "_save_hook", meanwhile)
        if bulk:
            store.remember_many([f"bulk {i}" for i in range(20)], batch_size=5)
        else:
            store.remember("one at a time")
        assert seen.get("saving"), "the save ran"
        assert seen.get("wrote"), "a writer waited for the index save"
        assert seen.get("read"), "a vector search waited for the index save"


def test_a_single_write_beside_a_bulk_load_leaves_the_due_save_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A save is due at every commit. A remember on another thread while a
    # remember_many runs must not serialise the index itself (seconds at 100k
    # vectors): the bulk block's worker saves, and the single write returns.
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 1)
    savers: list[str] = []
    original = hnsw.VectorIndex.save_snapshot

    def recording(self: hnsw.VectorIndex, db: object) -> bool:
        savers.append(threading.current_thread().name)
        return original(self, db)  # type: ignore[arg-type]

    monkeypatch.setattr(hnsw.VectorIndex, "save_snapshot", recording)
    calls: list[int] = []

    class Interleaving(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> Any:
            calls.append(len(texts))
            if len(calls) == 3:  # mid-load: a second writer, on its own thread
                other = threading.Thread(
                    target=lambda: store.remember("a live note", vector=[1.0] * 16),
                    name="second-writer",
                )
                other.start()
                other.join(30)
            return super().embed_documents(texts)

    with embedmind.Store.open(tmp_path / "s.mind", embedder=Interleaving(16)) as store:
        store.remember_many([f"memory number {i}" for i in range(500)], batch_size=50)
        assert "second-writer" not in savers, "the single write saved the index itself"
        assert any(name.startswith("embedmind-index") for name in savers), "the bulk saved"
        assert store.stats().live == 501
