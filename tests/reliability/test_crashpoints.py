"""R2: named crash points inside commit, index save, vacuum, redaction and migration.

Each run kills a child at the n-th hit of one point (SIGKILL, like a power
cut) and checks, in this process, that the operation fully happened or not
at all — and that the store opens and answers correctly afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import embedmind
from embedmind.backend.sqlite import migrations
from embedmind.embedders.hashing import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]
SECRET = "crash-secret-Xq7-token"

CHILD = """
import sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
path, scenario = sys.argv[1], sys.argv[2]
if scenario == "batches":
    with embedmind.Store.open(path, embedder=None) as s:
        for b in range(3):
            s.remember_many([embedmind.Draft(f"batch {b} item {i}", id=f"b{b}-{i}") for i in range(5)])
elif scenario == "save":  # three index saves, one per close
    for r in range(3):
        s = embedmind.Store.open(path, embedder=HashingEmbedder(32))
        s.remember_many([f"memory about topic {i % 7} number {r}-{i}" for i in range(70)])
        s.close()
elif scenario == "vacuum":
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as s:
        for r in range(3):
            s.forget(f"drop-{r}")
            s.vacuum()
elif scenario == "redact":
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as s:
        for r in range(3):
            s.redact(f"leak-{r}", "the password was removed")
elif scenario == "create":
    embedmind.Store.open(path, embedder=None).close()
print("FINISHED")
"""


def _child(path: Path, scenario: str, point: str, hit: int) -> int:
    env = {**os.environ, "EMBEDMIND_CRASHPOINT": f"{point}:{hit}", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), scenario],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, -signal.SIGKILL), result.stderr[-2000:]
    return result.returncode


@pytest.mark.timeout(120)
@pytest.mark.parametrize("point", ["before-commit", "after-commit"])
@pytest.mark.parametrize("hit", [1, 2, 3])
def test_commit_is_all_or_nothing(tmp_path: Path, point: str, hit: int) -> None:
    path = tmp_path / "c.mind"
    embedmind.Store.open(path, embedder=None).close()
    assert _child(path, "batches", point, hit) == -signal.SIGKILL
    with embedmind.Store.open(path, embedder=None) as store:
        ids = {m.id for m in store.iter()}
        committed = hit - 1 if point == "before-commit" else hit
        assert ids == {f"b{b}-{i}" for b in range(committed) for i in range(5)}
        assert len(store.recall("batch item", mode="text", k=100)) == len(ids)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("point", ["index-save-before-rename", "index-save-after-rename"])
@pytest.mark.parametrize("hit", [1, 2, 3])
def test_index_save_crash_never_leaves_a_trusted_wrong_index(
    tmp_path: Path, point: str, hit: int
) -> None:
    path = tmp_path / "s.mind"
    assert _child(path, "save", point, hit) == -signal.SIGKILL
    embedder = HashingEmbedder(32)
    with embedmind.Store.open(path, embedder=embedder) as store:
        memories = list(store.iter())
        assert len(memories) == 70 * hit  # each cycle's batch committed before its save
        query = embedder.embed_query("topic 3")
        best = max(float(embedder.embed_query(m.content) @ query) for m in memories)
        top = store.recall("topic 3", k=1, mode="vector")[0]
        assert top.channels["vector"].raw == pytest.approx(best, abs=2e-3)  # the cosine


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hit", [1, 2, 3])
def test_vacuum_crash_leaves_a_valid_store(tmp_path: Path, hit: int) -> None:
    path = tmp_path / "v.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        kept = store.remember_many([f"keep {i}" for i in range(20)])
        store.remember_many([embedmind.Draft(f"drop {r}", id=f"drop-{r}") for r in range(3)])
        for m in store.remember_many([f"drop {i}" for i in range(20)]):
            store.forget(m.id)
    assert _child(path, "vacuum", "vacuum", hit) == -signal.SIGKILL
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        # The forget before the killed vacuum committed; the later ones never ran.
        undropped = {f"drop-{r}" for r in range(hit, 3)}
        assert {m.id for m in store.iter()} == {m.id for m in kept} | undropped
        assert store.stats().live == 20 + len(undropped)
        store.vacuum()  # and it completes when run again
        assert store.stats().forgotten == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("point", ["redact", "redact-before-checkpoint"])
@pytest.mark.parametrize("hit", [1, 2, 3])
def test_redaction_reruns_to_completion(tmp_path: Path, point: str, hit: int) -> None:
    path = tmp_path / "r.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"filler {i}" for i in range(50)])
        for r in range(3):
            store.remember(f"the password is {SECRET}-{r}", id=f"leak-{r}")
    assert _child(path, "redact", point, hit) == -signal.SIGKILL
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        for r in range(3):
            content = store.get(f"leak-{r}").content
            if r < hit - 1:  # acknowledged before the kill
                assert content == "the password was removed"
            elif r == hit - 1:  # the one killed: whole or nothing
                assert content in (f"the password is {SECRET}-{r}", "the password was removed")
            else:
                assert content == f"the password is {SECRET}-{r}"
            store.redact(f"leak-{r}", "the password was removed")
    leftovers = sum(
        p.read_bytes().count(SECRET.encode()) for p in tmp_path.iterdir() if p.is_file()
    )
    assert leftovers == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hit", [1, 2, 3])
def test_a_migration_crash_is_rolled_back(tmp_path: Path, hit: int) -> None:
    path = tmp_path / "m.mind"
    assert _child(path, "create", "migration", hit) == -signal.SIGKILL
    with embedmind.Store.open(path, embedder=None) as store:
        assert store.schema_version == migrations.LATEST
        store.remember("works after the crash")
        assert store.stats().live == 1
