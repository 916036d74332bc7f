"""R11: one store file reached by several handles in one process.

- The same path opened twice (two :class:`embedmind.Store` objects): both
  work, each sees the other's writes on its next call (the vector path
  included), they share the writer lock (a typed ``StoreBusyError``, never a
  raw "database is locked"), and writing through both at once loses nothing.
- A path through a symlink (to the file, or to its directory) is the same
  store: the same rows, and the same writer lock beside the real file.
- ``fork()`` with an open store is covered in ``test_multiprocess.py``:
  ``test_forked_child_is_refused_and_the_parent_is_unaffected`` and
  ``test_child_forked_before_open_works``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

DIMS = 16


def _open(path: Path | str, **kwargs: float) -> embedmind.Store:
    return embedmind.Store.open(path, embedder=HashingEmbedder(DIMS), **kwargs)  # type: ignore[arg-type]


def _vector(seed: int) -> list[float]:
    return np.random.default_rng(seed).normal(size=DIMS).tolist()


def _sees(store: embedmind.Store, memory_id: str, seed: int, word: str) -> None:
    """``store`` finds the memory by get, text recall and vector recall."""
    assert store.get(memory_id) is not None, memory_id
    assert memory_id in store.recall(word, mode="text", k=5).ids, memory_id
    assert store.recall("q", mode="vector", vector=_vector(seed), k=1).ids == [memory_id]


def _busy_through(holder: embedmind.Store, other: embedmind.Store) -> float:
    """While ``holder`` holds the writer lock, a write through ``other`` gets StoreBusyError."""
    with holder._db.write():
        began = time.monotonic()
        with pytest.raises(embedmind.StoreBusyError):
            other.remember("must not be written", id="blocked")
        waited = time.monotonic() - began
    assert other.get("blocked") is None
    return waited


@pytest.mark.timeout(60)
def test_same_path_opened_twice_in_one_process(tmp_path: Path, figures: Figures) -> None:
    path = tmp_path / "twice.mind"
    first, second = _open(path), _open(path, busy_timeout=0.3)
    try:
        first.remember("alpha written by the first", id="a", vector=_vector(1))
        _sees(second, "a", 1, "alpha")
        second.remember("bravo written by the second", id="b", vector=_vector(2))
        _sees(first, "b", 2, "bravo")
        waited = _busy_through(first, second)

        # Both at once from two threads: every write lands, once.
        errors: list[BaseException] = []

        def write(store: embedmind.Store, name: str) -> None:
            try:
                for batch in range(15):
                    store.remember_many(
                        [
                            embedmind.Draft(
                                f"{name} batch {batch} item {i}", id=f"{name}-{batch}-{i}"
                            )
                            for i in range(4)
                        ]
                    )
            except BaseException as e:  # re-raised in the test's thread
                errors.append(e)

        threads = [
            threading.Thread(target=write, args=(s, n)) for s, n in ((first, "x"), (second, "y"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        assert first.stats().live == second.stats().live == 2 + 2 * 15 * 4

        # One closes (saving the index file and trimming the log); the other goes on.
        first.close()
        second.remember("charlie after the first closed", id="c", vector=_vector(3))
        _sees(second, "a", 1, "alpha")
        _sees(second, "c", 3, "charlie")
    finally:
        first.close()
        second.close()
    with _open(path) as fresh:
        assert fresh.stats().live == 3 + 2 * 15 * 4
        _sees(fresh, "c", 3, "charlie")
    figures(handles=2, acknowledged_writes=3 + 2 * 15 * 4, lost=0, busy_waited_s=round(waited, 2))


@pytest.mark.timeout(60)
def test_path_through_a_symlink_is_the_same_store(tmp_path: Path, figures: Figures) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "store.mind"
    file_link = tmp_path / "link.mind"
    file_link.symlink_to(real)
    dir_link = tmp_path / "dirlink"
    dir_link.symlink_to(real_dir, target_is_directory=True)

    handles = [_open(real, busy_timeout=0.3)]
    handles += [_open(p, busy_timeout=0.3) for p in (file_link, dir_link / "store.mind")]
    try:
        for n, store in enumerate(handles):
            store.remember(f"written through handle{n}", id=f"h{n}", vector=_vector(10 + n))
        for store in handles:
            assert store.stats().live == len(handles)
            for n in range(len(handles)):
                _sees(store, f"h{n}", 10 + n, f"handle{n}")
        # One writer lock, whatever the name: a write through another name waits
        # for it and ends in StoreBusyError (not SQLite's raw "database is locked").
        waits = [_busy_through(a, b) for a in handles for b in handles if a is not b]
    finally:
        for store in handles:
            store.close()
    # SQLite keeps its WAL and SHM beside the real file, and so does the engine its
    # lock files (and the index file: see the test below).
    beside_link = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("link.mind-"))
    assert [n for n in beside_link if n != "link.mind-vectors"] == [], beside_link
    assert {"store.mind-queue.lock", "store.mind-write.lock"} <= {
        p.name for p in real_dir.iterdir()
    }
    with _open(real) as fresh:
        assert sorted(m.id for m in fresh.iter()) == ["h0", "h1", "h2"]
    figures(names=len(handles), busy_checks=len(waits), busy_waited_max_s=round(max(waits), 2))


@pytest.mark.timeout(60)
def test_a_symlinked_store_trusts_the_index_file_of_the_real_name(tmp_path: Path) -> None:
    real = tmp_path / "store.mind"
    link = tmp_path / "link.mind"
    link.symlink_to(real)
    with _open(real) as store:
        store.remember_many([embedmind.Draft(f"memory {i}", vector=_vector(i)) for i in range(50)])
    with _open(link) as store:
        store.recall("q", mode="vector", vector=_vector(1), k=1)
        assert store._vectors is not None
        assert store._vectors.rebuilt == 0, "the index file saved under the real name was rebuilt"


def test_file_bytes_counts_the_wal_beside_the_real_file(tmp_path: Path) -> None:
    real = tmp_path / "real.mind"
    link = tmp_path / "link.mind"
    link.symlink_to(real)
    with embedmind.Store.open(link, embedder=None) as store:
        store.remember_many([f"memory {i} " + "words " * 50 for i in range(200)])
        wal = Path(f"{real}-wal").stat().st_size
        assert wal > 0
        assert store.stats().file_bytes == real.stat().st_size + wal
