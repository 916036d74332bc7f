"""The HNSW index file is a cache: no damage to it may crash a process or change results.

Every open of a damaged store runs in a child process, so a crash in the
native loader would show as a signal, not kill the test run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

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


def _build(path: Path, offset: int = 0) -> None:
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
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


@pytest.mark.timeout(300)
def test_stale_and_future_files_are_not_trusted(tmp_path: Path) -> None:
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
