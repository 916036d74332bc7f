"""A re-index an alias change starts survives a kill: it resumes, and recall is defined meanwhile.

The child process sets an alias over a store of ten memories that hold its
key, re-indexing three per transaction, and is killed (SIGKILL, like a power
cut) at the n-th batch's crash point, before that batch commits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_session_context import rebuilt

import embedmind
from embedmind.backend.sqlite import alias_rows

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import sys
import embedmind
import embedmind.aliases
embedmind.aliases.BATCH = 3
with embedmind.Store.open(sys.argv[1], embedder=None) as store:
    store.set_aliases({"dog": "hound"})
print("FINISHED")
"""


def _child(path: Path, hit: int) -> int:
    env = {**os.environ, "EMBEDMIND_CRASHPOINT": f"alias-reindex:{hit}", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode in (0, -signal.SIGKILL), result.stderr[-2000:]
    return result.returncode


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hit", [1, 2, 4])
def test_a_killed_reindex_resumes_and_recall_is_defined_meanwhile(tmp_path: Path, hit: int) -> None:
    path = tmp_path / "a.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        drafts = [
            embedmind.Draft(f"the dog ate item {i}", id=f"m{i}", session_id="s" if i % 2 else None)
            for i in range(10)
        ]
        store.remember_many(drafts)
        store.remember("a cat sat", id="cat")
    assert _child(path, hit) == -signal.SIGKILL
    with embedmind.Store.open(path, embedder=None) as store:
        # The table change committed before the re-index began; batches
        # before the killed one committed, the killed one did not.
        assert store.aliases() == {"dog": "hound"}
        with store._db.read() as conn:
            left = alias_rows.pending_count(conn)
        assert left == 10 - 3 * (hit - 1)
        # Meanwhile: every memory is found by its own words; the alias field
        # of a memory not yet re-indexed is not there yet.
        assert len(store.recall("dog", mode="text", k=20)) == 10
        assert len(store.recall("hound", mode="text", k=20)) == 10 - left
        assert store.recall("cat", mode="text").ids == ["cat"]
        assert store.reindex_aliases() == left  # the next call finishes it
        assert store.reindex_aliases() == 0
        assert len(store.recall("hound", mode="text", k=20)) == 10
        kept, fresh = rebuilt(store)
        assert kept == fresh


@pytest.mark.timeout(120)
def test_the_next_alias_change_also_finishes_a_pending_reindex(tmp_path: Path) -> None:
    path = tmp_path / "b.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many([f"a dog and a vet, {i}" for i in range(8)])
    assert _child(path, 2) == -signal.SIGKILL
    with embedmind.Store.open(path, embedder=None) as store:
        assert store.set_aliases({"vet": "animal doctor"}) == 8  # five left by the kill, all eight
        with store._db.read() as conn:
            assert alias_rows.pending_count(conn) == 0
        assert len(store.recall("hound doctor", mode="text", k=20)) == 8
        kept, fresh = rebuilt(store)
        assert kept == fresh
