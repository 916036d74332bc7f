"""A store left open is closed when its process exits, so the next open has nothing to replay."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

# Remembers 600 memories (vectors embedded) and recalls once, so the index
# holds them in memory and the file holds none; then `how` ends the process.
CHILD = """
import atexit, os, sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
path, how = sys.argv[1], sys.argv[2]
store = embedmind.Store.open(path, embedder=HashingEmbedder(16))
store.remember_many([f"memory number {i}" for i in range(600)])
store.recall("memory number 7", k=3)
if how == "fork":  # a forked child exits; the parent reports what is unsaved after
    child = os.fork()
    if child == 0:
        # A normal exit's Python part (the atexit hooks), then the end without
        # C++ destructors: onnxruntime's hang in a forked child that exits.
        atexit._run_exitfuncs()
        os._exit(0)
    os.waitpid(child, 0)
    with store._db.read() as conn:
        print(store._vectors.unsaved(conn))
    os._exit(0)
if how == "kill":
    os._exit(0)
"""


def _unsaved(path: Path) -> int:
    with embedmind.Store.open(path, embedder=HashingEmbedder(16)) as store:
        assert store._vectors is not None and store._db is not None
        with store._db.read() as conn:
            return int(store._vectors.unsaved(conn))


def _child(path: Path, how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(path), how], capture_output=True, text=True, check=True
    )


def test_a_store_left_open_is_saved_when_its_process_exits(tmp_path: Path) -> None:
    _child(tmp_path / "s.mind", "exit")
    assert _unsaved(tmp_path / "s.mind") == 0


def test_a_process_that_does_not_exit_normally_saves_nothing(tmp_path: Path) -> None:
    # The oracle for the test above: the same child, ended by os._exit, leaves
    # its 600 vectors to the log.
    _child(tmp_path / "s.mind", "kill")
    assert _unsaved(tmp_path / "s.mind") == 600


def test_a_forked_child_leaves_its_parents_store_alone(tmp_path: Path) -> None:
    # The child's exit must not try to close the parent's store: its
    # connections are the parent's (the store refuses them in a child, and the
    # refusal at exit would be a warning on every forked worker's stderr).
    done = _child(tmp_path / "s.mind", "fork")
    assert done.stderr == ""
    assert done.stdout.strip() == "600"
    assert _unsaved(tmp_path / "s.mind") == 600
