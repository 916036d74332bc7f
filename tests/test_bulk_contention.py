"""Other threads beside a bulk load: a second writer gets its turn, a search never adds for it."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

import embedmind
from embedmind import drafts
from embedmind.backend.sqlite import hnsw
from embedmind.backend.sqlite.locking import FairThreadLock
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import writes

T = TypeVar("T")


def _wait_for(condition: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_released_writer_lock_goes_to_the_thread_already_waiting() -> None:
    # A bulk load releases the lock between batches and asks for it at once:
    # a thread already waiting must get it first, not after several batches.
    lock = FairThreadLock()
    assert lock.acquire(1.0)
    order: list[str] = []

    def waiter() -> None:
        assert lock.acquire(10.0)
        order.append("waiter")
        lock.release()

    thread = threading.Thread(target=waiter)
    thread.start()
    _wait_for(lambda: len(lock._waiters) == 1)
    lock.release()
    assert lock.acquire(10.0)  # queued behind the waiter: granted after it
    order.append("releaser")
    lock.release()
    thread.join(10)
    assert order == ["waiter", "releaser"]


def test_a_waiter_that_times_out_leaves_the_queue() -> None:
    lock = FairThreadLock()
    assert lock.acquire(1.0)
    got: list[bool] = []
    thread = threading.Thread(target=lambda: got.append(lock.acquire(0.05)))
    thread.start()
    thread.join(10)
    assert got == [False] and not lock._waiters
    lock.release()
    assert lock.acquire(0.0)  # free again, nobody left to hand it to
    lock.release()


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[tuple[embedmind.Store, hnsw.VectorIndex]]:
    """A store of 300 memories, and its vector index (in memory)."""
    with embedmind.Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(16)) as store:
        store.remember_many([f"memory number {i}" for i in range(300)], batch_size=100)
        assert store._vectors is not None and store._vectors.loaded
        yield store, store._vectors


def _unseen(store: embedmind.Store, monkeypatch: pytest.MonkeyPatch, write: Callable[[], T]) -> T:
    """``write()`` committed, its vectors not in the graph: the load's worker not there yet."""
    index = store._vectors
    assert index is not None
    before = len(index)
    with monkeypatch.context() as m:
        m.setattr(index, "add_uncommitted", lambda *_: None)
        m.setattr(index, "catch_up", lambda *_, **__: None)
        written = write()
    assert len(index) == before
    return written


