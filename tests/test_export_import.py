"""Export and import as JSON Lines: a round trip is exact and idempotent."""

from __future__ import annotations

import datetime as dt
import errno
import io
import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import transfer

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


def _populate(store: embedmind.Store) -> None:
    a = store.remember("alice lives in lisbon", namespace="u/alice", metadata={"k": [1, {"x": None}]},
                       tags=["home"], entities=["alice", "lisbon"], now=T0, session_id="s1", agent="cli")  # fmt: skip
    store.remember("alice lives in porto", namespace="u/alice", supersedes=[a.id],
                   now=T0 + dt.timedelta(days=3), ttl=dt.timedelta(days=90))  # fmt: skip
    c = store.remember("the lisbon flat had a blue door", namespace="u/alice",
                       relations=[("about", a.id)], confidence=0.7, now=T0)  # fmt: skip
    store.reinforce([c.id], now=T0 + dt.timedelta(days=1))
    store.mark_contradicted(c.id, by=a.id, confidence=0.2, now=T0 + dt.timedelta(days=2))
    store.remember_many([f"filler memory {i}" for i in range(30)], now=T0)
    store.forget(store.recall("filler", k=1, mode="text").ids[0])
    store.link_namespaces("u/alice", "shared", tiers=["semantic"], note="n",
                          created_at=T0 + dt.timedelta(hours=5))  # fmt: skip


@pytest.mark.parametrize("vectors", [False, True])
def test_export_import_export_is_identical(tmp_path: Path, vectors: bool) -> None:
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    with embedmind.Store.open(tmp_path / "a.mind", embedder=HashingEmbedder(32)) as store:
        _populate(store)
        written = store.export_jsonl(first, include_vectors=vectors)
    assert written == 32
    with embedmind.Store.open(tmp_path / "b.mind", embedder=HashingEmbedder(32)) as copy:
        assert copy.import_jsonl(first) == 32
        copy.export_jsonl(second, include_vectors=vectors)
        assert copy.import_jsonl(first) == 32  # idempotent
        third = tmp_path / "three.jsonl"
        copy.export_jsonl(third, include_vectors=vectors)
        old = copy.recall("alice lives", mode="text", as_of=T0 + dt.timedelta(days=1))
        assert [h.content for h in old] == ["alice lives in lisbon"]
        now = T0 + dt.timedelta(days=10)
        assert [h.content for h in copy.recall("alice lives", mode="text", now=now)] == [
            "alice lives in porto"
        ]
        assert copy.links("u/alice")[0].created_at == T0 + dt.timedelta(hours=5)
    assert first.read_text() == second.read_text() == third.read_text()


def test_import_refuses_another_model_unless_reembedding(tmp_path: Path) -> None:
    dump = tmp_path / "d.jsonl"
    with embedmind.Store.open(tmp_path / "a.mind", embedder=HashingEmbedder(32)) as store:
        store.remember("red apples")
        store.export_jsonl(dump, include_vectors=True)
    with embedmind.Store.open(tmp_path / "b.mind", embedder=HashingEmbedder(64)) as other:
        with pytest.raises(embedmind.EmbedderMismatchError):
            other.import_jsonl(dump)
        assert other.stats().live == 0
        assert other.import_jsonl(dump, reembed=True) == 1
        assert other.recall("apples", mode="vector").ids
    with pytest.raises(embedmind.InvalidInputError):
        embedmind.Store.open(":memory:", embedder=None).import_jsonl(tmp_path / "a.mind-write.lock")


# -- export: the file, its mode, its path ----------------------------------------------------


def _three(tmp_path: Path) -> embedmind.Store:
    store = embedmind.Store.open(tmp_path / "s.mind", embedder=None)
    store.remember_many([f"note {i}" for i in range(3)])
    return store


def test_export_creates_a_private_file_whatever_the_umask(tmp_path: Path) -> None:
    # The file holds the whole store, so it is as private as the store's own files.
    target = tmp_path / "out.jsonl"
    old = os.umask(0)
    try:
        with _three(tmp_path) as store:
            assert store.export_jsonl(target) == 3
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert len(target.read_text().splitlines()) == 4


