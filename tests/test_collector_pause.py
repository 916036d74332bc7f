"""remember_many pauses the cyclic garbage collector, and gives it back as it found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import writes


@pytest.fixture(autouse=True)
def _collector_running() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


class _Watching(HashingEmbedder):
    """Notes whether the collector runs while the store embeds a batch."""

    def __init__(self) -> None:
        super().__init__(16)
        self.seen: list[bool] = []

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.seen.append(gc.isenabled())
        return super().embed_documents(texts)


def test_the_collector_is_paused_during_remember_many_and_runs_after(tmp_path: Path) -> None:
    embedder = _Watching()
    with embedmind.Store.open(tmp_path / "s.mind", embedder=embedder) as store:
        store.remember_many([f"memory {i}" for i in range(30)], batch_size=10)
        assert embedder.seen and not any(embedder.seen), "the collector ran during the write"
        assert gc.isenabled()
        with pytest.raises(embedmind.InvalidInputError):
            store.remember_many(["fine", 7])  # type: ignore[list-item]
        assert gc.isenabled(), "a failed bulk write left the collector off"


def test_a_collector_the_caller_turned_off_stays_off(tmp_path: Path) -> None:
    gc.disable()
    with embedmind.Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(16)) as store:
        store.remember_many([f"memory {i}" for i in range(5)])
    assert not gc.isenabled()


def test_overlapping_bulk_writes_resume_the_collector_once_the_last_ends() -> None:
    inside, first_out = threading.Event(), threading.Event()
    seen: list[bool] = []

    def second() -> None:
        with writes._collector_paused():
            inside.set()
            assert first_out.wait(10)
            seen.append(gc.isenabled())  # the first pause ended; this one has not

    thread = threading.Thread(target=second)
    with writes._collector_paused():  # the first begins, the second begins, the first ends
        thread.start()
        assert inside.wait(10)
    first_out.set()
    thread.join(10)
    assert seen == [False], "the collector resumed while a bulk write was still running"
    assert gc.isenabled()
