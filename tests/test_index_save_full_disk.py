"""A derived-index save that fails (a full disk) means "not saved", never a failed call.

usearch reports a full disk as ``RuntimeError: Failed to serialize into
stream``; the engine caught only ``OSError``, so ``close()`` raised it raw,
``redact()`` raised it after its change had committed, and the temporary file
stayed on the full disk. These tests fill a real tmpfs at the moment the
index is written (so SQLite's own writes before it succeed), then check that
the call returns, no ``*.tmp`` file is left, and the data is intact after a
reopen (the index rebuilt).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind.backend.sqlite import fileio, hnsw
from embedmind.embedders.hashing import HashingEmbedder

DIMS = 256
COUNT = 1_500  # an index file of ~1 MB, far more than the space left
LEFT_FREE = 192 * 1024  # enough for SQLite's few pages after the save, not for the index


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 24 MB tmpfs mounted for this test only (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the full-disk path is untested here")
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(directory: Path, leave: int) -> Path:
    """Fill the file system of ``directory`` up, then free ``leave`` bytes."""
    filler = directory / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


@pytest.fixture
def disk_fills_at_save(monkeypatch: pytest.MonkeyPatch, tmpfs: Path) -> list[Path]:
    """Make the disk full just before the first index save writes its file."""
    real: Callable[[Any, str], None] = hnsw._save
    fillers: list[Path] = []

    def save_on_a_full_disk(index: Any, path: str) -> None:
        if not fillers:
            fillers.append(_fill(tmpfs, LEFT_FREE))
        real(index, path)

    monkeypatch.setattr(hnsw, "_save", save_on_a_full_disk)
    return fillers


def _populate(path: Path) -> list[str]:
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        ids = store.remember_many([f"memory {i} about topic {i % 37}" for i in range(COUNT)])
        store.remember("the api key is K-123 please rotate", id="secret")
        store.vacuum()  # the WAL empty and the index saved: the later steps need little room
    return [r.id for r in ids]


def _temporaries(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def _reopen_elsewhere(path: Path, elsewhere: Path) -> embedmind.Store:
    """Copy the closed store (without its index files) elsewhere and open it."""
    elsewhere.mkdir()
    for suffix in ("", "-wal"):
        if Path(f"{path}{suffix}").exists():
            shutil.copy(f"{path}{suffix}", elsewhere / f"{path.name}{suffix}")
    return embedmind.Store.open(elsewhere / path.name, embedder=HashingEmbedder(DIMS))


def _check_intact(store: embedmind.Store, ids: list[str]) -> None:
    assert store.stats().live == COUNT + 1
    assert store.get(ids[7]).content == "memory 7 about topic 7"  # type: ignore[union-attr]
    assert store.recall("memory 7 about topic 7", k=1, mode="vector").ids == [ids[7]]


def test_close_on_a_full_disk_logs_and_leaves_no_temporary_file(
    tmpfs: Path, disk_fills_at_save: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmpfs / "m.mind"
    ids = _populate(path)
    store = embedmind.Store.open(path, embedder=HashingEmbedder(DIMS))
    store.remember("one more memory so the index has moved on", id="late")
    with caplog.at_level(logging.WARNING):
        store.close()  # no raw RuntimeError
    assert disk_fills_at_save, "the index save never ran"
    assert "not saved" in caplog.text
    assert _temporaries(tmpfs) == []
    disk_fills_at_save[0].unlink()
    with _reopen_elsewhere(path, tmp_path / "copy") as copy:
        assert copy.get("late") is not None
        ids_plus = ids
        assert copy.stats().live == COUNT + 2
        assert copy.recall("memory 7 about topic 7", k=1, mode="vector").ids == [ids_plus[7]]


def test_redact_on_a_full_disk_returns_the_committed_change(
    tmpfs: Path, disk_fills_at_save: list[Path], tmp_path: Path
) -> None:
    path = tmpfs / "m.mind"
    ids = _populate(path)
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        fixed = store.redact("secret", "the api key was removed")  # no raw RuntimeError
        assert disk_fills_at_save, "the index save never ran"
        assert fixed.content == "the api key was removed"
        assert _temporaries(tmpfs) == []
        # Still usable: reads and a vector recall go on (the index reloads).
        assert store.recall("api key removed", k=1, mode="vector").ids == ["secret"]
    disk_fills_at_save[0].unlink()
    with _reopen_elsewhere(path, tmp_path / "copy") as copy:
        _check_intact(copy, ids)
        assert copy.get("secret").content == "the api key was removed"  # type: ignore[union-attr]


def test_vacuum_on_a_full_disk_still_returns_its_report(
    tmpfs: Path, disk_fills_at_save: list[Path], tmp_path: Path
) -> None:
    path = tmpfs / "m.mind"
    ids = _populate(path)
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        store.forget(ids[0])
        report = store.vacuum()  # no raw RuntimeError
        assert disk_fills_at_save, "the index save never ran"
        assert report.removed == 1
        assert _temporaries(tmpfs) == []
    disk_fills_at_save[0].unlink()
    with _reopen_elsewhere(path, tmp_path / "copy") as copy:
        assert copy.stats().live == COUNT
        assert copy.recall("memory 7 about topic 7", k=1, mode="vector").ids == [ids[7]]


def test_any_failure_of_the_writer_removes_the_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "x.mind-vectors"

    def fails(temp: str) -> None:
        Path(temp).write_bytes(b"partial" * 1000)
        raise RuntimeError("Failed to serialize into stream")

    with pytest.raises(embedmind.StorageError, match="Failed to serialize"):
        fileio.write_atomically(str(target), fails)
    assert list(tmp_path.iterdir()) == []
