"""Redaction and vacuum wait a bounded time for readers, and never hold off other writers.

A reader in another process holding a snapshot (a streaming export does) keeps
the WAL from being truncated. Redaction used to wait for it under the writer
lock, 50 times the busy timeout (506 s measured), every other writer getting
StoreBusyError meanwhile. Now the whole wait is bounded by
``checkpoint_timeout``, the lock is let go between attempts, and the call says
what is left undone.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tooling.children import child_env

import embedmind
from embedmind import RedactionIncompleteError
from embedmind.embedders.hashing import HashingEmbedder

# Serial pass of `make test` (not beside other tests): a redaction's checkpoint wait is timed against a bound.
pytestmark = pytest.mark.serial

SECRET = "swordfish-Kx81SECRETvalueTOREMOVE"
BOUND = 1.5
MARGIN = 2.0
HOLDER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)
conn.execute("BEGIN")
conn.execute("SELECT count(*), max(content) FROM memories").fetchall()
print("HOLDING", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
conn.close()
print("RELEASED", flush=True)
"""


def _holder(path: Path) -> subprocess.Popen[str]:
    """A reader process inside one read transaction until it reads a line."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "HOLDING"
    return child


def _release(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "RELEASED"
    child.wait(timeout=30)
    child.stdin.close()
    child.stdout.close()


def _occurrences(directory: Path, needle: bytes) -> int:
    return sum(p.read_bytes().count(needle) for p in directory.iterdir() if p.is_file())


@pytest.mark.timeout(120)
def test_redact_with_a_reader_holding_a_snapshot_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "r.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"weather report number {i}" for i in range(200)])
        store.remember(f"the token is {SECRET} keep it safe", id="leak")
    holder = _holder(path)
    try:
        store = embedmind.Store.open(path, embedder=HashingEmbedder(32))
        other = embedmind.Store.open(path, embedder=HashingEmbedder(32), busy_timeout=1.0)
        outcome: dict[str, object] = {}

        def redact() -> None:
            started = time.monotonic()
            try:
                store.redact("leak", "the token was removed", checkpoint_timeout=BOUND)
                outcome["result"] = "returned"
            except RedactionIncompleteError as e:
                outcome["result"] = e
            outcome["elapsed"] = time.monotonic() - started

        worker = threading.Thread(target=redact)
        worker.start()
        time.sleep(0.4)  # the redaction committed and is waiting for the reader
        written = []
        while worker.is_alive() and len(written) < 5:
            began = time.monotonic()
            other.remember(f"written during the wait {len(written)}")  # never StoreBusyError
            written.append(time.monotonic() - began)
        worker.join(timeout=BOUND + 30)
        assert outcome["elapsed"] < BOUND + MARGIN  # type: ignore[operator]
        error = outcome["result"]
        assert isinstance(error, RedactionIncompleteError), error
        assert "reader" in str(error) and "redact again" in str(error)
        assert written and max(written) < 1.0, written
        assert store.get("leak").content == "the token was removed"  # type: ignore[union-attr]
        assert _occurrences(tmp_path, SECRET.encode())  # the old bytes are still in the WAL
    finally:
        _release(holder)
    store.redact("leak", "the token was removed", checkpoint_timeout=BOUND)  # completes now
    other.close()
    store.close()
    assert _occurrences(tmp_path, SECRET.encode()) == 0
    for piece in (SECRET[:12], SECRET[-12:], SECRET.lower()):
        assert _occurrences(tmp_path, piece.encode()) == 0, piece


@pytest.mark.timeout(120)
def test_vacuum_with_a_reader_holding_a_snapshot_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "v.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        ids = store.remember_many([f"weather report number {i}" for i in range(200)])
        for remembered in ids[:50]:
            store.forget(remembered.id)
    holder = _holder(path)
    try:
        with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
            started = time.monotonic()
            report = store.vacuum(checkpoint_timeout=BOUND)
            elapsed = time.monotonic() - started
    finally:
        _release(holder)
    assert not report.wal_truncated
    assert elapsed < 2 * BOUND + MARGIN  # two checkpoints, each bounded


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), 10**400, "5", True])
def test_checkpoint_timeout_is_validated_before_anything_is_written(
    tmp_path: Path, bad: object
) -> None:
    with embedmind.Store.open(tmp_path / "b.mind", embedder=None) as store:
        store.remember("original text", id="m")
        with pytest.raises(embedmind.InvalidInputError, match="checkpoint_timeout"):
            store.redact("m", "new text", checkpoint_timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(embedmind.InvalidInputError, match="checkpoint_timeout"):
            store.vacuum(checkpoint_timeout=bad)  # type: ignore[arg-type]
        assert store.get("m").content == "original text"  # type: ignore[union-attr]
