"""A FIFO or a directory where an index file should be is refused without being opened.

Opening a FIFO for reading waits for a writer, so every vector recall blocked
forever. Each recall runs in a child process with a timeout, so a regression
fails the test instead of hanging the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tooling.children import child_env

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

CHILD = """
import sys, embedmind
from embedmind.embedders.hashing import HashingEmbedder
with embedmind.Store.open(sys.argv[1], embedder=HashingEmbedder(32)) as store:
    print(store.recall("alice drinks green tea", k=1, mode="vector").ids[0])
    print(store.fragments.query("drinks green tea", k=1)[0].record_id)
"""


def _make(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


@pytest.mark.parametrize("suffix", ["-vectors", "-fragments"])
@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_non_regular_index_file_is_rebuilt_not_opened(
    tmp_path: Path, suffix: str, kind: str
) -> None:
    path = tmp_path / "m.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"filler memory {i}" for i in range(50)])
        store.remember("alice drinks green tea", id="tea")
        store.fragments.put("tea", [((0, 5), "alice"), ((6, 22), "drinks green tea")])
    index_file = Path(f"{path}{suffix}")
    assert index_file.is_file()  # registered at close: the next open would trust it
    index_file.unlink()
    _make(kind, index_file)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=child_env(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a recall blocked on the {kind} at {index_file.name}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tea", "tea"]
    if kind == "fifo":  # replaced by the save at close: the next open trusts a real file
        assert index_file.is_file()
    else:  # never deleted (it may be someone's): still there, the store still works
        assert index_file.is_dir()
