"""R8: one writer process and N reader processes on one store file.

The writer (``tests/tooling/reader_workers.py writer``) commits 3-memory
batches and rewrites of earlier batches, acknowledging each after its call
returns; each reader checks on every call that it sees whole transactions
(through ``get_many``, text recall, vector recall and ``iter``) and that every
acknowledged write is visible to it, the vector path included. Meanwhile this
process samples the WAL file. Pass: 0 reader errors, WAL ≤ 64 MB, the
writer's longest commit (where SQLite's automatic checkpoints run) ≤ 500 ms.

Sizes: ``EMBEDMIND_READERS`` (2) and ``EMBEDMIND_READERS_SECONDS`` (10); the
soak runs 4 readers for 600 s. ``EMBEDMIND_LOAD_FACTOR`` scales the latency
bound on a shared machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tooling.children import spawn

import embedmind
from embedmind.backend.sqlite import database
from embedmind.embedders.hashing import HashingEmbedder

# Serial pass of `make test` (not beside other tests): a commit-stall budget in milliseconds, reader processes.
pytestmark = pytest.mark.serial

if TYPE_CHECKING:
    from conftest import Figures

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tests" / "tooling" / "reader_workers.py"
READERS = int(os.environ.get("EMBEDMIND_READERS", "2"))
SECONDS = float(os.environ.get("EMBEDMIND_READERS_SECONDS", "10"))
WAL_LIMIT = 64 * 1024 * 1024
STALL_BUDGET_MS = 500.0
# The budget is RELIABILITY.md's figure; CI shares two cores with other jobs,
# where one descheduled fsync can take a few hundred ms, so the assertion
# allows this factor (the figure printed is the measured time, unscaled).
LOAD_FACTOR = float(os.environ.get("EMBEDMIND_LOAD_FACTOR", "2.0"))
STARTUP_S = 4.0
"""Every child has imported embedmind and opened the store by then (2 shared cores)."""


def _finish(
    proc: subprocess.Popen[bytes], out: Path, err: Path, timeout: float
) -> dict[str, object]:
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"{out.stem} exited {proc.returncode}:\n{err.read_text()}"
    assert err.read_text() == "", err.read_text()
    summary: dict[str, Any] = json.loads(out.read_text())
    return summary


class WalSampler(threading.Thread):
    """Samples the size of the store's WAL file until stopped; keeps the high-water mark."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.wal = Path(str(path) + "-wal")
        self.high = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            with suppress(FileNotFoundError):
                self.high = max(self.high, self.wal.stat().st_size)
            self.samples += 1


