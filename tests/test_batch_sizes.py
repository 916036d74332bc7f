"""``remember_many`` without a ``batch_size`` sizes its batches by the writer-lock time they take."""

from __future__ import annotations

import doctest
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import apply, batch_sizes, writes
from embedmind.engine.batch_sizes import FIRST, LARGEST, MAX_STEP, TARGET_HOLD_S, BatchSizes
from embedmind.errors import InvalidInputError


def test_the_examples_hold() -> None:
    failed, tried = doctest.testmod(batch_sizes)
    assert tried and not failed


@given(
    st.lists(
        st.tuples(st.integers(1, LARGEST), st.floats(0, 60, allow_nan=False)),
        max_size=40,
    )
)
def test_an_adaptive_size_moves_towards_the_target_in_bounded_steps(
    observed: list[tuple[int, float]],
) -> None:
    sizes = BatchSizes(None)
    assert sizes.next() == FIRST
    for size, held in observed:
        sizes.observe(size, held)
        new = sizes.next()
        assert FIRST <= new <= LARGEST
        low, high = max(FIRST, int(size / MAX_STEP)), min(LARGEST, int(size * MAX_STEP))
        assert low <= new <= max(high, FIRST), (size, held, new)
        if held < TARGET_HOLD_S:  # a short hold never shrinks the next batch
            assert new >= min(size, LARGEST)
        elif held > TARGET_HOLD_S:  # a long one never grows it
            assert new <= max(size, FIRST)


@given(st.integers(1, LARGEST), st.lists(st.floats(0, 60, allow_nan=False), max_size=10))
def test_a_fixed_size_ignores_the_holds(fixed: int, holds: list[float]) -> None:
    sizes = BatchSizes(fixed)
    for held in holds:
        sizes.observe(fixed, held)
        assert sizes.next() == fixed


def _batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: float, *, embedder: Any, n: int
) -> list[int]:
    """The size of each transaction of one default ``remember_many`` of ``n`` memories."""
    monkeypatch.setattr(batch_sizes, "TARGET_HOLD_S", target)
    seen: list[int] = []
    commit_batch = writes.commit_batch

    def watched(engine: Any, batch: Any, embedded: Any) -> Any:
        seen.append(len(batch))
        return commit_batch(engine, batch, embedded)

    monkeypatch.setattr(writes, "commit_batch", watched)
    with embedmind.Store.open(tmp_path / "s.mind", embedder=embedder) as store:
        stored = store.remember_many([f"memory number {i}" for i in range(n)])
        assert [m.content for m in stored] == [f"memory number {i}" for i in range(n)]
        assert store.stats().live == n
    return seen


@pytest.mark.parametrize("embedder", [None, HashingEmbedder(16)], ids=["text", "embedding"])
def test_batches_grow_while_their_commits_are_quick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    # Every hold is far under an hour: each batch is twice the one measured before it.
    # While an embedder runs, a batch is cut (and embedded) before the one ahead of it
    # commits, so it is sized by the batch before that.
    seen = _batches(tmp_path, monkeypatch, 3600.0, embedder=embedder, n=3_000)
    grown = [256, 512, 1024, 1208] if embedder is None else [256, 256, 512, 512, 1024, 440]
    assert seen == grown


@pytest.mark.parametrize("embedder", [None, HashingEmbedder(16)], ids=["text", "embedding"])
def test_batches_stay_at_the_first_size_while_their_commits_are_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    seen = _batches(tmp_path, monkeypatch, 1e-9, embedder=embedder, n=1_000)
    assert seen == [FIRST, FIRST, FIRST, 1_000 - 3 * FIRST]


def test_one_slow_commit_halves_the_next_batch_and_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Holds as measured: quick ones while the batches grow to 4,096, then one that
    # took four times the target (a checkpoint ran), then quick ones again.
    holds = iter([0.0] * 4 + [4 * TARGET_HOLD_S] + [0.0] * 10)
    observe = BatchSizes.observe

    def scripted(self: BatchSizes, size: int, held_s: float) -> None:
        observe(self, size, next(holds))

    monkeypatch.setattr(BatchSizes, "observe", scripted)
    seen = _batches(tmp_path, monkeypatch, TARGET_HOLD_S, embedder=None, n=12_000)
    assert seen == [256, 512, 1_024, 2_048, 4_096, 2_048, 2_016]


def test_the_hold_is_the_transactions_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the sizes follow: the writer lock's hold, from the transaction's first row
    # to its commit, not the time spent before it (validating, embedding).
    holds: list[float] = []
    observe = BatchSizes.observe

    def watched(self: BatchSizes, size: int, held_s: float) -> None:
        holds.append(held_s)
        observe(self, size, held_s)

    apply_batch = apply.apply_batch

    def slow(*args: Any) -> Any:
        time.sleep(0.05)
        return apply_batch(*args)

    monkeypatch.setattr(BatchSizes, "observe", watched)
    monkeypatch.setattr(apply, "apply_batch", slow)
    with embedmind.Store.open(tmp_path / "s.mind", embedder=None) as store:
        began = time.perf_counter()
        store.remember_many([f"memory number {i}" for i in range(300)])
        whole = time.perf_counter() - began
    assert len(holds) == 2
    assert all(0.05 <= held < whole for held in holds)


@pytest.mark.parametrize("bad", [0, LARGEST + 1, "256", 2.0, True])
def test_a_bad_batch_size_is_refused_and_writes_nothing(tmp_path: Path, bad: object) -> None:
    with embedmind.Store.open(tmp_path / "s.mind", embedder=None) as store:
        with pytest.raises(
            InvalidInputError, match=r"^batch_size: expected an int within 1-10,000$"
        ):
            store.remember_many(["one", "two"], batch_size=bad)  # type: ignore[arg-type]
        assert store.stats().live == 0
