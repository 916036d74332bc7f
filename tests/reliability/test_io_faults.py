"""R4: the engine's own file I/O fails (EIO, ENOSPC, short writes): typed errors, nothing corrupted."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

import embedmind
from embedmind.backend.sqlite import fileio
from embedmind.embedders.hashing import HashingEmbedder


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC])
@pytest.mark.parametrize("step", ["fsync", "replace", "short-write"])
def test_a_failed_index_save_keeps_the_previous_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    code: int,
    step: str,
) -> None:
    path = tmp_path / "f.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"first batch {i}" for i in range(50)])
    index_file = Path(str(path) + "-vectors")
    before = index_file.read_bytes()

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(code, "injected fault")

    store = embedmind.Store.open(path, embedder=HashingEmbedder(32))
    store.remember_many([f"second batch {i} unicorn" for i in range(50)])
    if step == "fsync":
        monkeypatch.setattr(fileio.os, "fsync", fail)
    elif step == "replace":
        monkeypatch.setattr(fileio.os, "replace", fail)
    else:  # the index writes only part of its bytes, then the disk is full

        def short_write(temp: str) -> None:
            Path(temp).write_bytes(Path(temp).read_bytes()[:100])
            fail()

        monkeypatch.setattr(fileio, "_save_hook", short_write)
    with caplog.at_level(logging.WARNING):
        store.close()  # the index is a cache: a failed save is logged, the close completes
    assert any("index not saved" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    assert index_file.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as reopened:  # space is back
        assert reopened.stats().live == 100
        assert "unicorn" in reopened.recall("unicorn", k=1, mode="vector")[0].content


def test_write_atomically_raises_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")

    def no_space(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", no_space)
    with pytest.raises(embedmind.StorageError, match="No space"):
        fileio.write_atomically(str(target), lambda temp: Path(temp).write_bytes(b"new"))
    assert target.read_bytes() == b"old"


def test_a_save_removes_temporary_files_left_by_a_killed_save(tmp_path: Path) -> None:
    path = tmp_path / "t.mind"
    leftover = tmp_path / "t.mind-vectors.k1ll3d.tmp"  # what a save killed before its rename leaves
    leftover.write_bytes(b"half an index")
    unrelated = tmp_path / "t.mind-other.x.tmp"
    unrelated.write_bytes(b"not ours")
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember("a memory with a vector")
    assert not leftover.exists()
    assert unrelated.exists()
    assert Path(f"{path}-vectors").is_file()


def test_a_full_database_is_a_storage_error_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "full.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember("before the disk filled up", id="before")
        with store._db.connections.connection() as conn:  # the file may not grow any more
            pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
            conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(embedmind.StorageError, match="nothing written"):
            store.remember_many([f"large memory {i} " + "words " * 2_000 for i in range(50)])
        assert [m.id for m in store.iter()] == ["before"]
        with store._db.connections.connection() as conn:  # space is back
            conn.execute("PRAGMA max_page_count = 1073741823")
        store.remember("after the space came back", id="after")
    with embedmind.Store.open(path, embedder=None) as store:
        assert sorted(m.id for m in store.iter()) == ["after", "before"]