@pytest.mark.timeout(int(SECONDS) + 180)
def test_one_writer_many_readers(tmp_path: Path, figures: Figures) -> None:
    path, acks = tmp_path / "shared.mind", tmp_path / "writer.acks"
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)):
        pass  # created and migrated once, so the children only open it
    start = time.time() + STARTUP_S
    writer = spawn(TOOL, tmp_path, "writer", "writer", path, start, SECONDS, acks)
    readers = [
        spawn(TOOL, tmp_path, f"reader{n}", "reader", path, start, SECONDS, acks, n)
        for n in range(READERS)
    ]
    sampler = WalSampler(path)
    sampler.start()
    try:
        wrote = _finish(*writer, timeout=SECONDS + 120)
        read = [_finish(*r, timeout=SECONDS + 120) for r in readers]
    finally:
        sampler.stop.set()
        sampler.join()
        for proc, _, _ in [writer, *readers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    errors = sum(r["errors"] for r in read)
    wal_high = max(sampler.high, wrote["wal_max_bytes"])
    figures(
        readers=READERS, seconds=SECONDS, acknowledged_writes=wrote["commits"],
        updates=wrote["updates"], reads=sum(r["reads"] for r in read),
        acked_checked=sum(r["acked_checked"] for r in read),
        vector_checked=sum(r["vector_checked"] for r in read),
        in_flight_seen=sum(r["in_flight_seen"] for r in read), scans=sum(r["scans"] for r in read),
        reader_errors=errors, wal_high_mb=round(wal_high / 2**20, 1),
        checkpoints_truncated=wrote["wal_resets"], checkpoint_stall_ms=wrote["commit_max_ms"],
        writer_commit_p99_ms=wrote["commit_p99_ms"],
        writer_commit_median_ms=wrote["commit_median_ms"],
        reader_call_max_ms=max(r["worst_call_ms"] for r in read),
        reader_scan_max_ms=max(r["worst_scan_ms"] for r in read),
        index_saves=wrote["index_saves"], index_save_max_ms=wrote["index_save_max_ms"],
    )  # fmt: skip
    assert errors == 0, [q for r in read for q in r["quoted"]]
    assert wrote["commits"] >= 50, f"too few commits to prove anything: {wrote}"
    for r in read:
        assert r["vector_checked"] >= 5 and r["scans"] >= 1, r
    assert wal_high <= WAL_LIMIT, f"WAL reached {wal_high / 2**20:.1f} MB"
    # Index saves (every 20,000 vector changes, inside a write) are timed apart.
    stall = wrote["commit_max_ms"]
    assert stall <= STALL_BUDGET_MS * LOAD_FACTOR, f"a commit stalled {stall} ms"

    # Afterwards, in this process: every acknowledged write is there, whole, once.
    acked: dict[int, int] = {}
    for line in acks.read_text().splitlines():
        _, seq, version = line.split(",")
        acked[int(seq)] = int(version)
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        memories = list(store.iter())
        ids = [m.id for m in memories]
        assert len(ids) == len(set(ids)) == 3 * len(acked)
        for m in memories:
            assert m.metadata["version"] == acked[m.metadata["seq"]], m.id


@pytest.mark.timeout(120)
def test_a_reader_holding_a_snapshot_postpones_the_wal_reset(
    tmp_path: Path, figures: Figures, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint decision, deterministically: a long reader costs writers short waits.

    A reader keeps one read transaction open while a writer fills the WAL past
    the reset size. Each reset attempt waits at most ``WAL_RESET_WAIT_MS`` and
    gives up; attempts come once per ``WAL_RETRY_BYTES`` of growth, never once
    per commit; the reader keeps its snapshot throughout. Once it lets go, the
    WAL stops growing (reset by the engine or rewound by SQLite).
    """
    attempts: list[tuple[int, float]] = []
    real_fetch_one = database.fetch_one

    def counted(conn: object, sql: str, params: object = ()) -> tuple[object, ...]:
        began = time.monotonic()
        row = real_fetch_one(conn, sql, params)  # type: ignore[arg-type]
        if "wal_checkpoint" in sql:
            attempts.append((int(row[0]), time.monotonic() - began))  # (busy, seconds)
        return row

    monkeypatch.setattr(database, "fetch_one", counted)
    path = tmp_path / "held.mind"
    wal = tmp_path / "held.mind-wal"
    writer = embedmind.Store.open(path, embedder=None, synchronous="NORMAL")
    reader = embedmind.Store.open(path, embedder=None)
    commits = 0

    def write_mb(megabytes: float) -> None:
        nonlocal commits
        for _ in range(int(megabytes * 4)):  # ~256 KB of metadata per commit
            writer.remember(f"memory {commits}", metadata={"blob": f"x{commits}" * 40_000})
            commits += 1

    try:
        writer.remember("first", id="first")
        with reader._db.read() as conn:  # one snapshot held across the writes below
            count = "SELECT count(*) FROM memories"
            assert conn.execute(count).fetchone()[0] == 1
            while wal.stat().st_size < database.WAL_RESET_BYTES + 3 * database.WAL_RETRY_BYTES:
                write_mb(1)
            held_wal = wal.stat().st_size
            held_attempts = list(attempts)
            assert conn.execute(count).fetchone()[0] == 1, "the reader kept its snapshot"
        write_mb(12)  # as much again after the reader let go
        after_wal = wal.stat().st_size
    finally:
        reader.close()
        writer.close()
    stall = max(seconds for _, seconds in attempts)
    figures(
        commits=commits, held_wal_mb=round(held_wal / 2**20, 1),
        attempts_while_held=len(held_attempts), attempts=len(attempts),
        wal_after_release_mb=round(after_wal / 2**20, 1), checkpoint_stall_ms=round(1000 * stall, 1),
    )  # fmt: skip
    grown = held_wal - database.WAL_RESET_BYTES
    assert 1 <= len(held_attempts) <= 2 + grown // database.WAL_RETRY_BYTES, held_attempts
    assert all(busy for busy, _ in held_attempts), "a reset cannot finish under a held snapshot"
    assert stall <= STALL_BUDGET_MS * LOAD_FACTOR / 1000
    assert after_wal <= held_wal + database.WAL_RETRY_BYTES, "the WAL kept growing"
