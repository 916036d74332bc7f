"""The missing-vectors cache is kept current by the store's own writes, exactly.

The cache (which live memories have no vector) used to be computed on the
first recall, by a scan of every row; a bulk load's index saves trimmed the
vector log and a forget removed vectors, so the next recall scanned again.
Now each write transaction works out what it changed, inside the transaction,
and the cache takes it once COMMIT returned. These tests hold that to an
oracle (a full scan) across writes from two handles, count the full scans a
recall still makes, and check that a rolled-back write leaves the cache exact.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import database, vector_rows
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import commit

DIMS = 32


def _model() -> HashingEmbedder:
    return HashingEmbedder(DIMS)


def _open(path: Path, *, with_model: bool = True) -> embedmind.Store:
    embedder = _model() if with_model else None
    return embedmind.Store.open(path, embedder=embedder, synchronous="NORMAL")


def _cache(store: embedmind.Store) -> Any:
    return store._backend.parts.missing  # type: ignore[attr-defined]


def _answer(store: embedmind.Store) -> tuple[int, ...]:
    """What the store's cache answers (refreshing it if its marks moved)."""
    with store._backend.read() as r:  # type: ignore[attr-defined]
        return tuple(r.channels.missing_vectors())


def _scan(store: embedmind.Store) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    """The oracle: a full scan plus liveness, and the marks of the same snapshot."""
    with store._backend.read() as r:  # type: ignore[attr-defined]
        rows = vector_rows.rows_without_vectors(r.conn)
        live = {
            int(k) for (k,) in r.conn.execute("SELECT key FROM memories WHERE forgotten_at IS NULL")
        }
        return tuple(sorted(set(rows) & live)), vector_rows.change_marks(r.conn)


