"""The WAL is copied back into the database on the store's checkpoint thread, not in a COMMIT."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import apsw
import pytest

import embedmind
from embedmind.backend.sqlite import checkpointer, connection, database
from embedmind.backend.sqlite.checkpointer import Checkpointer


def _write_frames(store: embedmind.Store, frames: int) -> None:
    """Commit transactions of about 200 pages until the WAL holds at least ``frames`` frames."""
    for _ in range(frames // 100):
        if store._db._checkpoints.frames >= frames:
            return
        store.remember_many(
            [embedmind.Draft(f"memory {i}", metadata={"blob": "x" * 8000}) for i in range(200)]
        )
    raise AssertionError(f"the WAL hook counted {store._db._checkpoints.frames} frames")


_RESET_FRAMES = database.WAL_RESET_BYTES // connection.PAGE_SIZE


def _blocked_copies(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Make each background copy wait for the returned event; record the threads it ran on."""
    release, threads = threading.Event(), []
    real = Checkpointer._checkpoint

    def held(self: Checkpointer, conn: apsw.Connection) -> None:
        release.wait(30)
        threads.append(threading.current_thread().name)
        real(self, conn)

    monkeypatch.setattr(Checkpointer, "_checkpoint", held)
    return release, threads


def test_a_commit_leaves_the_copy_to_the_checkpoint_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite's automatic checkpoint would copy the pages into the database file
    # inside the COMMIT of the write that took the WAL past 1,000 frames.
    release, threads = _blocked_copies(monkeypatch)
    path = tmp_path / "s.mind"
    with embedmind.Store.open(path, embedder=None, synchronous="NORMAL") as store:
        store.remember("first")
        before = path.stat().st_size
        _write_frames(store, checkpointer.CHECKPOINT_FRAMES)  # past the trigger, short of a reset
        frames = store._db._checkpoints.frames
        assert frames >= checkpointer.CHECKPOINT_FRAMES
        assert frames * connection.PAGE_SIZE < database.WAL_RESET_BYTES
        assert path.stat().st_size == before, "a COMMIT copied pages into the database"
        release.set()
        deadline = time.monotonic() + 30
        while path.stat().st_size == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert path.stat().st_size > before, "the checkpoint thread never copied the pages"
        assert threads and set(threads) == {"embedmind-checkpoint"}


def test_a_writer_rewinds_the_wal_after_the_copy_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite runs one checkpoint at a time and answers another with SQLITE_BUSY
    # at once: a RESTART made beside the thread's copy would fail, and the WAL
    # would grow on. The writer waits for that copy, then rewinds the WAL.
    release, _ = _blocked_copies(monkeypatch)
    resets: list[tuple[int, bool]] = []
    real_fetch_one = database.fetch_one

    def recorded(conn: apsw.Connection, sql: str, params: object = ()) -> tuple[object, ...]:
        row = real_fetch_one(conn, sql, params)  # type: ignore[arg-type]
        if "wal_checkpoint" in sql:
            resets.append((int(row[0]), release.is_set()))  # (busy, after the copy)
        return row

    monkeypatch.setattr(database, "fetch_one", recorded)
    path = tmp_path / "s.mind"
    wal = tmp_path / "s.mind-wal"
    with embedmind.Store.open(path, embedder=None, synchronous="NORMAL") as store:
        _write_frames(store, _RESET_FRAMES)  # the next write rewinds the WAL first
        assert not resets
        threading.Timer(0.3, release.set).start()
        store.remember("after the reset")
        assert resets == [(0, True)], resets
        assert store._db._checkpoints.frames < 100  # the last write began the WAL anew
        high = wal.stat().st_size
        _write_frames(store, _RESET_FRAMES - 300)  # about as much again, over the old frames
        assert wal.stat().st_size <= high + 2 * 2**20


def test_a_wal_one_transaction_grew_past_its_limit_is_cut_back_at_the_next_rewind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rewound WALs are written over, never truncated: without journal_size_limit,
    # the file would keep the size of the largest transaction for as long as the
    # store stays open.
    monkeypatch.setattr(connection, "WAL_SIZE_LIMIT", 4 * 2**20)
    wal = tmp_path / "s.mind-wal"
    with embedmind.Store.open(tmp_path / "s.mind", embedder=None, synchronous="NORMAL") as store:
        store.remember_many(
            [embedmind.Draft(f"memory {i}", metadata={"blob": "x" * 8000}) for i in range(2400)],
            batch_size=2400,
        )  # one transaction past WAL_RESET_BYTES
        assert wal.stat().st_size > database.WAL_RESET_BYTES
        store.remember("rewinds the WAL first")
        store.remember("and another")
        assert wal.stat().st_size <= connection.WAL_SIZE_LIMIT


def test_closing_the_store_stops_its_checkpoint_thread(tmp_path: Path) -> None:
    with embedmind.Store.open(tmp_path / "s.mind", embedder=None) as store:
        _write_frames(store, checkpointer.CHECKPOINT_FRAMES)
        deadline = time.monotonic() + 30
        while store._db._checkpoints.passes == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        thread = store._db._checkpoints._thread
        assert thread is not None and thread.is_alive()
    assert not thread.is_alive()


def test_an_in_memory_store_has_no_checkpoint_thread() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many([f"memory {i}" for i in range(2000)])
        assert store._db._checkpoints is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_closes_without_waiting_for_the_parents_checkpoint_lock(
    tmp_path: Path,
) -> None:
    # A child inherits the checkpointer's lock as it was at the fork, held for
    # good if another thread held it then: the child's close must not take it.
    store = embedmind.Store.open(tmp_path / "s.mind", embedder=None)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        assert store._db._checkpoints is not None
        with store._db._checkpoints._wake:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(30)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # not pytest-timeout's handler
        signal.alarm(10)  # a hung close dies of SIGALRM, a non-zero exit
        code = 1
        try:
            store.close()
            code = 0
        finally:
            os._exit(code)
    release.set()
    thread.join()
    _, status = os.waitpid(pid, 0)
    store.close()
    assert os.waitstatus_to_exitcode(status) == 0
