"""A hybrid recall searches the vector graph on a worker while it scores the text channel.

The overlap must change when the work happens, never what is found: the
started search (``begin_vector_top``) gives the hits the one-call search
(``vector_top``) gives, for every filter and depth, and vector mode, with
nothing to overlap, stays on the calling thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import embedmind
from embedmind import Draft
from embedmind.backend.sqlite import hnsw, workers
from embedmind.backend.sqlite.session import SqliteChannels
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.query.selection import Selection

WORDS = "river stone garden lamp violin harbor orbit pepper canvas lantern meadow copper".split()


@pytest.fixture(scope="module")
def filled() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as store:
        store.remember_many(
            [
                Draft(
                    " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 6)),
                    id=f"m{i}",
                    metadata={"group": i % 4},
                    tags=("odd",) if i % 2 else (),
                )
                for i in range(600)
            ]
        )
        yield store


def _watch_search(monkeypatch: pytest.MonkeyPatch, text_began: threading.Event) -> dict[str, Any]:
    """Record on which thread the graph search runs, and whether the text channel began meanwhile."""
    seen: dict[str, Any] = {}
    search = hnsw.VectorIndex.search

    def watched(self: hnsw.VectorIndex, *args: Any) -> Any:
        seen["thread"] = threading.current_thread().name
        # A search that runs before the text channel (not beside it) waits here in vain.
        seen["text_began_meanwhile"] = text_began.wait(timeout=3)
        return search(self, *args)

    monkeypatch.setattr(hnsw.VectorIndex, "search", watched)
    for name in ("text_top", "text_widened"):
        original = getattr(SqliteChannels, name)

        def began(self: SqliteChannels, *args: Any, _original: Any = original, **kw: Any) -> Any:
            text_began.set()
            return _original(self, *args, **kw)

        monkeypatch.setattr(SqliteChannels, name, began)
    return seen


@pytest.mark.parametrize("widen", [False, True])
def test_the_graph_search_runs_while_the_text_channel_is_scored(
    filled: embedmind.Store, monkeypatch: pytest.MonkeyPatch, widen: bool
) -> None:
    text_began = threading.Event()
    seen = _watch_search(monkeypatch, text_began)
    result = filled.recall("violin harbor", k=5, widen=widen)
    assert seen["thread"].startswith("embedmind-worker")
    assert seen["text_began_meanwhile"] is True
    assert len(result) == 5


def test_vector_mode_searches_on_the_calling_thread(
    filled: embedmind.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    text_began = threading.Event()
    text_began.set()  # no text channel in vector mode: do not make the search wait
    seen = _watch_search(monkeypatch, text_began)
    filled.recall("violin harbor", k=5, mode="vector")
    assert seen["thread"] == threading.current_thread().name


FILTERS: list[dict[str, Any]] = [
    {},
    {"where": {"group": 2}},
    {"tags": ("odd",)},
    {"where": {"group": {"$in": [0, 3]}}, "tags": ("odd",)},
]


@pytest.mark.parametrize("k", [1, 10, 50])
@pytest.mark.parametrize("filters", FILTERS, ids=["none", "where", "tags", "both"])
def test_a_started_search_finds_what_the_one_call_search_finds(
    filled: embedmind.Store, k: int, filters: dict[str, Any]
) -> None:
    embedder = HashingEmbedder(32)
    with filled._backend.read() as session:
        selection = Selection.of(time.time_ns() // 1000, **filters)
        for query in ("violin harbor", "pepper", "orbit copper lamp", "nothing alike"):
            vector = embedder.embed_query(query)
            whole = session.channels.vector_top(vector, selection, k)
            finish = session.channels.begin_vector_top(vector, selection, k)
            # The session's other reads in between, as a hybrid recall makes them.
            session.channels.text_top(query, selection, k)
            assert finish() == whole


def test_a_store_with_vectors_starts_a_worker_when_it_opens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Starting a thread costs about 0.4 ms: paid by open, not by the first hybrid recall.
    monkeypatch.setattr(workers, "_pool", None)  # this process's own pool, if any, is kept
    try:
        with embedmind.Store.open(":memory:", embedder=None):
            assert workers._pool is None, "a text-only store searches no graph"
        with embedmind.Store.open(":memory:", embedder=HashingEmbedder(8)):
            pool = workers._pool
            assert pool is not None and len(pool._threads) == 1
    finally:
        if workers._pool is not None:
            workers._pool.shutdown()