@pytest.fixture
def full_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the full anti-joins (``rows_without_vectors`` with no ``after``) from now on."""
    calls: list[int] = []
    original = vector_rows.rows_without_vectors

    def counted(conn: Any, after: int = 0) -> list[int]:
        if after == 0:
            calls.append(after)
        return original(conn, after)

    monkeypatch.setattr(vector_rows, "rows_without_vectors", counted)
    return calls


def _drafts(n: int, prefix: str, seed: int = 0) -> list[embedmind.Draft]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        embedmind.Draft(content=f"{prefix} note {i}", vector=vectors[i].tolist()) for i in range(n)
    ]


# -- the oracle ----------------------------------------------------------------------

_IDS = st.sampled_from([f"id{i}" for i in range(5)])
_CONTENTS = st.sampled_from(["tea", "coffee", "green tea", "water"])
_HANDLE = st.sampled_from(["modelled", "bare"])
_STEP = st.one_of(
    st.tuples(st.just("write"), _HANDLE, _IDS, _CONTENTS),
    st.tuples(st.just("many"), _HANDLE, st.lists(_IDS, min_size=1, max_size=3), _CONTENTS),
    st.tuples(st.just("forget"), _HANDLE, _IDS),
    st.tuples(st.just("delete"), _HANDLE, _IDS),
    st.tuples(st.just("redact"), _HANDLE, _IDS, _CONTENTS),
    st.tuples(st.just("reembed")),
    st.tuples(st.just("vacuum"), _HANDLE),
)


def _apply(handles: dict[str, embedmind.Store], path: Path, step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "reembed":  # a third writer, as another process would be
        embedmind.reembed(path, _model(), missing=True)
        return
    store = handles[step[1]]
    if kind == "write":
        store.remember(step[3], id=step[2])
    elif kind == "many":
        store.remember_many(
            [embedmind.Draft(content=f"{step[3]} {i}", id=i) for i in dict.fromkeys(step[2])]
        )
    elif kind == "forget":
        store.forget(step[2])
    elif kind == "delete":
        store.delete(step[2])
    elif kind == "redact":
        if store.get(step[2]) is not None:
            store.redact(step[2], step[3])
    else:
        store.vacuum()


def _check(handles: dict[str, embedmind.Store], path: Path) -> None:
    expected, marks = _scan(handles["modelled"])
    for store in handles.values():
        cached_marks, cached_live = _cache(store).cached()
        if cached_marks == marks:  # current without a refresh: what a write installed
            assert cached_live == expected
        assert _answer(store) == expected
    with _open(path) as fresh:
        assert _answer(fresh) == expected


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_STEP, st.booleans()), min_size=1, max_size=12))
def test_the_cache_always_names_what_a_full_scan_names(
    steps: list[tuple[tuple[Any, ...], bool]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.mind"
        handles = {"modelled": _open(path), "bare": _open(path, with_model=False)}
        try:
            for step, look in steps:
                _apply(handles, path, step)
                # Without a look, the other handle's cache goes stale across
                # several writes, as another process's writes would make it.
                if look:
                    _check(handles, path)
            _check(handles, path)
        finally:
            for store in handles.values():
                store.close()


# -- what a write leaves for the next recall ------------------------------------------


def _first_recall_scans(store: embedmind.Store, full_scans: list[int]) -> int:
    full_scans.clear()
    query = _drafts(1, "query", seed=99)[0]
    store.recall("note", k=10, vector=query.vector)
    return len(full_scans)


@pytest.mark.parametrize("batch_size", [256, 10_000])
def test_the_first_recall_after_a_bulk_load_of_a_new_store_scans_nothing(
    tmp_path: Path, full_scans: list[int], batch_size: int
) -> None:
    with _open(tmp_path / "m.mind") as store:
        store.remember_many(_drafts(600, "bulk"), batch_size=batch_size)
        assert _first_recall_scans(store, full_scans) == 0
        assert _answer(store) == _scan(store)[0] == ()


def test_the_first_recall_after_a_bulk_load_of_an_existing_store_scans_nothing(
    tmp_path: Path, full_scans: list[int]
) -> None:
    path = tmp_path / "m.mind"
    with _open(path) as store:
        store.remember_many(_drafts(300, "old"))
    with _open(path, with_model=False) as bare:
        bare.remember("written without a vector")
    with _open(path) as store:  # this process never computed the cache
        store.remember_many(_drafts(300, "new", seed=1))
        assert _first_recall_scans(store, full_scans) == 0
        assert len(_answer(store)) == 1
        assert _answer(store) == _scan(store)[0]


def test_a_trimmed_log_costs_the_next_recall_no_scan(
    tmp_path: Path, full_scans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Saves every 100 changes: each trims the log the refresh used to replay.
    monkeypatch.setattr(commit, "SAVE_INDEX_AFTER", 100)
    path = tmp_path / "m.mind"
    with _open(path) as store:
        store.remember_many(_drafts(100, "first"))
    with _open(path) as store:
        assert _first_recall_scans(store, full_scans) == 1  # this process's first look
        store.remember_many(_drafts(700, "bulk", seed=1), batch_size=100)
        assert _first_recall_scans(store, full_scans) == 0


def test_ordinary_writes_cost_the_next_recall_no_scan(
    tmp_path: Path, full_scans: list[int]
) -> None:
    path = tmp_path / "m.mind"
    with _open(path) as store:
        ids = [m.id for m in store.remember_many(_drafts(20, "seed"))]
    with _open(path) as store, _open(path, with_model=False) as bare:
        assert _first_recall_scans(store, full_scans) == 1  # this process's first look
        writes: list[Callable[[], object]] = [
            lambda: store.remember("one more"),
            lambda: store.forget(ids[0]),  # removes its vectors
            lambda: store.remember("changed content", id=ids[1]),  # replaces them
            lambda: store.delete(ids[2]),
            lambda: store.redact(ids[3], "redacted"),
        ]
        for write in writes:
            write()
            assert _first_recall_scans(store, full_scans) == 0
            assert _answer(store) == _scan(store)[0]
        # Another handle's write is found by the marks, not by this cache's writes.
        bare.remember("no vector")
        store.remember("with a vector")
        _first_recall_scans(store, full_scans)
        assert len(_answer(store)) == 1
        assert _answer(store) == _scan(store)[0]


def test_a_recall_whose_snapshot_precedes_a_write_gets_its_answer_without_a_scan(
    tmp_path: Path, full_scans: list[int]
) -> None:
    # Beside a bulk load, a recall's snapshot often began before the load's
    # latest commit moved the cache on: it scanned every row, and set the cache back.
    path = tmp_path / "m.mind"
    with _open(path) as store, _open(path, with_model=False) as bare:
        store.remember_many(_drafts(20, "seed"))
        gap = bare.remember("no vector")
        before = _answer(store)
        assert len(before) == 1
        full_scans.clear()
        with store._backend.read() as older:  # type: ignore[attr-defined]
            assert tuple(older.channels.missing_vectors()) == before  # its snapshot begins
            writer = threading.Thread(target=store.remember_many, args=(_drafts(3, "l", 1),))
            writer.start()  # on its own thread (connection): the cache moves on
            writer.join(30)
            moved, _ = _cache(store).cached()
            assert tuple(older.channels.missing_vectors()) == before
            assert _cache(store).cached()[0] == moved  # not set back
        assert full_scans == []
        store.forget(gap.id)
        assert _first_recall_scans(store, full_scans) == 0
        assert _answer(store) == () == _scan(store)[0]


# -- rollback ----------------------------------------------------------------------


@pytest.fixture
def failing_commit(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """While its flag is set, each write fails just before COMMIT (after the cache's update)."""
    armed = [False]

    def crashpoint(name: str) -> None:
        if armed[0] and name == "before-commit":
            raise RuntimeError("injected failure before COMMIT")

    monkeypatch.setattr(database, "crashpoint", crashpoint)
    return armed


def test_a_rolled_back_write_leaves_the_cache_exact(
    tmp_path: Path, failing_commit: list[bool]
) -> None:
    path = tmp_path / "m.mind"
    with _open(path) as store:
        kept = store.remember("kept").id
    with _open(path, with_model=False) as bare:
        lacking = bare.remember("no vector").id
        before = _answer(bare)
        marks = _cache(bare).cached()
        assert len(before) == 1
        failing_commit[0] = True
        for write in (
            lambda: bare.remember("another without a vector"),
            lambda: bare.remember("now without a vector", id=kept),  # removes its vector
            lambda: bare.forget(lacking),
        ):
            with pytest.raises(RuntimeError, match="injected"):
                write()
            assert _cache(bare).cached() == marks  # untouched by what rolled back
            assert _answer(bare) == before == _scan(bare)[0]
        failing_commit[0] = False
        bare.remember("now without a vector", id=kept)
        assert len(_answer(bare)) == 2
        assert _cache(bare).cached()[1] == _scan(bare)[0]
