"""The HNSW index file is a cache: no damage to it may crash a process or change results (R5).

Every open of a damaged store runs in a child process, so a crash in the
native loader would show as a signal, not kill the test run. Named damages
cover the matrix of RELIABILITY.md; a seeded random matrix adds
``EMBEDMIND_CORRUPTION_CASES`` more (40 in CI, 2,000 in the soak).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

import embedmind
from embedmind.backend.sqlite import hnsw
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

QUERIES = ["apple orchard", "river boat", "mountain snow", "city lights"]
WORDS = "apple orchard river boat mountain snow city lights forest desert ocean valley".split()
CHILD = """
import json, sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
with embedmind.Store.open(sys.argv[1], embedder=HashingEmbedder(32)) as store:
    out = {q: store.recall(q, k=5, mode="vector").ids for q in json.loads(sys.argv[2])}
print(json.dumps(out))
"""


def _build(path: Path, offset: int = 0, dims: int = 32) -> None:
    with embedmind.Store.open(path, embedder=HashingEmbedder(dims)) as store:
        store.remember_many(
            [
                embedmind.Draft(
                    # A unique token per memory keeps every vector distinct: no ties.
                    " ".join(WORDS[(i * 7 + j + offset) % len(WORDS)] for j in range(3))
                    + f" token{i + offset}",
                    id=f"m{i + offset}",
                )
                for i in range(300)
            ],
            batch_size=100,
        )


def _recall_in_child(path: Path) -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"child died ({result.returncode}):\n{result.stderr[-2000:]}"
    return dict(json.loads(result.stdout))


def _exact_scores(path: Path) -> tuple[dict[str, list[float]], dict[str, dict[str, float]]]:
    """Brute-force top-5 cosines per query, and every memory's cosine per query."""
    embedder = HashingEmbedder(32)
    with embedmind.Store.open(path, embedder=None) as store:
        memories = list(store.iter())
    matrix = embedder.embed_documents([m.content for m in memories])
    everything = {}
    top = {}
    for query in QUERIES:
        sims = matrix @ embedder.embed_query(query)
        everything[query] = {m.id: float(s) for m, s in zip(memories, sims, strict=True)}
        top[query] = sorted(sims.tolist(), reverse=True)[:5]
    return top, everything


def _assert_exact(got: dict[str, list[str]], path: Path) -> None:
    # Equal-scoring memories may come back in either order (and f16 storage
    # blurs near-ties), so compare the scores of what came back with the
    # brute-force top scores.
    top, everything = _exact_scores(path)
    for query in QUERIES:
        scores = [everything[query][memory_id] for memory_id in got[query]]
        assert scores == pytest.approx(top[query], abs=2e-3), query


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]], Path]:
    root = tmp_path_factory.mktemp("pristine")
    _build(root / "s.mind")
    other = tmp_path_factory.mktemp("other")
    _build(other / "s.mind", offset=5)
    _build(other / "narrow.mind", dims=16)
    expected = _recall_in_child(root / "s.mind")
    _assert_exact(expected, root / "s.mind")
    return root, expected, other / "s.mind-vectors"


def _flip(path: Path, at: float) -> None:
    data = bytearray(path.read_bytes())
    position = int(len(data) * at)
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path, fraction: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])


def _foreign_metric(path: Path, other: Path) -> None:
    """An index file usearch wrote itself: same dimensions, another metric."""
    index = hnsw._usearch_index()(ndim=32, metric="l2sq", dtype="f32")
    index.add(np.arange(50), np.random.default_rng(1).random((50, 32), dtype=np.float32))
    path.unlink()
    index.save(str(path))


def _unreadable(path: Path, other: Path) -> None:
    # Root reads through mode 000, so there the case still checks that nothing breaks.
    path.chmod(0)