def test_a_search_during_a_bulk_load_scores_the_vectors_the_graph_lacks(
    loaded: tuple[embedmind.Store, hnsw.VectorIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    # While a bulk load feeds the graph, a search finds committed vectors the
    # graph does not hold yet by scoring them exactly, and leaves adding them
    # to the load's worker (adding them would hold the index lock).
    store, index = loaded
    before = len(index)
    vector = np.random.default_rng(7).normal(size=16).astype(np.float32)
    new = _unseen(
        store, monkeypatch, lambda: store.remember("a memory the graph has not seen", vector=vector)
    )
    monkeypatch.setattr(index, "_fed_at", time.monotonic())  # a bulk load feeds it
    hits = store.recall("", k=1, mode="vector", vector=vector)
    assert hits.ids == [new.id]
    assert len(index) == before, "the search added the vector itself"
    monkeypatch.setattr(index, "_fed_at", -hnsw.FED_RECENT_SECONDS)  # the load is over
    assert store.recall("", k=1, mode="vector", vector=vector).ids == [new.id]
    assert len(index) == before + 1  # now the search replays it as before


class _CountingLock:
    """A re-entrant lock that counts the acquisitions made without holding it already."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.fresh = 0

    def acquire(self, *args: Any) -> bool:
        if not self._inner._is_owned():
            self.fresh += 1
        return bool(self._inner.acquire(*args))

    def release(self) -> None:
        self._inner.release()

    def __enter__(self) -> _CountingLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_search_beside_a_bulk_load_asks_for_the_index_lock_once(
    loaded: tuple[embedmind.Store, hnsw.VectorIndex], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # Each time a search asks for the lock, a bulk add may hold it for a chunk:
    # the sync and then the graph search (on a worker, for a hybrid recall)
    # asked once each, and waited out two chunks.
    store, index = loaded
    vector = np.random.default_rng(5).normal(size=16).astype(np.float32)
    expected = store.recall("memory number 7", k=5, mode=mode, vector=vector).ids
    lock = _CountingLock(index._lock)
    monkeypatch.setattr(index, "_lock", lock)
    monkeypatch.setattr(index, "_fed_at", time.monotonic())  # a bulk load feeds it
    assert store.recall("memory number 7", k=5, mode=mode, vector=vector).ids == expected
    assert lock.fresh == 1


def test_the_index_is_fed_while_a_bulk_load_runs_and_not_once_it_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # While fed, a search holds the lock through its sync and first graph search;
    # after the load a hybrid recall searches the graph beside its text channel again.
    with embedmind.Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(16)) as store:
        index = store._vectors
        assert index is not None
        fed: list[bool] = []
        commit_batch = writes.commit_batch

        def watched(*args: Any) -> Any:
            fed.append(index.feeding)
            return commit_batch(*args)

        monkeypatch.setattr(writes, "commit_batch", watched)
        store.remember_many([f"memory number {i}" for i in range(600)], batch_size=100)
        assert any(fed), "the load's worker never fed the index"
        assert not index.feeding


def test_a_bulk_catch_up_adds_what_committed_unseen_in_chunks_that_let_searches_in(
    loaded: tuple[embedmind.Store, hnsw.VectorIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A load's worker behind by a batch meets that batch committed. Its catch-up
    # must add those vectors as the early add does, a chunk per hold of the
    # index lock while searches run, not in one add under the lock.
    store, index = loaded
    before = len(index)
    vectors = np.random.default_rng(3).normal(size=(200, 16)).astype(np.float32)
    unseen = [embedmind.Draft(f"unseen {i}", vector=v) for i, v in enumerate(vectors)]
    batch = _unseen(store, monkeypatch, lambda: store.remember_many(unseen))
    monkeypatch.setattr(index, "_fed_at", time.monotonic())  # a bulk load feeds it
    store.recall("", k=1, mode="vector", vector=vectors[0])  # a search ran just now
    monkeypatch.setattr(index, "_chunk_size", lambda: 16)
    adds: list[int] = []
    add = hnsw._add

    def counted(graph: Any, keys: Any, rows: Any) -> None:
        adds.append(len(keys))
        add(graph, keys, rows)

    monkeypatch.setattr(hnsw, "_add", counted)
    index.catch_up(store._db, save_after=10**9)
    assert len(index) == before + len(batch)
    assert adds and max(adds) <= 16, f"added {max(adds)} vectors in one hold of the lock"
    for i in (0, 99, 199):
        assert store.recall("", k=1, mode="vector", vector=vectors[i]).ids == [batch[i].id]


def test_validating_a_bulk_load_sleeps_every_few_drafts_while_a_reader_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Validation is pure Python: without a real sleep (which releases the GIL
    # for long enough that a waiting thread takes it) a reader beside it got
    # the GIL back once per switch interval at each SQLite step.
    prepared = 0
    at_sleep: list[int] = []
    prepare, sleep = drafts.prepare, time.sleep

    def counted(*args: object) -> object:
        nonlocal prepared
        prepared += 1
        return prepare(*args)  # type: ignore[arg-type]

    def noted(seconds: float) -> None:
        at_sleep.append(prepared)
        sleep(seconds)

    monkeypatch.setattr(drafts, "prepare", counted)
    with embedmind.Store.open(tmp_path / "s.mind", embedder=None) as store:
        monkeypatch.setattr(time, "sleep", noted)
        store.remember_many([f"alone {i}" for i in range(230)])
        assert not at_sleep, "slept with no reader in the process"

        reading, done = threading.Event(), threading.Event()

        def reader() -> None:
            with store._backend.read():
                reading.set()
                done.wait(10)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            assert reading.wait(10)
            prepared = 0
            store.remember_many([f"memory {i}" for i in range(230)])
        finally:
            done.set()
            thread.join(10)
        stops = [0, *at_sleep, prepared]
        assert prepared == 230
        assert max(b - a for a, b in itertools.pairwise(stops)) <= writes.YIELD_EVERY