def test_export_replaces_an_existing_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("an older export\n")
    target.chmod(0o644)
    with _three(tmp_path) as store:
        store.export_jsonl(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text().startswith('{"type":"header"')
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("s.mind")) == [
        "out.jsonl"
    ]


def test_a_failed_export_leaves_the_previous_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("the previous backup\n")
    calls = 0
    original = transfer._export_memory

    def disk_full_at_the_second(*args: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(*args)

    monkeypatch.setattr(transfer, "_export_memory", disk_full_at_the_second)
    with _three(tmp_path) as store, pytest.raises(OSError, match="No space"):
        store.export_jsonl(target)
    assert target.read_text() == "the previous backup\n"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("s.mind")) == [
        "out.jsonl"
    ]


def test_export_through_a_symlink_writes_the_file_it_names(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "backup.jsonl"
    real.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    with _three(tmp_path) as store:
        store.export_jsonl(link)
    assert link.is_symlink()
    assert real.read_text().startswith('{"type":"header"')


def test_export_to_a_pipe_streams_into_it(tmp_path: Path) -> None:
    # /dev/stdout and named pipes are written directly: there is no file to replace.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with _three(tmp_path) as store:
        assert store.export_jsonl(fifo) == 3
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got[0].count("\n") == 4


def test_export_accepts_str_bytes_and_pathlike_paths(tmp_path: Path) -> None:
    with _three(tmp_path) as store:
        for target in (str(tmp_path / "a.jsonl"), os.fsencode(tmp_path / "b.jsonl")):
            assert store.export_jsonl(target) == 3  # type: ignore[arg-type]
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()


BAD_PATHS: list[Any] = ["", "a\x00b", b"a\x00b", "\ud800.jsonl", 42, None, 1.5]


@pytest.mark.parametrize("path", BAD_PATHS, ids=repr)
def test_bad_paths_are_invalid_input(tmp_path: Path, path: Any) -> None:
    with _three(tmp_path) as store:
        with pytest.raises(embedmind.InvalidInputError) as exported:
            store.export_jsonl(path)
        assert exported.value.field == "destination"
        with pytest.raises(embedmind.InvalidInputError) as imported:
            store.import_jsonl(path)
        assert imported.value.field == "source"
        assert store.stats().live == 3


def test_a_directory_is_invalid_input_and_os_errors_stay_os_errors(tmp_path: Path) -> None:
    with _three(tmp_path) as store:
        with pytest.raises(embedmind.InvalidInputError, match="directory"):
            store.export_jsonl(tmp_path)
        with pytest.raises(embedmind.InvalidInputError, match="directory"):
            store.import_jsonl(tmp_path)
        with pytest.raises(FileNotFoundError):
            store.export_jsonl(tmp_path / "missing" / "out.jsonl")
        with pytest.raises(FileNotFoundError):
            store.import_jsonl(tmp_path / "missing.jsonl")


def test_a_binary_stream_is_invalid_input(tmp_path: Path) -> None:
    with _three(tmp_path) as store:
        with pytest.raises(embedmind.InvalidInputError):
            store.export_jsonl(io.BytesIO())  # type: ignore[arg-type]
        with pytest.raises(embedmind.InvalidInputError):
            store.import_jsonl(io.BytesIO(b'{"type":"header"}\n'))  # type: ignore[arg-type]


# -- export: one snapshot --------------------------------------------------------------------


class _WritesDuringExport(io.StringIO):
    """A destination that lets another thread change the store after the first memory line."""

    def __init__(self, change: Callable[[], None]) -> None:
        super().__init__()
        self.change: Callable[[], None] | None = change

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.change is not None and text.startswith('{"type":"memory"'):
            worker = threading.Thread(target=self.change)
            self.change = None
            worker.start()
            worker.join(timeout=30)
            assert not worker.is_alive()
        return written


def test_export_is_one_snapshot_while_writers_go_on(tmp_path: Path) -> None:
    # More than one page of memories: a paged export would see the later pages changed.
    path = tmp_path / "s.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many([embedmind.Draft(f"note {i}", id=f"m{i:04d}") for i in range(1200)])

        def change() -> None:
            store.remember("rewritten", id="m1100")
            store.forget("m1199")
            store.remember("born during the export", id="late")
            store.link_namespaces("default", "elsewhere")

        out = _WritesDuringExport(change)
        assert store.export_jsonl(out) == 1200
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        memories = {item["id"]: item["content"] for item in lines if item["type"] == "memory"}
        assert memories["m1100"] == "note 1100"
        assert "m1199" in memories and "late" not in memories
        assert not [item for item in lines if item["type"] == "link"]
        assert store.get("m1100").content == "rewritten"  # the writer was not blocked


# -- import: sources, validation before any write ---------------------------------------------


def _dump_of_three(tmp_path: Path) -> str:
    out = io.StringIO()
    with _three(tmp_path) as store:
        store.export_jsonl(out)
    return out.getvalue()


class _Unseekable(io.StringIO):
    def seekable(self) -> bool:
        return False

    def seek(self, *args: Any) -> int:
        raise io.UnsupportedOperation("seek")


def test_import_reads_unseekable_streams_and_blank_lines(tmp_path: Path) -> None:
    text = _dump_of_three(tmp_path)
    spaced = text.replace("\n", "\n\n", 2)
    with embedmind.Store.open(":memory:", embedder=None) as target:
        assert target.import_jsonl(_Unseekable(spaced)) == 3
        assert target.import_jsonl(io.StringIO(spaced)) == 3
        assert target.stats().live == 3


def test_import_reads_a_named_pipe(tmp_path: Path) -> None:
    # `embedmind import /dev/stdin` with a pipe on stdin: the path cannot seek.
    text = _dump_of_three(tmp_path).replace("\n", "\r\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(text.encode()))
    writer.start()
    with embedmind.Store.open(":memory:", embedder=None) as target:
        assert target.import_jsonl(fifo) == 3
        assert target.stats().live == 3
    writer.join(timeout=30)


def test_import_of_a_stream_starts_where_the_stream_is(tmp_path: Path) -> None:
    text = _dump_of_three(tmp_path)
    stream = io.StringIO("a preamble the caller already read\n" + text)
    stream.readline()
    with embedmind.Store.open(":memory:", embedder=None) as target:
        assert target.import_jsonl(stream) == 3


def test_a_bad_line_after_the_first_batch_writes_nothing(tmp_path: Path) -> None:
    out = io.StringIO()
    with embedmind.Store.open(tmp_path / "s.mind", embedder=None) as store:
        store.remember_many([f"note {i}" for i in range(1100)])
        store.export_jsonl(out)
    lines = out.getvalue().splitlines(keepends=True)
    lines[1050] = lines[1050].replace('"tier":"semantic"', '"tier":"eternal"')
    with embedmind.Store.open(":memory:", embedder=None) as target:
        with pytest.raises(embedmind.InvalidInputError) as info:
            target.import_jsonl(io.StringIO("".join(lines)))
        assert info.value.field == "line 1051: tier"
        assert "line 1051" in str(info.value) and "eternal" in str(info.value)
        assert target.stats().live == 0


def test_a_line_that_is_not_json_names_its_number(tmp_path: Path) -> None:
    lines = _dump_of_three(tmp_path).splitlines(keepends=True)
    lines.insert(3, "\n")
    lines.insert(3, "{truncated\n")
    with embedmind.Store.open(":memory:", embedder=None) as target:
        with pytest.raises(embedmind.InvalidInputError, match="line 4") as info:
            target.import_jsonl(io.StringIO("".join(lines)))
        assert info.value.field == "line 4"
        assert target.stats().live == 0


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    data = _dump_of_three(tmp_path).encode()
    bad = tmp_path / "bad.jsonl"
    first, rest = data.split(b"\n", 1)
    bad.write_bytes(first + b"\n" + rest.replace(b"note 1", b"note \xff1"))
    with embedmind.Store.open(":memory:", embedder=None) as target:
        with pytest.raises(embedmind.InvalidInputError) as info:
            target.import_jsonl(bad)
        assert info.value.field == "line 3"
        assert target.stats().live == 0
