"""Several processes on one store file: fair writers, whole snapshots, busy errors, fork().

RELIABILITY.md R9 (two and three writer processes, unique and colliding ids:
0 errors within the lock timeout, 0 lost writes, 0 duplicate rows, each
writer ≥ 25 % of commits) and R11 (``fork()`` with an open store; the same
path opened twice and through a symlink are in ``test_open_paths.py``).
``EMBEDMIND_WRITERS_SECONDS`` sets the writers' run (5 s; the soak runs longer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tooling.children import spawn, start_together

import embedmind

# Serial pass of `make test` (not beside other tests): writer processes racing for fair shares; busy-timeout waits timed.
pytestmark = pytest.mark.serial

if TYPE_CHECKING:
    from conftest import Figures

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tests" / "tooling" / "mp_workers.py"
DURATION = float(os.environ.get("EMBEDMIND_WRITERS_SECONDS", "5"))


def _finish(proc: subprocess.Popen[bytes], out: Path, err: Path, timeout: float) -> str:
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"{out.stem} exited {proc.returncode}:\n{err.read_text()}"
    assert err.read_text() == "", err.read_text()
    return out.read_text()


def _acknowledged(ack: Path) -> list[tuple[str, list[str], int, int]]:
    """A writer's acknowledged calls: ``(origin, ids, start_ns, end_ns)`` in order."""
    batches = [line.split(",") for line in ack.read_text().splitlines()]
    times = [line.split(" ") for line in Path(f"{ack}.times").read_text().splitlines()]
    assert len(batches) == len(times)
    return [(o, ids, int(s), int(e)) for ids, (o, s, e) in zip(batches, times, strict=True)]


@pytest.mark.timeout(int(DURATION) + 200)  # two start_together waits of 120 s at most, then the run
@pytest.mark.parametrize("writers", [2, 3])
def test_writers_and_a_reader(tmp_path: Path, figures: Figures, writers: int) -> None:
    """R9: fair writers, no lost or duplicate rows, with unique and colliding ids.

    Each writer alternates a batch of ids of its own with an upsert of one of a
    few id groups every writer shares, so the run covers unique and colliding
    ids at once; a reader checks whole snapshots meanwhile.
    """
    ids = "colliding"  # mp_workers: every other batch colliding, the rest unique
    path, sync = tmp_path / "shared.mind", tmp_path / "sync"
    acks = [tmp_path / f"w{n}.acks" for n in range(writers)]
    spawned = [
        spawn(TOOL, tmp_path, f"w{n}", "writer", path, n, sync, DURATION, acks[n], ids)
        for n in range(writers)
    ]
    reader = spawn(TOOL, tmp_path, "reader", "reader", path, sync, DURATION, *acks)
    # All of them open (and so create and migrate) the file at the same moment, then
    # start at one moment: both named once every process is ready for it.
    start_together(sync, [*spawned, reader])
    summaries = [json.loads(_finish(*w, timeout=DURATION + 60)) for w in spawned]
    checks = json.loads(_finish(*reader, timeout=DURATION + 60))

    commits = [s["commits"] for s in summaries]
    acked = [_acknowledged(a) for a in acks]
    assert [len(a) for a in acked] == commits
    total = sum(commits)
    shares = [round(c / total, 3) for c in commits]
    # Every call to each id, by origin, with its interval.
    calls: dict[str, list[tuple[str, int, int]]] = {}
    for origin, batch, began, ended in (call for a in acked for call in a):
        for memory_id in batch:
            calls.setdefault(memory_id, []).append((origin, began, ended))
    colliding = sum(len(c) - 1 for c in calls.values())

    with embedmind.Store.open(path, embedder=None) as store:
        everything = list(store.iter(include_forgotten=True))
        stored_ids = [m.id for m in everything]
        duplicates = len(stored_ids) - len(set(stored_ids))
        lost = set(calls) - set(stored_ids)
        phantom = set(stored_ids) - set(calls)
        overwritten = 0  # a later acknowledged write lost under an earlier one
        groups: dict[str, set[str]] = {}
        for m in everything:
            assert not m.forgotten
            assert m.metadata["batch"] == m.id.rsplit("-", 1)[0]
            assert f"tag_{m.metadata['batch']}" in m.content.split()
            groups.setdefault(m.metadata["batch"], set()).add(m.metadata["origin"])
            # The final row is one of the writes to this id, and no write to it
            # began after that one returned (that later write would be lost).
            origin = m.metadata["origin"]
            mine = [c for c in calls.get(m.id, []) if c[0] == origin]
            assert len(mine) == 1, f"{m.id} holds an unacknowledged write {origin}"
            overwritten += any(began > mine[0][2] for _, began, _ in calls[m.id])
        live = store.stats().live
        for a in acked:  # the last batch of each writer is readable through recall
            tag = a[-1][1][0].rsplit("-", 1)[0]
            hits = store.recall(f"tag_{tag}", mode="text").hits
            assert sorted(h.memory.id for h in hits) == sorted(a[-1][1])

    figures(
        writers=writers, ids=ids, seconds=DURATION, acknowledged_writes=total, commits=commits,
        shares=shares, distinct_ids=len(calls), collisions=colliding, lost=len(lost),
        duplicates=duplicates, overwritten=overwritten, errors=0,
        reader_iterations=checks["iterations"], reader_acked_checked=checks["acked_checked"],
    )  # fmt: skip
    assert total >= 100, f"too few commits to judge fairness: {commits}"
    assert min(shares) >= 0.25, f"a writer starved: {shares}"
    assert colliding >= total // 4, "the writers hardly collided"
    assert not lost and not phantom and duplicates == 0, (sorted(lost)[:5], sorted(phantom)[:5])
    assert overwritten == 0
    assert live == len(calls)
    assert all(len(o) == 1 for o in groups.values()), "a group mixes two transactions"
    assert checks["iterations"] >= 5, checks
    assert checks["scans"] >= 1, checks
    assert checks["acked_checked"] > 0, checks