CORRUPTIONS: dict[str, Callable[[Path, Path], None]] = {
    "missing": lambda f, other: f.unlink(),
    "empty": lambda f, other: _truncate(f, 0.0),
    "truncated-half": lambda f, other: _truncate(f, 0.5),
    "truncated-header": lambda f, other: _truncate(f, 0.01),
    "bit-flip-header": lambda f, other: _flip(f, 0.001),
    "bit-flip-middle": lambda f, other: _flip(f, 0.5),
    "bit-flip-end": lambda f, other: _flip(f, 0.999),
    "another-stores-file": lambda f, other: shutil.copyfile(other, f),
    "garbage": lambda f, other: f.write_bytes(os.urandom(4096)),
    "directory": lambda f, other: (f.unlink(), f.mkdir()),  # type: ignore[func-returns-value]
    "symlink": lambda f, other: (f.unlink(), f.symlink_to(other)),  # type: ignore[func-returns-value]
    "wrong-dims": lambda f, other: shutil.copyfile(other.parent / "narrow.mind-vectors", f),
    "wrong-metric": _foreign_metric,
    "unreadable": _unreadable,
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_damaged_index_file_is_rebuilt_and_results_are_correct(
    tmp_path: Path, pristine: tuple[Path, dict[str, list[str]], Path], damage: str
) -> None:
    root, expected, other = pristine
    store_dir = tmp_path / "copy"
    shutil.copytree(root, store_dir, symlinks=True)
    index_file = store_dir / "s.mind-vectors"
    assert index_file.is_file()
    CORRUPTIONS[damage](index_file, other)
    _assert_exact(_recall_in_child(store_dir / "s.mind"), store_dir / "s.mind")
    _assert_exact(_recall_in_child(store_dir / "s.mind"), store_dir / "s.mind")  # after the rebuild


RANDOM_CASES = int(os.environ.get("EMBEDMIND_CORRUPTION_CASES", "40"))
RANDOM_SEED = int(os.environ.get("EMBEDMIND_CORRUPTION_SEED", "5150"))
MATRIX_CHILD = """
import json, sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
for line in sys.stdin:
    case, path = line.split(maxsplit=1)
    print("CASE", case, flush=True)  # so a death names its case
    with embedmind.Store.open(path.strip(), embedder=HashingEmbedder(32)) as store:
        out = {q: store.recall(q, k=5, mode="vector").ids for q in json.loads(sys.argv[1])}
    print("RESULT", json.dumps(out), flush=True)
"""


def _random_damage(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """One seeded damage: truncation, flipped bytes, an overwritten range, a spliced foreign
    file, or appended garbage."""
    kind = rng.randrange(5)
    if kind == 0:
        return data[: rng.randrange(len(data))]
    damaged = bytearray(data)
    if kind == 1:
        for _ in range(rng.randint(1, 16)):
            damaged[rng.randrange(len(damaged))] ^= rng.randint(1, 255)
    elif kind == 2:
        start = rng.randrange(len(damaged))
        length = rng.randint(1, 4096)
        damaged[start : start + length] = rng.randbytes(min(length, len(damaged) - start))
    elif kind == 3:
        cut = rng.randrange(min(len(data), len(other)))
        damaged = bytearray(other[:cut] + data[cut:])
    else:
        damaged += rng.randbytes(rng.randint(1, 4096))
    return bytes(damaged)


@pytest.mark.timeout(max(300, RANDOM_CASES))
def test_random_corruption_matrix(
    tmp_path: Path, pristine: tuple[Path, dict[str, list[str]], Path], figures: Figures
) -> None:
    root, _, other = pristine
    rng = random.Random(RANDOM_SEED)
    data, foreign = (root / "s.mind-vectors").read_bytes(), other.read_bytes()
    top, everything = _exact_scores(root / "s.mind")
    crashed = wrong = changed = 0
    for start in range(0, RANDOM_CASES, 50):  # one child per 50 cases; each case its own copy
        cases = range(start, min(start + 50, RANDOM_CASES))
        lines = []
        for case in cases:
            store_dir = tmp_path / f"c{case}"
            shutil.copytree(root, store_dir)
            damaged = _random_damage(data, foreign, rng)
            changed += damaged != data
            (store_dir / "s.mind-vectors").write_bytes(damaged)
            lines.append(f"{case} {store_dir / 's.mind'}\n")
        result = subprocess.run(
            [sys.executable, "-c", MATRIX_CHILD, json.dumps(QUERIES)],
            input="".join(lines), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        started = [
            line.split()[1] for line in result.stdout.splitlines() if line.startswith("CASE")
        ]
        if result.returncode != 0:
            crashed += 1
            pytest.fail(
                f"child died ({result.returncode}) at case {started[-1:]} "
                f"(seed {RANDOM_SEED}):\n{result.stderr[-2000:]}"
            )
        results = [
            json.loads(line[7:]) for line in result.stdout.splitlines() if line[:6] == "RESULT"
        ]
        assert len(results) == len(cases)
        for got in results:
            for query in QUERIES:
                scores = [everything[query][memory_id] for memory_id in got[query]]
                wrong += scores != pytest.approx(top[query], abs=2e-3)
        for case in cases:
            shutil.rmtree(tmp_path / f"c{case}")
    figures(
        cases=RANDOM_CASES, damaged=changed, crashed=crashed, wrong_results=wrong, seed=RANDOM_SEED
    )
    assert wrong == 0


@pytest.mark.timeout(300)
def test_a_future_index_file_is_not_trusted(tmp_path: Path) -> None:
    """An index file newer than the database (the database restored from an older copy)."""
    path = tmp_path / "s.mind"
    _build(path)
    old_db = path.read_bytes()
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember("zebra zebra zebra", id="zebra")
        store.forget("m0")
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(old_db)  # the index file now knows of writes the database never saw
    _assert_exact(_recall_in_child(path), path)
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        assert "zebra" not in store.recall("zebra", k=3, mode="vector").ids
        assert store.get("m0") is not None


@pytest.mark.timeout(300)
def test_stale_files_are_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "s.mind"
    _build(path)
    old_file = (tmp_path / "s.mind-vectors").read_bytes()
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember("zebra zebra zebra", id="zebra")
    (tmp_path / "s.mind-vectors").write_bytes(old_file)  # stale: older than the registry says
    _assert_exact(_recall_in_child(path), path)
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        assert store.recall("zebra", k=1, mode="vector").ids == ["zebra"]


@pytest.mark.timeout(120)
def test_a_write_in_another_process_is_found_on_the_next_call(tmp_path: Path) -> None:
    path = tmp_path / "s.mind"
    _build(path)
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        assert "from-child" not in store.recall("unicorn sparkle", k=3, mode="vector").ids
        code = (
            "import sys, embedmind\n"
            "from embedmind.embedders.hashing import HashingEmbedder\n"
            "with embedmind.Store.open(sys.argv[1], embedder=HashingEmbedder(32)) as s:\n"
            "    s.remember('unicorn sparkle unicorn', id='from-child')\n"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120)
        assert store.recall("unicorn sparkle", k=1, mode="vector").ids == ["from-child"]
        assert store.recall("unicorn sparkle", k=1).ids == ["from-child"]
