"""``embedmind doctor --verify`` scans the whole store; ``--json`` prints JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

import apsw
import pytest

import embedmind
from embedmind.cli import doctor
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.verification import verify

CONTENT = "Dana's locker code is written in the red notebook"


def _store(path: Path) -> list[str]:
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        ids = [r.id for r in store.remember_many([f"plain note {i}" for i in range(2_500)])]
        store.remember(CONTENT, id="dana")
        store.remember("Eve likes jazz", id="eve")
        store.forget("eve")  # a forgotten row is scanned too: its content stays until vacuum
    return ids


def _damage(path: Path, memory_id: str, raw: bytes) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("UPDATE memories SET content = CAST(? AS TEXT) WHERE id = ?", (raw, memory_id))
    conn.close()


def _run(**kwargs: object) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = doctor.run(lines.append, **kwargs)  # type: ignore[arg-type]
    return code, lines


def test_a_sound_store_verifies(tmp_path: Path) -> None:
    path = tmp_path / "ok.mind"
    _store(path)
    code, lines = _run(store=str(path), verify=True, as_json=False)
    assert code == 0, lines
    assert "rows        2502 scanned, 0 damaged" in lines
    assert "verify      ok" in lines
    assert "index       memory-vectors: ok" in lines


def test_damaged_rows_are_listed_by_id_with_a_non_zero_exit(tmp_path: Path) -> None:
    path = tmp_path / "bad.mind"
    ids = _store(path)
    _damage(path, "dana", CONTENT.encode().replace(b"red", b"r\xc3d"))  # not UTF-8
    _damage(path, ids[2_000], b"plain note 2001")  # valid, off its fingerprint
    _damage(path, "eve", b"Eve likes j\xffzz")
    code, lines = _run(store=str(path), verify=True, as_json=False)
    assert code == doctor.EXIT_PROBLEMS
    damaged = sorted(line.split()[1].rstrip(":") for line in lines if line.startswith("damaged"))
    assert damaged == sorted(["dana", ids[2_000], "eve"])
    assert any("content no longer matches its fingerprint" in line for line in lines)
    assert any("not valid UTF-8: content" in line for line in lines)
    assert "verify      PROBLEMS FOUND" in lines


def test_json_output_is_one_parseable_document(tmp_path: Path) -> None:
    path = tmp_path / "j.mind"
    _store(path)
    _damage(path, "dana", b"\xff\xfe")
    code, lines = _run(store=str(path), verify=True, as_json=True)
    assert code == doctor.EXIT_PROBLEMS
    assert len(lines) == 1
    document = json.loads(lines[0])
    assert document["ok"] is False
    assert document["verify"]["damaged"] == [{"id": "dana", "reason": "not valid UTF-8: content"}]
    assert document["verify"]["integrity"] == ["ok"]
    assert {"name": "python", "value": document["environment"][0]["value"]} in (
        document["environment"]
    )


def test_json_without_verify_prints_json_not_text() -> None:
    code, lines = _run(store=None, verify=False, as_json=True)
    assert len(lines) == 1
    document = json.loads(lines[0])
    assert document["verify"] is None
    assert code == (0 if not document["problems"] else doctor.EXIT_PROBLEMS)


def test_verify_never_creates_a_store_and_needs_one(tmp_path: Path) -> None:
    missing = tmp_path / "typo.mind"
    code, lines = _run(store=str(missing), verify=True, as_json=False)
    assert code == doctor.EXIT_NOT_FOUND
    assert any("does not exist" in line for line in lines)
    assert not os.path.exists(missing)
    code, lines = _run(store=None, verify=True, as_json=False)
    assert code == doctor.EXIT_INVALID
    assert any("--store" in line for line in lines)


@pytest.mark.parametrize("kind", ["stale", "fifo"])
def test_index_files_that_would_be_rebuilt_are_noted_not_failed(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "i.mind"
    _store(path)
    index = Path(f"{path}-vectors")
    index.unlink()
    if kind == "fifo":
        os.mkfifo(index)
    else:
        index.write_bytes(b"not an index")
    with embedmind.Store.open(path, embedder=None) as store:
        report = verify(store)
    assert report.ok
    states = {f.name: f.state for f in report.index_files}
    expected = "not a regular file" if kind == "fifo" else "stale or damaged"
    assert states["memory-vectors"] == expected
    assert states["fragments"] == "unregistered"