@pytest.mark.timeout(60)
def test_writer_blocked_past_busy_timeout_gets_store_busy(tmp_path: Path) -> None:
    path, release = tmp_path / "busy.mind", tmp_path / "release"
    holder, out, err = spawn(TOOL, tmp_path, "holder", "holder", path, release)
    try:
        deadline = time.monotonic() + 20
        while "HOLDING" not in out.read_text():
            assert holder.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "holder never took the lock"
            time.sleep(0.01)
        with embedmind.Store.open(path, embedder=None, busy_timeout=0.5) as store:
            began = time.monotonic()
            with pytest.raises(embedmind.StoreBusyError) as info:
                store.remember("must not be written", id="blocked")
            waited = time.monotonic() - began
            assert 0.45 <= waited <= 2.0, waited
            assert info.value.waited >= 0.45
            assert isinstance(info.value, embedmind.StorageError | TimeoutError)
            # Readers are not blocked by a held writer lock.
            began = time.monotonic()
            assert store.get("blocked") is None
            assert time.monotonic() - began < 0.4
            release.touch()
            assert "RELEASED" in _finish(holder, out, err, timeout=20)
            assert store.get("blocked") is None
            assert store.stats().live == 0
            # Once the lock is free the same store writes normally.
            store.remember("written after release", id="after")
            assert store.get("after") is not None
    finally:
        release.touch()
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with embedmind.Store.open(path, embedder=None) as store:
        assert [m.id for m in store.iter(include_forgotten=True)] == ["after"]


def _fork(body: Callable[[], None], log: Path) -> int:
    """Run ``body`` in a forked child that never returns into pytest; return its pid.

    The child exits 0 when ``body`` returns, 3 on an embedmind error (a clear
    refusal) and 4 on anything else, writing the traceback to ``log``.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid != 0:
        return pid
    code = 90
    try:
        body()
        code = 0
    except embedmind.EmbedmindError:
        log.write_text(traceback.format_exc())
        code = 3
    except BaseException:
        log.write_text(traceback.format_exc())
        code = 4
    finally:
        os._exit(code)


def _reap(pid: int, log: Path) -> tuple[int, str]:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), log.read_text() if log.exists() else ""


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


@pytest.mark.timeout(60)
@needs_fork
def test_forked_child_is_refused_and_the_parent_is_unaffected(tmp_path: Path) -> None:
    # SQLite keeps per-file lock state per process and a forked child inherits
    # the parent's copy: a child using the store (even through a brand-new
    # connection) could lose acknowledged commits once the parent closes. The
    # engine refuses with a clear error instead.
    path, log = tmp_path / "fork.mind", tmp_path / "child.log"
    store = embedmind.Store.open(path, embedder=None)
    try:
        store.remember("parent wrote this before the fork parentmark", id="p1")

        def child() -> None:
            for attempt in (
                lambda: store.get("p1"),
                lambda: store.remember("child write", id="c1"),
                lambda: embedmind.Store.open(path, embedder=None),
                lambda: embedmind.Store.open(os.path.relpath(path), embedder=None),
            ):
                with pytest.raises(embedmind.StorageError, match=r"fork\(\)"):
                    attempt()
            store.close()  # closing in the child must not touch the parent's files

        pid = _fork(child, log)
        for i in range(40):
            store.remember(f"parent burst {i}", id=f"p-{i}")
        code, trace = _reap(pid, log)
        assert code == 0, f"child exited {code}:\n{trace}"
        assert store.get("c1") is None
        store.remember("parent again after the fork", id="p2")
        assert store.stats().live == 42
    finally:
        store.close()
    with embedmind.Store.open(path, embedder=None) as fresh:
        assert len(list(fresh.iter())) == 42


@pytest.mark.timeout(60)
@needs_fork
def test_child_forked_before_open_works(tmp_path: Path) -> None:
    path, log = tmp_path / "fork.mind", tmp_path / "child.log"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember("opened and closed before the fork", id="p0")

    def child() -> None:
        with embedmind.Store.open(path, embedder=None) as own:
            own.remember("the child wrote this forkchild", id="c1")

    code, trace = _reap(_fork(child, log), log)
    assert code == 0, f"child exited {code}:\n{trace}"
    with embedmind.Store.open(path, embedder=None) as fresh:
        assert sorted(m.id for m in fresh.iter()) == ["c1", "p0"]
