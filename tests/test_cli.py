"""The ``embedmind`` command line: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from embedmind.cli.main import EXIT_CONFLICT, EXIT_INVALID, EXIT_NOT_FOUND, EXIT_OK, main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_remember_recall_get_forget_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "cli.mind")
    code, out, _ = run(capsys, "--store", store, "--json", "remember", "Alice likes green tea",
                       "--id", "m1", "--metadata", '{"topic": "drinks"}', "--tag", "pref")  # fmt: skip
    assert code == EXIT_OK and json.loads(out)["id"] == "m1"
    code, out, _ = run(capsys, "--store", store, "--json", "recall", "green tea", "--mode", "text")
    hits = json.loads(out)["hits"]
    assert code == EXIT_OK and [h["memory"]["id"] for h in hits] == ["m1"]
    code, out, _ = run(capsys, "--store", store, "recall", "tea", "--where", '{"topic": "drinks"}')
    assert code == EXIT_OK and "m1" in out and "Alice likes green tea" in out
    code, out, _ = run(capsys, "--store", store, "get", "m1")
    assert code == EXIT_OK and "Alice likes green tea" in out
    code, out, _ = run(capsys, "--store", store, "--json", "stats")
    assert code == EXIT_OK and json.loads(out)["live"] == 1
    code, out, _ = run(capsys, "--store", store, "forget", "m1")
    assert code == EXIT_OK and "forgot m1" in out
    code, _, _ = run(capsys, "--store", store, "forget", "m1")
    assert code == EXIT_NOT_FOUND
    code, _, err = run(capsys, "--store", store, "get", "m1")
    assert code == EXIT_NOT_FOUND


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "cli.mind")
    for argv in (
        ["remember", "x", "--metadata", "{not json"],
        ["remember", "x", "--namespace", "a//b"],
        ["recall", "x", "--where", '{"a": {"$nope": 1}}'],
        ["recall", "x", "-k", "0"],
    ):
        code, out, err = run(capsys, "--store", store, *argv)
        assert code == EXIT_INVALID, argv
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_conflict_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "cli.mind")
    assert run(capsys, "--store", store, "remember", "x", "--id", "a", "--namespace", "n1")[0] == 0
    code, _, err = run(capsys, "--store", store, "remember", "y", "--id", "a", "--namespace", "n2")
    assert code == EXIT_CONFLICT and "n1" in err


def test_demo_runs_as_a_console_script(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("embedmind")
    result = subprocess.run(
        [str(exe), "demo"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "beagle named Biscuit" in result.stdout
    assert "cello" in result.stdout
    assert not list(tmp_path.iterdir()), "demo must not leave files behind"


def test_vacuum_export_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, copy = str(tmp_path / "a.mind"), str(tmp_path / "b.mind")
    dump = str(tmp_path / "dump.jsonl")
    run(capsys, "--store", store, "remember", "keep me", "--id", "k")
    run(capsys, "--store", store, "remember", "drop me", "--id", "d")
    run(capsys, "--store", store, "forget", "d")
    code, out, _ = run(capsys, "--store", store, "--json", "vacuum")
    assert code == EXIT_OK and json.loads(out)["removed"] == 1
    code, out, _ = run(capsys, "--store", store, "export", dump, "--vectors")
    assert code == EXIT_OK and "exported 1" in out
    code, out, _ = run(capsys, "--store", copy, "import", dump)
    assert code == EXIT_OK and "imported 1" in out
    code, out, _ = run(capsys, "--store", copy, "get", "k")
    assert code == EXIT_OK and "keep me" in out
