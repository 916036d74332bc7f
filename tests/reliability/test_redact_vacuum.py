"""Redaction leaves no byte of the old content anywhere; vacuum shrinks and keeps results."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

SECRET = "hunter2-Zq9xSECRETtokenPLEASE-remove"
# Enough that the vacuum rewrites over a thousand pages while the reader reads and that
# the freed half shows in the file's size; more only costs time (each forget commits).
STORED = 6_000
READER = """
import sys, time, embedmind
from embedmind.embedders.hashing import HashingEmbedder
store = embedmind.Store.open(sys.argv[1], embedder=HashingEmbedder(32))
deadline = time.time() + float(sys.argv[2])
print("READY", flush=True)
n = 0
while time.time() < deadline:
    store.recall("weather report", k=5)
    store.get("keep-0")
    n += 1
    time.sleep(0.01)
store.close()
print("DONE", n, flush=True)
"""


def _reader(path: Path, seconds: float) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    return child


def _store_bytes(path: Path) -> int:
    wal = Path(str(path) + "-wal")
    return os.path.getsize(path) + (os.path.getsize(wal) if wal.exists() else 0)


def _finish(child: subprocess.Popen[str]) -> None:
    child.wait(timeout=60)
    assert child.stdout is not None
    child.stdout.close()
    assert child.returncode == 0


def _occurrences(directory: Path, needle: bytes) -> dict[str, int]:
    found = {}
    for path in directory.iterdir():
        if path.is_file():
            count = path.read_bytes().count(needle)
            if count:
                found[path.name] = count
    return found


@pytest.mark.timeout(120)
def test_redaction_leaves_no_trace_in_any_file(tmp_path: Path, figures: Figures) -> None:
    path = tmp_path / "r.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"weather report number {i}" for i in range(300)], batch_size=100)
        for i in range(5):
            store.remember(f"keep this memory {i}", id=f"keep-{i}")
        leaked = store.remember(f"the admin password is {SECRET} do not share", id="leak")
        store.remember("another weather report", id="after")
    reader = _reader(path, 3.0)
    try:
        with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
            assert _occurrences(tmp_path, SECRET.encode())  # it is there before
            fixed = store.redact(leaked.id, "the admin password was removed")
            assert fixed.content == "the admin password was removed"
            assert store.recall("hunter2 Zq9xSECRETtokenPLEASE", mode="text").ids == []
            assert store.recall("admin password removed", k=1, mode="text").ids == ["leak"]
            assert store.get("keep-3").content == "keep this memory 3"
    finally:
        _finish(reader)
    code = (
        "import sys, pathlib\n"
        "needle = sys.argv[2].encode()\n"
        "hits = {p.name: p.read_bytes().count(needle) for p in pathlib.Path(sys.argv[1]).iterdir() if p.is_file()}\n"
        "print(sum(hits.values()), hits)\n"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), SECRET],
        capture_output=True,
        text=True,
        check=True,
    )
    figures(files_scanned=len(list(tmp_path.iterdir())), occurrences=fresh.stdout.split()[0])
    assert fresh.stdout.split()[0] == "0", fresh.stdout
    for fragment in (SECRET[:12], SECRET[-12:], "zq9xsecrettokenplease"):
        assert _occurrences(tmp_path, fragment.encode()) == {}, fragment


@pytest.mark.timeout(300)
def test_vacuum_shrinks_the_file_and_keeps_results(tmp_path: Path, figures: Figures) -> None:
    path = tmp_path / "v.mind"
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
    queries = ["alpha bravo", "charlie delta echo", "golf hotel", "kilo lima alpha"]
    with embedmind.Store.open(path, embedder=HashingEmbedder(32), synchronous="NORMAL") as store:
        memories = store.remember_many(
            [
                " ".join(words[(i * j + 3) % len(words)] for j in range(1, 6))
                + f" item{i} "
                + "padding " * 20
                for i in range(STORED)
            ],
            batch_size=2_000,
        )
        for memory in memories[::2]:  # RELIABILITY.md R12: half of them forgotten
            store.forget(memory.id)
        before = {q: store.recall(q, k=10, mode="text").ids for q in queries}
        before_vector = {
            q: [h.score for h in store.recall(q, k=10, mode="vector")] for q in queries
        }
    size_before = _store_bytes(path)
    reader = _reader(path, 4.0)
    try:
        with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
            started = time.perf_counter()
            report = store.vacuum()
            elapsed = time.perf_counter() - started
            assert report.removed == STORED // 2
            assert report.wal_truncated  # the reader process reads between short transactions
            assert store.stats().forgotten == 0
            assert store.stats().live == STORED // 2
            kept_ids = {m.id for m in store.iter()}
            after = {q: store.recall(q, k=10, mode="text").ids for q in queries}
            after_vector = {
                q: [h.score for h in store.recall(q, k=10, mode="vector")] for q in queries
            }
    finally:
        _finish(reader)
    assert after == before
    for q in queries:  # many memories tie: compare the cosines, not which twin came back
        assert after_vector[q] == pytest.approx(before_vector[q], abs=2e-3)
    size_after = _store_bytes(path)
    shrink = 1 - size_after / size_before
    figures(
        bytes_before=size_before, bytes_after=size_after, smaller=f"{shrink:.0%}",
        seconds=round(elapsed, 1), reader_open=True,
    )  # fmt: skip
    assert shrink >= 0.3
    assert kept_ids == {m.id for m in memories[1::2]}  # ids unchanged
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        assert store.get(memories[-1].id) is not None
        assert store.get(memories[0].id) is None
