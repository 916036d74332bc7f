"""The vector index after a bulk load: current when ``remember_many`` returns, saved outside the lock."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import embedmind
from embedmind.backend.sqlite import fileio, hnsw, vector_rows
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import commit

SLOW_SAVE = 2.0


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


def test_a_bulk_loads_index_saves_are_registered_by_the_loading_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite drops every page a connection has cached once another connection
    # commits; the worker that extends and saves the index must leave the
    # registering write to the loading thread, so its first read stays warm.
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 50)  # several saves within the load
    registered = []
    register = hnsw.VectorIndex.register_snapshot

    def counted(self: hnsw.VectorIndex, *args: Any) -> bool:
        registered.append(threading.current_thread() is threading.main_thread())
        return register(self, *args)

    monkeypatch.setattr(hnsw.VectorIndex, "register_snapshot", counted)
    with _open(tmp_path / "s.mind") as store:
        store.remember_many([f"warm up {i}" for i in range(300)], batch_size=100)

        def data_version() -> int:
            with store._db.read() as conn:
                return int(conn.execute("PRAGMA data_version").fetchone()[0])

        before = data_version()
        store.remember_many([f"memory number {i}" for i in range(700)], batch_size=100)
        assert data_version() == before, "another connection wrote the store during the load"
        assert len(registered) >= 3 and all(registered), registered
        with store._db.read() as conn:
            entry = vector_rows.index_file(conn, vector_rows.MEMORY.index_name)
            assert entry is not None and entry.seq == vector_rows.last_seq(conn)


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


@pytest.mark.serial  # the serial pass of `make test`: the second writer's wait is timed against a 1 s margin
def test_a_single_write_beside_a_bulk_load_leaves_the_index_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A save is due at every commit and each takes seconds. A remember on
    # another thread while a remember_many runs must neither save the index
    # nor wait for one: the bulk block's worker extends and saves it.
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 1)
    monkeypatch.setattr(fileio, "_save_hook", lambda temp: time.sleep(SLOW_SAVE))
    waited: list[float] = []
    calls: list[int] = []

    def second_writer() -> None:
        began = time.monotonic()
        store.remember("a live note", vector=[1.0] * 16)
        waited.append(time.monotonic() - began)

    class Interleaving(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> Any:
            calls.append(len(texts))
            if len(calls) == 3:  # mid-load: a second writer, on its own thread
                other = threading.Thread(target=second_writer)
                other.start()
                other.join(30)
            return super().embed_documents(texts)

    with embedmind.Store.open(tmp_path / "s.mind", embedder=Interleaving(16)) as store:
        # Six batches, so six saves of SLOW_SAVE (ten took 20 s of the serial pass): the
        # second writer comes at the third, with saves still due after it (with four batches
        # it no longer caught a single write that waits for the bulk load's save).
        store.remember_many([f"memory number {i}" for i in range(300)], batch_size=50)
        assert waited and waited[0] < SLOW_SAVE / 2, f"the single write waited {waited} s"
        assert store.stats().live == 301
        assert len(store.recall("a live note", mode="vector", k=1).ids) == 1


def _drafts(prefix: str, n: int, seed: int) -> list[Any]:
    rows = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return [embedmind.Draft(f"{prefix} {i}", vector=row) for i, row in enumerate(rows)]


def _finds_itself(store: embedmind.Store, drafts: list[Any], stored: list[Any]) -> None:
    # Each memory's own vector finds it first: the graph holds the right vector under its key.
    for draft, memory in list(zip(drafts, stored, strict=True))[::10]:
        found = store.recall("", mode="vector", vector=draft.vector, k=1)
        assert found.ids == [memory.id], "another vector answered under this memory's key"


def test_a_bulk_load_extends_the_index_before_each_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    early: list[int] = []
    original = hnsw.VectorIndex.add_uncommitted

    def counting(self: hnsw.VectorIndex, vec_keys: Any, rows: Any) -> None:
        early.append(len(vec_keys))
        original(self, vec_keys, rows)

    monkeypatch.setattr(hnsw.VectorIndex, "add_uncommitted", counting)
    drafts = _drafts("memory", 700, seed=1)
    with _open(tmp_path / "s.mind") as store:
        stored = store.remember_many(drafts, batch_size=100)
        # From the third batch on the index is in memory (the first catch-up loaded it).
        assert sum(early) >= 500, "batches were not added ahead of COMMIT"
        assert store._vectors is not None and len(store._vectors) == 700
        # The catch-up after each COMMIT teaches the owner map the vectors added early
        # too: else every search after a bulk load looks their owners up in SQLite.
        assert len(store._vectors.owners) == 700
        _finds_itself(store, drafts, stored)


def test_a_rolled_back_bulk_batch_leaves_no_vector_in_the_index(tmp_path: Path) -> None:
    # The failing batch's vectors went into the graph before COMMIT; its
    # rollback hands the same vec_keys out again, so the graph must not keep
    # the rolled-back vectors under them.
    bad = _drafts("doomed", 100, seed=2)
    bad[-1] = dataclasses.replace(bad[-1], relations=(("about", "no-such-id"),))
    later = _drafts("later", 100, seed=3)
    with _open(tmp_path / "s.mind") as store:
        store.remember_many(_drafts("good", 300, seed=1), batch_size=100)
        with pytest.raises(embedmind.errors.NotFoundError):
            store.remember_many(bad, batch_size=100)
        stored = store.remember_many(later, batch_size=100)  # reuses the vec_keys
        _finds_itself(store, later, stored)
        assert store._vectors is not None and len(store._vectors) == 400


def test_an_embedder_failing_on_the_third_batch_leaves_the_first_two_committed(
    tmp_path: Path,
) -> None:
    # The next batch is embedded while the current one is written; the error
    # still surfaces at its own batch: earlier batches stay, it and later
    # ones are absent (one transaction per batch, as the docstring says).
    calls: list[int] = []

    class FailingThird(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> Any:
            calls.append(len(texts))
            if len(calls) == 3:
                raise RuntimeError("the model ran out of memory")
            return super().embed_documents(texts)

    texts = [f"memory number {i}" for i in range(500)]
    with embedmind.Store.open(tmp_path / "s.mind", embedder=FailingThird(16)) as store:
        with pytest.raises(Exception, match="out of memory"):
            store.remember_many(texts, batch_size=100)
        assert store.stats().live == 200
        kept = {m.content for m in store.iter()}
        assert kept == set(texts[:200])
        assert len(store.recall("memory number 150", mode="vector", k=300).ids) == 200


def _saves_by_rule(batches: int, size: int, step: int, share_from: int, share: int) -> list[int]:
    """The index sizes at which the periodic rule saves, modelled one commit at a time."""
    saved_at, held, saves = 0, 0, []
    for _ in range(batches):
        held += size
        due = step if held < share_from else max(step, held // share)
        if held - saved_at >= due:
            saved_at = held
            saves.append(held)
    return saves


@pytest.mark.parametrize("share_from", [40, 10**9])
def test_a_large_index_saves_once_a_share_of_it_is_unsaved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share_from: int
) -> None:
    # Each save writes the whole index, so past SAVE_SHARE_FROM the step grows
    # with the index (a fixed step made a million-vector load save it fifty times).
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 10)
    monkeypatch.setattr(commit, "CATCH_UP_AT", 1)  # every call's one batch, on the worker
    monkeypatch.setattr(hnsw, "SAVE_SHARE_FROM", share_from)
    sizes: list[int] = []
    serialise = hnsw.VectorIndex._serialise

    def counted(self: hnsw.VectorIndex, index: Any) -> Any:
        sizes.append(len(index))
        return serialise(self, index)

    monkeypatch.setattr(hnsw.VectorIndex, "_serialise", counted)
    drafts = _drafts("saved", 300, seed=3)
    with _open(tmp_path / "s.mind") as store:
        # One commit per call, and each call ends once its catch-up (and save) is
        # done: within one call the next batch may commit before a save, which
        # then holds both batches.
        for start in range(0, 300, 10):
            store.remember_many(drafts[start : start + 10])
        saves = list(sizes)
    assert saves == _saves_by_rule(30, 10, 10, share_from, hnsw.SAVE_SHARE)
    if share_from < 300:
        assert len(saves) < 30 // 2, "the step never grew"


def test_no_index_file_holds_vectors_not_committed_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A save taken while a bulk transaction's vectors are already in the graph
    # (a bulk load on another thread) would keep them past a rollback.
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 10**9)  # nothing saved on its own
    with _open(tmp_path / "s.mind") as store:
        store.remember_many(_drafts("committed", 300, seed=1), batch_size=100)
        index = store._vectors
        assert index is not None and index.loaded
        row = np.ones((1, 16), dtype=np.float32) / 4.0
        index.add_uncommitted(np.array([10**6], dtype=np.int64), row)
        assert not index.save_snapshot(store._db), "saved a vector no snapshot has"
        index.discard()
        store.recall("", mode="vector", vector=row[0], k=1)  # reloads the committed state
        assert index.save_snapshot(store._db)


@pytest.mark.parametrize(
    "write",
    [
        'store.remember_many([f"memory number {i}" for i in range(300)], batch_size=100)',
        'store.remember("memory number 7")',
    ],
    ids=["after a bulk load", "after one write"],
)
def test_the_first_recall_imports_nothing(tmp_path: Path, write: str) -> None:
    # numpy 2.4's np.unique / np.isin import numpy.ma at their first call, and
    # usearch and onnxruntime take 65-93 ms to import: beside a bulk load that
    # holds the GIL, the reader's first recall waited 422 ms for them. Opening
    # the store pays for them, where nothing contends.
    script = f"""
import sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
with embedmind.Store.open({str(tmp_path / "s.mind")!r}, embedder=HashingEmbedder(16)) as store:
    {write}
    before = set(sys.modules)
    store.recall("memory number 7", k=3)
    print(sorted(set(sys.modules) - before))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("count", [1, 10, 40, hnsw.ADD_THREADS * 3])
def test_an_add_runs_on_a_thread_per_vector_up_to_add_threads(count: int) -> None:
    # usearch's first thread takes the GIL back after each vector it adds: beside
    # busy Python threads each take waits a switch interval (10 vectors on one
    # thread took 199 ms, on 16 threads 26 ms), and a search waits for the add.
    asked: list[int] = []

    class Spy:
        def add(self, keys: Any, vectors: Any, threads: int) -> None:
            asked.append(threads)

    hnsw._add(Spy(), np.arange(count), np.ones((count, 4), np.float32))  # type: ignore[arg-type]
    assert asked == [min(count, hnsw.ADD_THREADS)]
