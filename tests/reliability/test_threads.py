"""R10: threads in one process share a store (as LangChain's thread pools do)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["file", "memory"])
def test_eight_writer_threads_and_readers(tmp_path: Path, where: str, figures: Figures) -> None:
    path = tmp_path / "t.mind" if where == "file" else ":memory:"
    store = embedmind.Store.open(path, embedder=HashingEmbedder(32), synchronous="NORMAL")
    errors: list[BaseException] = []
    written: set[str] = set()
    guard = threading.Lock()
    stop = threading.Event()
    reads = [0]

    def writer(w: int) -> None:
        try:
            for b in range(20):
                batch = [
                    embedmind.Draft(f"thread {w} batch {b} item {i}", id=f"{w}-{b}-{i}")
                    for i in range(10)
                ]
                store.remember_many(batch)
                with guard:
                    written.update(d.id or "" for d in batch)
        except BaseException as e:  # collected and re-raised in the main thread
            errors.append(e)

    def reader() -> None:
        try:
            while not stop.is_set():
                with guard:
                    seen = set(written)
                hits = store.recall("thread batch item", k=50)
                assert all(h.memory.id.count("-") == 2 for h in hits)
                found = {m.id for m in store.get_many(sorted(seen)[:200])}
                assert found == set(sorted(seen)[:200])  # acknowledged writes are visible
                with guard:
                    reads[0] += 1
        except BaseException as e:
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    try:
        assert not errors, errors[0]
        assert store.stats().live == 1_600
        assert len({m.id for m in store.iter()}) == 1_600
        figures(writers=8, memories=store.stats().live, reader_rounds=reads[0], errors=len(errors))
    finally:
        store.close()
